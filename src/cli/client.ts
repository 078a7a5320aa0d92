/**
 * The broker's HTTP API as queenctl calls it. Every call names its route by the same key the
 * server's schemas use (`'GET /api/v1/dlq'`), so the answer is typed with the server's wire type
 * (`Answer<K>` from src/http/schemas/types.ts) and a renamed or reshaped route breaks this
 * build (docs/cli.md#http). Node's built-in fetch keeps connections alive between calls.
 *
 * Answers are parsed keeping client numbers exact (src/util/json.ts), so a payload's
 * `12345678901234567890` is printed digit for digit.
 *
 * Errors (docs/cli.md#exit-codes): unreachable or 5xx → exit 2; 401/403 → exit 3; any other
 * refusal → exit 2, as in the reference CLI (queen-mq/queen: clients/client-cli/cmd/root.go maps
 * server errors to CodeServer). Messages carry the broker's `code` and `error`, never the token.
 */
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

/** An HTTP refusal, with the broker's envelope. */
export interface HttpFailure { status: number; code: string; error: string }

export class Api {
  /**
   * @param server base URL without a trailing slash
   * @param token bearer token ('' for none); sent as `Authorization: Bearer`, never printed
   * @param timeoutMs default per-call timeout in ms
   */
  constructor(readonly server: string, private readonly token: string, readonly timeoutMs = 30_000) {}

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
   * @throws CliError exit 2 (unreachable, 5xx, other refusals) or 3 (401, 403)
   */
  async call<K extends JsonRoute>(route: K, opts: CallOptions = {}): Promise<Answer<K> | undefined> {
    const res = await this.send(route, opts);
    if (res.status === 204 || res.status === 404) return undefined;
    const text = await res.text();
    if (text === '') return undefined;
    return parseClientJson(text) as Answer<K>;
  }

  /** Calls a route whose answer has no typed schema (neutral analytics documents): parsed JSON. */
  async json(route: RouteKey, opts: CallOptions = {}): Promise<unknown> {
    const res = await this.send(route, opts);
    const text = await res.text();
    return text === '' ? undefined : parseClientJson(text);
  }

  /** Calls a route whose answer is text (Prometheus metrics). */
  async text(route: RouteKey, opts: CallOptions = {}): Promise<string> {
    const res = await this.send(route, opts);
    return res.text();
  }

  /** Sends the request and turns refusals into CliErrors; the answer body is left unread on success. */
  async send(route: string, opts: CallOptions = {}): Promise<Response> {
    const method = route.slice(0, route.indexOf(' '));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body: string | undefined = opts.rawBody;
    if (body === undefined && opts.body !== undefined) body = stringifyClientJson(opts.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? this.timeoutMs);
    const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
    let res: Response;
    try {
      res = await fetch(this.url(route, opts), { method, headers, body, signal });
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      const err = e as Error & { cause?: { code?: string; message?: string } };
      const why = err.name === 'TimeoutError' ? `no answer within ${opts.timeoutMs ?? this.timeoutMs} ms` : err.cause?.code ?? err.cause?.message ?? err.message;
      throw serverError(`server unreachable (${this.server}): ${why}`);
    }
    if (res.status === 404 && opts.missingOk) {
      await res.body?.cancel();
      return res;
    }
    if (res.status >= 400) throw await failure(res);
    return res;
  }
}

/** Reads a refusal's envelope into a CliError of the right exit code. */
async function failure(res: Response): Promise<Error> {
  const f = await readFailure(res);
  const text = `HTTP ${f.status}${f.code ? ` ${f.code}` : ''}${f.error ? `: ${f.error}` : ''}`;
  return res.status === 401 || res.status === 403 ? authError(text) : serverError(text);
}

/** The `{error, code}` of a refusal (tolerating a non-JSON body). */
export async function readFailure(res: Response): Promise<HttpFailure> {
  const text = await res.text().catch(() => '');
  try {
    const o = JSON.parse(text) as { error?: unknown; code?: unknown };
    return { status: res.status, code: typeof o.code === 'string' ? o.code : '', error: typeof o.error === 'string' ? o.error : '' };
  } catch {
    return { status: res.status, code: '', error: text.slice(0, 200) };
  }
}
