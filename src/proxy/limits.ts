/**
 * Rate limits on the proxy listener (docs/proxy.md#quotas-and-limits; public reference
 * `proxy/src/harden.rs`, `proxy/src/limits.rs`): one token bucket per client IP (IPv6 per /64) and
 * one per cluster from its effective `max_req_per_sec` / `req_burst`. The buckets are `limiter`'s
 * TokenBucket; this file only keys them, bounds their number and computes `Retry-After`.
 */
import { isIPv6 } from 'node:net';
import { TokenBucket } from 'limiter';

/** Buckets kept per map before the oldest are dropped (a dropped bucket starts full again). */
const MAX_BUCKETS = 100_000;

/** The drip interval of a rate-0 bucket: one token per 2^31 ms (≈ 25 days), i.e. never in practice. */
const NEVER_MS = 2 ** 31;

/** The longest `Retry-After` answered, seconds. */
export const MAX_RETRY_AFTER_S = 3600;

/** The outcome of charging a bucket: allowed, or refused with the seconds to wait (≥ 1). */
export type Charge = { ok: true } | { ok: false; retryAfterS: number };

/** Token buckets by key, each `rate` tokens/s (0: never refilled) with `burst` capacity. */
export class Buckets {
  private readonly map = new Map<string, { bucket: TokenBucket; rate: number; burst: number }>();

  /**
   * Takes `n` tokens (default 1, at most `burst`) from `key`'s bucket (created full at `burst`);
   * refused, nothing is taken and `retryAfterS` is the wait until `n` tokens are there.
   */
  charge(key: string, rate: number, burst: number, n = 1): Charge {
    let b = this.map.get(key);
    if (!b || b.rate !== rate || b.burst !== burst) {
      if (this.map.size >= MAX_BUCKETS) this.map.delete(this.map.keys().next().value!);
      // limiter reads 0 tokens per interval as "unlimited"; a rate of 0 is a bucket that never refills.
      const drip = rate > 0 ? { tokensPerInterval: rate, interval: 'second' as const } : { tokensPerInterval: 1, interval: NEVER_MS };
      b = { bucket: new TokenBucket({ bucketSize: Math.max(1, burst), ...drip }), rate, burst };
      b.bucket.content = b.bucket.bucketSize; // a new bucket starts full (limiter's start empty)
      this.map.set(key, b);
    }
    if (b.bucket.tryRemoveTokens(n)) return { ok: true };
    // A bucket that never refills (rate 0) answers the longest wait: the request is not affordable later either.
    const wait = rate > 0 ? Math.ceil((n - b.bucket.content) / rate) : MAX_RETRY_AFTER_S;
    return { ok: false, retryAfterS: Math.min(MAX_RETRY_AFTER_S, Math.max(1, wait)) };
  }
}

/** An address as a bucket key: IPv4-mapped IPv6 as IPv4, IPv6 by its /64. */
export function ipKey(ip: string): string {
  const v = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
  if (!isIPv6(v)) return v;
  const [head = '', tail = ''] = v.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const full: string[] = v.includes('::') ? [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${full.slice(0, 4).map((h) => h.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/**
 * The client address of a request: the peer, unless the peer is a trusted proxy
 * (`QUEEN_EDGE_TRUSTED_PROXIES`), then `X-Forwarded-For` walked right to left past trusted hops.
 * A forged header from an untrusted peer changes nothing.
 */
export function clientIp(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: readonly string[]): string {
  const norm = (a: string) => (a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a);
  let ip = norm(peer ?? '');
  if (!trusted.includes(ip) || forwardedFor === undefined) return ip;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((s) => norm(s.trim())).filter((s) => s !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    ip = hops[i]!;
    if (!trusted.includes(ip)) return ip;
  }
  return ip;
}
