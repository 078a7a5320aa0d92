import { QueenError } from '../errors.js';

/**
 * Keys the embedded proxy sets on a raw request it hands to the broker router in process
 * (src/proxy/forward.ts, docs/proxy.md#forwarding). Symbol-keyed, so no client can set them.
 */

/**
 * An {@link UpstreamAbort} the proxy aborts when the request's upstream budget runs out (it then
 * answers `504 upstream_timeout` itself). A parked long-poll listens to it and stops claiming
 * nothing, as it does when its client goes away.
 */
export const UPSTREAM_ABORT = Symbol.for('queen-ts.upstream-abort');

/**
 * The proxy's abort of one forwarded pop: a flag and its listeners, without the EventTarget an
 * `AbortSignal` is. Every pop through the proxy gets one whether or not it parks; an
 * `AbortController`, its lazily made signal and one `addEventListener` / `removeEventListener`
 * pair were the largest pop-only items of the proxy's path in a profile (bench/proxy-pop.ts; 2-7 µs
 * of broker CPU per pop of an empty queue, A/B in one run). Like an `AbortSignal`'s, a listener
 * added after the abort is not called.
 */
export class UpstreamAbort {
  /** True once {@link abort} was called. */
  aborted = false;
  private listeners: (() => void)[] = [];

  /** Calls `fn` once when the budget runs out (not when it already has). */
  listen(fn: () => void): void {
    if (!this.aborted) this.listeners.push(fn);
  }

  /** Forgets `fn`. */
  unlisten(fn: () => void): void {
    const i = this.listeners.indexOf(fn);
    if (i !== -1) this.listeners.splice(i, 1);
  }

  /** Marks the abort and calls the listeners (once). */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const fns = this.listeners;
    this.listeners = [];
    for (const fn of fns) fn();
  }
}

/** The proxy's upstream abort of `raw` (a Node request), if the proxy set one. */
export function upstreamSignal(raw: object): UpstreamAbort | undefined {
  const s = (raw as Record<symbol, unknown>)[UPSTREAM_ABORT];
  return s instanceof UpstreamAbort ? s : undefined;
}

/**
 * The largest body, bytes, the proxy admits for a forwarded request (`QUEEN_PROXY_MAX_BODY_BYTES`,
 * or a plan's `max_payload_bytes` on a Produce). The proxy refuses a `Content-Length` over it from
 * the head; a body without one (chunked) or a compressed one is counted as the broker router reads
 * it, wire bytes and decoded bytes each against this cap (`413 payload_too_large`,
 * src/http/body-encoding.ts).
 */
export const PROXY_BODY_CAP = Symbol.for('queen-ts.proxy-body-cap');

/** The proxy's body cap of `raw` (a Node request) in bytes, if the proxy set one. */
export function proxyBodyCap(raw: object): number | undefined {
  const n = (raw as Record<symbol, unknown>)[PROXY_BODY_CAP];
  return typeof n === 'number' ? n : undefined;
}

/**
 * A body check the proxy stamps on a forwarded request (docs/proxy.md#quotas-and-limits, and the
 * ack rule of a transaction, docs/proxy.md#authorization-matrix): the broker router calls it with
 * the parsed body before the handler runs; it throws a QueenError to refuse (`403 forbidden`,
 * `403 quota_exceeded` / `storage_quota_exceeded`, `413 payload_too_large`, or a
 * {@link RateRefusal}: `429 rate_limited` with `Retry-After`) and resolves to let the request
 * through, optionally to a function the router calls with the answer's status once the answer is
 * over (or the client left): the check's reservations (a queue or partition this request may
 * create) end there, counted as created when the status is 2xx.
 */
export const PROXY_QUOTA = Symbol.for('queen-ts.proxy-quota');

/** The request a {@link PROXY_QUOTA} check sees: method, router path (no query), parsed body, tenant, body size. */
export interface QuotaRequest {
  method: string;
  path: string;
  body: unknown;
  tenant: string;
  /** The request's `Content-Length` in bytes (0 when absent). */
  bytes: number;
}

/** The check stamped under {@link PROXY_QUOTA}; resolves to nothing or to the release of its reservations (called with the answer's HTTP status). */
export type QuotaCheck = (r: QuotaRequest) => Promise<void | ((status: number) => void)>;

/** A `429 rate_limited` refusal of a {@link QuotaCheck}: the router answers it with `Retry-After: retryAfterS` (seconds ≥ 1). */
export class RateRefusal extends QueenError {
  constructor(message: string, readonly retryAfterS: number) {
    super('rate_limited', message);
  }
}

/** The proxy's quota check of `raw` (a Node request), if the proxy set one. */
export function quotaCheck(raw: object): QuotaCheck | undefined {
  const f = (raw as Record<symbol, unknown>)[PROXY_QUOTA];
  return typeof f === 'function' ? f as QuotaCheck : undefined;
}
