/**
 * The broker's HTTP API as queenctl calls it. Every call names its route by the same key the
 * server's schemas use (`'GET /api/v1/dlq'`), so the answer is typed with the server's wire type
 * (`Answer<K>` from src/http/schemas/types.ts) and a renamed or reshaped route breaks this
 * build (docs/cli.md#http). Calls go through node:http(s) with a keep-alive agent: measured on
 * loopback, a 100-message push costs the client about 0.4 ms of CPU this way against 1.6 ms with
 * the built-in fetch, and `queenctl push` shares the machine with the broker it feeds.
 *
 * Answers are parsed keeping client numbers exact (src/util/json.ts), so a payload's
 * `12345678901234567890` is printed digit for digit.
 *
 * Errors (docs/cli.md#exit-codes): unreachable or 5xx → exit 2; 401/403 → exit 3; any other
 * refusal → exit 2, as in the reference CLI (queen-mq/queen: clients/client-cli/cmd/root.go maps
 * server errors to CodeServer). Messages carry the broker's `code` and its explanation (`reason`,
 * `message` or `error`: {@link readFailure}), never the token.
 * An answer that is not JSON (a web server's HTML page) is one line naming its status and
 * content-type ({@link notQueen}), exit 2 (3 for a 401/403), never the page itself.
 */
import http from 'node:http';
import https from 'node:https';
import type { Answer, JsonRoute, RouteKey } from '../http/schemas/types.js';
import { parseClientJson, stringifyClientJson } from '../util/json.js';
import { authError, serverError } from './errors.js';

export interface CallOptions {
  /** Values for the route's `:name` segments and its `*` tail (key `*`); URL-encoded here. */
  params?: Record<string, string>;
  /** Query string; undefined and '' values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** A JSON body (serialised keeping RawJson numbers exact). */
  body?: unknown;
  /** A body already serialised as JSON text (push's hot path). */
  rawBody?: string;
  /** Per-call timeout in ms (default: the client's). */
  timeoutMs?: number;
  /** Aborts the call (Ctrl-C on a long-poll). */
  signal?: AbortSignal;
  /** A 404 answers undefined instead of throwing (existence checks). */
  missingOk?: boolean;
}

/**
 * An HTTP refusal, with the broker's envelope: `error` and `code` as sent, and `text`, the human
 * explanation to print (see {@link readFailure}).
 */
export interface HttpFailure { status: number; code: string; error: string; text: string }

/** A finished exchange: status, content-type ('' when absent) and the whole answer body as text. */
export interface Reply { status: number; body: string; contentType?: string }

export class Api {
  private readonly agent: http.Agent;

  /**
   * @param server base URL without a trailing slash
   * @param token bearer token ('' for none); sent as `Authorization: Bearer`, never printed
   * @param timeoutMs default per-call timeout in ms
   * @param insecure accept any TLS certificate (`--insecure`)
   */
  constructor(readonly server: string, private readonly token: string, readonly timeoutMs = 30_000, insecure = false) {
    this.agent = server.startsWith('https:') ? new https.Agent({ keepAlive: true, rejectUnauthorized: !insecure }) : new http.Agent({ keepAlive: true });
  }

  /** The full URL of a route with its parameters and query filled in. */
  url(route: string, opts: CallOptions = {}): string {
    const pathTemplate = route.slice(route.indexOf(' ') + 1);
    const p = opts.params ?? {};
    let path = pathTemplate.replace(/:([A-Za-z]+)/g, (_, name: string) => {
      const v = p[name];
      if (v === undefined) throw new Error(`missing route parameter ${name} for ${route}`);
      return encodeURIComponent(v);
    });
    if (path.endsWith('*')) path = path.slice(0, -1) + (p['*'] ?? '').split('/').map(encodeURIComponent).join('/');
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') q.set(k, String(v));
    const qs = q.toString();
    return `${this.server}${path}${qs ? `?${qs}` : ''}`;
  }

  /**
   * Calls a JSON route.
   * @returns the parsed answer, or undefined for a 204 (an empty pop)
   * @throws CliError exit 2 when the answer is not JSON (not a Queen server: {@link notQueen})
   * @throws CliError exit 2 (unreachable, 5xx, other refusals) or 3 (401, 403)
   */
  async call<K extends JsonRoute>(route: K, opts: CallOptions = {}): Promise<Answer<K> | undefined> {
    const res = await this.send(route, opts);
    if (res.status === 204 || res.status === 404 || res.body === '') return undefined;
    return parseAnswer(res) as Answer<K>;
  }

