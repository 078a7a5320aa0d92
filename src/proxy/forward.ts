/**
 * Hands a data-plane request to the broker router in process (docs/proxy.md#forwarding; public
 * reference `proxy/src/gateway.rs`): no socket, the same request and response objects. Before
 * that it removes what a client must not be able to say to the broker (hop-by-hop headers,
 * `x-queen-tenant`, `x-queen-raft-token`, `x-queen-eph-fwd`, `x-queen-cp-token`, `Authorization`,
 * cookies), sets the cluster's tenant as `x-queen-tenant` and under {@link PROXY_TENANT}, and sets
 * `x-queen-request-id`.
 */
import { randomUUID } from 'node:crypto';
import inject from 'light-my-request';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { UPSTREAM_ABORT, UpstreamAbort } from '../model/in-process.js';
import { PROXY_TENANT } from '../model/tenancy.js';
import type { Clock } from '../util/clock.js';

/** The broker router's entry point (Fastify's `routing` of the broker app, given by main.ts). */
export type BrokerRouter = (req: IncomingMessage, res: ServerResponse) => void;

/** Request headers the proxy never passes on. */
export const STRIPPED_HEADERS = [
  'x-queen-tenant', 'x-queen-raft-token', 'x-queen-eph-fwd', 'x-queen-cp-token', 'authorization', 'cookie',
  'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'upgrade', 'keep-alive',
] as const;

const STRIPPED = new Set<string>(STRIPPED_HEADERS);

/**
 * Strips and stamps `req` (see the module comment) so the broker router acts for `tenant`. The
 * headers are copied into a new object without the stripped ones rather than deleted from the
 * parsed one (a `delete` turns it into a slower dictionary object for every later header read).
 */
export function prepareForBroker(req: IncomingMessage, tenant: string | undefined): void {
  const kept: IncomingHttpHeaders = {};
  const from = req.headers;
  for (const name in from) if (!STRIPPED.has(name)) kept[name] = from[name];
  if (tenant !== undefined) {
    kept['x-queen-tenant'] = tenant;
    (req as unknown as Record<symbol, unknown>)[PROXY_TENANT] = tenant;
  }
  if (kept['x-queen-request-id'] === undefined) kept['x-queen-request-id'] = randomUUID();
  req.headers = kept;
}

/** The budgets of {@link upstreamBudgetMs}, in ms. */
export interface UpstreamBudgets {
  /** A request that is not a long-poll pop (`QUEEN_PROXY_REQUEST_TIMEOUT_MS`). */
  requestTimeoutMs: number;
  /** Cap on a long-poll's own timeout (`QUEEN_PROXY_LONGPOLL_MAX_MS`). */
  longpollMaxMs: number;
  /** Added to a long-poll's timeout (`QUEEN_PROXY_LONGPOLL_MARGIN_MS`). */
  longpollMarginMs: number;
}

/** Paths of the pops that can park (`wait=true`): queue, partition, discovery, ephemeral. */
const LONG_POLL = /^\/api\/v1\/(pop(\/queue\/[^/]+(\/partition\/[^/]+)?)?|ephemeral\/pop)$/;

/** True for a `GET` of a pop route (the only routes that read the upstream-abort signal). */
export function isPop(method: string, path: string): boolean {
  return method === 'GET' && LONG_POLL.test(path);
}

/** True for a pop that may park: `GET` of a pop route with `wait=true`. */
export function isLongPoll(method: string, path: string, query: URLSearchParams): boolean {
  return isPop(method, path) && query.get('wait') === 'true';
}

/**
 * How long the broker may take to start answering `method path?query`, in ms (docs/proxy.md#forwarding):
 * a long-poll pop (`wait=true`) gets `min(its timeout or 30 s, longpollMaxMs) + longpollMarginMs`,
 * so its own timeout is never cut below the cap; any other request `requestTimeoutMs`.
 */
export function upstreamBudgetMs(method: string, path: string, query: URLSearchParams, b: UpstreamBudgets): number {
  if (!isLongPoll(method, path, query)) return b.requestTimeoutMs;
  const t = Number(query.get('timeout') ?? '');
  const own = query.get('timeout') !== null && query.get('timeout') !== '' && Number.isFinite(t) && t >= 0 ? t : 30_000;
  return Math.min(own, b.longpollMaxMs) + b.longpollMarginMs;
}

/**
 * Arms the upstream budget of one forwarded request: when `budgetMs` passes before the broker has
 * sent its status line, a pop (`pop`: true; parked or not) is aborted through {@link UPSTREAM_ABORT}
 * (it claims nothing) and the client gets `504 {"error","code":"upstream_timeout"}` with
 * `Connection: close`. An answer already started (headers sent) is left to finish. Only pops read
 * the signal, so other requests get none (one {@link UpstreamAbort} less per push or ack).
 */
export function armUpstreamBudget(req: IncomingMessage, res: ServerResponse, budgetMs: number, clock: Clock, onTimeout: () => void, pop = true): void {
  const abort = pop ? new UpstreamAbort() : undefined;
  if (abort) (req as unknown as Record<symbol, unknown>)[UPSTREAM_ABORT] = abort;
  const timer = clock.setTimer(() => {
    if (res.headersSent || res.writableEnded || res.destroyed) return;
    abort?.abort();
    onTimeout();
    const body = JSON.stringify({ error: `the broker did not answer within ${budgetMs} ms`, code: 'upstream_timeout' });
    res.writeHead(504, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  }, budgetMs);
  res.once('close', () => clock.clearTimer(timer));
}

/** A broker answer to an in-process call: status and parsed JSON body (undefined when empty or not JSON). */
export interface BrokerAnswer {
  status: number;
  body: unknown;
}

/** Calls the broker router in process as tenant `tenant` (no socket): `method url` with an optional JSON body. */
export type BrokerCall = (tenant: string, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => Promise<BrokerAnswer>;

/**
 * A {@link BrokerCall} over `router`: the request is made in memory (light-my-request, the library
 * behind Fastify's `inject`) and stamped like a forwarded one, so the router acts for `tenant`.
 */
export function brokerCaller(router: BrokerRouter): BrokerCall {
  return async (tenant, method, url, body) => {
    const r = await inject((req, res) => {
      prepareForBroker(req, tenant);
      router(req, res);
    }, { method, url, headers: { 'content-type': 'application/json' }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
    let parsed: unknown;
    try {
      parsed = r.body === '' ? undefined : JSON.parse(r.body);
    } catch {
      parsed = undefined;
    }
    return { status: r.statusCode, body: parsed };
  };
}
