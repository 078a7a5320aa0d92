/**
 * Keys the embedded proxy sets on a raw request it hands to the broker router in process
 * (src/proxy/forward.ts, docs/proxy.md#forwarding). Symbol-keyed, so no client can set them.
 */

/**
 * An `AbortSignal` the proxy aborts when the request's upstream budget runs out (it then answers
 * `504 upstream_timeout` itself). A parked long-poll listens to it and stops claiming nothing, as it
 * does when its client goes away.
 */
export const UPSTREAM_ABORT = Symbol.for('queen-ts.upstream-abort');

/** The proxy's upstream-abort signal of `raw` (a Node request), if the proxy set one. */
export function upstreamSignal(raw: object): AbortSignal | undefined {
  const s = (raw as Record<symbol, unknown>)[UPSTREAM_ABORT];
  return s instanceof AbortSignal ? s : undefined;
}