  /**
   * Calls a route whose answer has no typed schema (neutral analytics documents): parsed JSON.
   * @throws CliError exit 2 when the answer is not JSON ({@link notQueen}), as {@link call}
   */
  async json(route: RouteKey, opts: CallOptions = {}): Promise<unknown> {
    const res = await this.send(route, opts);
    return res.status === 404 || res.body === '' ? undefined : parseAnswer(res);
  }

  /** Calls a route whose answer is text (Prometheus metrics). */
  async text(route: RouteKey, opts: CallOptions = {}): Promise<string> {
    return (await this.send(route, opts)).body;
  }

  /** Sends the request and turns refusals into CliErrors (a 404 passes with `missingOk`). */
  async send(route: string, opts: CallOptions = {}): Promise<Reply> {
    const method = route.slice(0, route.indexOf(' '));
    const headers: Record<string, string | number> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body: string | undefined = opts.rawBody;
    if (body === undefined && opts.body !== undefined) body = stringifyClientJson(opts.body);
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
    let res: Reply;
    try {
      res = await this.exchange(this.url(route, opts), method, headers, body, signal);
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      const err = e as NodeJS.ErrnoException;
      const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : err.code ?? err.message;
      throw serverError(`server unreachable (${this.server}): ${why}`);
    }
    if (res.status === 404 && opts.missingOk && (res.body === '' || isJson(res.body))) return res;
    if (res.status >= 400) throw failure(res);
    return res;
  }

  private exchange(url: string, method: string, headers: Record<string, string | number>, body: string | undefined, signal: AbortSignal): Promise<Reply> {
    const lib = url.startsWith('https:') ? https : http;
    return new Promise((resolve, reject) => {
      const req = lib.request(url, { method, headers, agent: this.agent, signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), contentType: res.headers['content-type'] ?? '' }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Closes idle keep-alive sockets (so the process can exit). */
  close(): void {
    this.agent.destroy();
  }
}

/** Whether `text` is one JSON value. */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The one-line message for an answer that is not JSON, so not from a Queen broker (an HTML page
 * of a web server or a proxy): its status, its content-type and the start of its body, whitespace
 * folded and control characters replaced, at most 60 characters; never the whole page.
 */
export function notQueen(res: Reply): string {
  // eslint-disable-next-line no-control-regex
  const folded = res.body.replace(/\s+/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').trim();
  const head = folded.length > 60 ? `${folded.slice(0, 60)}…` : folded;
  return `not a Queen JSON answer: HTTP ${res.status}, content-type ${res.contentType || '(none)'}, body "${head}"`;
}

/** A successful answer parsed as JSON (client numbers exact); exit 2 naming it when it is not JSON. */
function parseAnswer(res: Reply): unknown {
  try {
    return parseClientJson(res.body);
  } catch {
    throw serverError(notQueen(res));
  }
}

/** Reads a refusal's envelope into a CliError of the right exit code. */
function failure(res: Reply): Error {
  const auth = res.status === 401 || res.status === 403;
  if (res.body.trim() !== '' && !isJson(res.body)) return auth ? authError(notQueen(res)) : serverError(notQueen(res));
  const f = readFailure(res);
  const text = `HTTP ${f.status}${f.code ? ` ${f.code}` : ''}${f.text ? `: ${f.text}` : ''}`;
  return auth ? authError(text) : serverError(text);
}

/** A bare identifier (`kv_bad_request`, `bad_request`): a code, not an explanation. */
const TOKEN = /^[A-Za-z0-9_.:-]+$/;

/**
 * The envelope of a refusal. `text` is the explanation to print: the first of `reason`, `message`
 * and `error` that is a sentence rather than a bare code, so the KV and lock routes'
 * `{"error":"kv_bad_request","code":…,"reason":"ns must match …"}` shows its reason while the
 * transaction route's `{"error":"<sentence>",…,"reason":"bad_request"}` keeps its error; else
 * `error`, else `reason`. A non-JSON body gives its first 200 characters as `error` and `text`.
 */
export function readFailure(res: Reply): HttpFailure {
  const body = res.body;
  try {
    const o = JSON.parse(body) as Record<string, unknown>;
    const str = (k: string): string => (typeof o?.[k] === 'string' ? o[k] : '');
    const error = str('error');
    const text = [str('reason'), str('message'), error].find((t) => t !== '' && !TOKEN.test(t)) ?? (error || str('reason'));
    return { status: res.status, code: str('code'), error, text };
  } catch {
    return { status: res.status, code: '', error: body.slice(0, 200), text: body.slice(0, 200) };
  }
}
