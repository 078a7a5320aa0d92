/**
 * The JWKS cache: pre-fetch at boot, background refresh, and a throttled, single-flight re-fetch
 * when a token names an unknown `kid`.
 *
 * - Fetch: plain `GET`, no redirect followed (a 3xx is a failed fetch), the whole fetch bounded by
 *   `timeoutMs`, the body capped at 1 MiB whether `Content-Length`d or chunked.
 * - Entries: only `RSA` (`n`, `e`) and `OKP`/`Ed25519` (`x`, 32 bytes) are read; every other entry
 *   is skipped silently. A successful fetch replaces the whole cache; a failed one keeps it.
 * - Lookup: exact `kid`; an empty `kid` matches the first usable key in document order. A miss
 *   triggers one re-fetch, at most one every 5 s (measured from the last attempt), shared by
 *   concurrent misses; still unknown → the caller answers `401 Unknown key ID`.
 *
 * Source: docs/security.md#jwks.
 */
import type { JWK } from 'jose';
import type { Logger } from '../observability/logger.js';
import { decodeB64url } from './token.js';
import { Scheduler, type SchedulerLane } from '../util/scheduler.js';
import { systemClock } from '../util/clock.js';

/** Body cap, bytes (1 MiB, docs/security.md#jwks). */
export const JWKS_MAX_BODY_BYTES = 1024 * 1024;
/** Minimum spacing of on-demand re-fetches, ms (once every 5 s, docs/security.md#jwks). */
export const JWKS_MISS_THROTTLE_MS = 5000;
/** Background refresh failures are logged at most once per this many ms. */
const REFRESH_FAILURE_LOG_MS = 60_000;
/** The background refresh's lane and key in the scheduler. */
const REFRESH_LANE = 'jwks-refresh';
const REFRESH_KEY = 'refresh';

/** One usable verification key from the document. */
export interface JwksKey {
  /** The entry's `kid`, `""` when absent or not a string. */
  readonly kid: string;
  readonly kty: 'RSA' | 'OKP';
  /** A minimal public JWK (`kty`+`n`+`e`, or `kty`+`crv`+`x`); its `alg`/`use` are never consulted. */
  readonly jwk: Readonly<JWK>;
}

export interface JwksOptions {
  /** `JWT_JWKS_URL`. */
  readonly url: string;
  /** `JWT_JWKS_TIMEOUT_MS`: per-fetch timeout, ms. */
  readonly timeoutMs: number;
  /** `JWT_JWKS_REFRESH_INTERVAL`: seconds between background refreshes. */
  readonly refreshIntervalSec: number;
  readonly log: Logger;
  /** Clock in ms (tests). */
  readonly now?: () => number;
  /**
   * The due-time scheduler the background refresh is armed on (the broker's one scheduler, on its
   * injected clock); default: the cache's own, on the wall clock.
   */
  readonly scheduler?: Scheduler;
}

/** A fetch failure, with a message safe to log (no body, no credentials). */
export class JwksFetchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwksFetchError';
  }
}

/** The URL as it may be logged: no userinfo, no query, no fragment. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<unparseable URL>';
  }
}

/**
 * Fetches the JWKS document body: one plain `GET`, no redirects, bounded by `timeoutMs`, body
 * capped at {@link JWKS_MAX_BODY_BYTES}.
 * @throws JwksFetchError on any transport failure, non-2xx status (3xx included), timeout or a body over the cap.
 */
export async function fetchJwksBody(url: string, timeoutMs: number): Promise<Buffer> {
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { method: 'GET', redirect: 'manual', signal, headers: { accept: 'application/json' } });
  } catch (e) {
    throw new JwksFetchError(signal.aborted ? `timed out after ${timeoutMs} ms` : `fetch failed: ${causeOf(e)}`);
  }
  if (res.status < 200 || res.status > 299) {
    await res.body?.cancel().catch(() => undefined);
    throw new JwksFetchError(`HTTP ${res.status}${res.status >= 300 && res.status < 400 ? ' (redirects are not followed)' : ''}`);
  }
  const declared = res.headers.get('content-length');
  if (declared !== null && Number(declared) > JWKS_MAX_BODY_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw new JwksFetchError(`body of ${declared} bytes exceeds the ${JWKS_MAX_BODY_BYTES}-byte cap`);
  }
  if (res.body === null) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > JWKS_MAX_BODY_BYTES) {
        await reader.cancel().catch(() => undefined);
        throw new JwksFetchError(`body exceeds the ${JWKS_MAX_BODY_BYTES}-byte cap`);
      }
      chunks.push(value);
    }
  } catch (e) {
    if (e instanceof JwksFetchError) throw e;
    throw new JwksFetchError(signal.aborted ? `timed out after ${timeoutMs} ms` : `body read failed: ${causeOf(e)}`);
  }
  return Buffer.concat(chunks, total);
}

function causeOf(e: unknown): string {
  if (e instanceof Error) {
    const c = (e as Error & { cause?: unknown }).cause;
    return c instanceof Error ? c.message : e.message;
  }
  return String(e);
}

/**
 * Parses a JWKS document into its usable keys, in document order; later duplicates of a `kid`
 * replace earlier ones in place.
 * @throws JwksFetchError when the body is not JSON with a `keys` array.
 */
export async function parseJwks(body: Buffer): Promise<JwksKey[]> {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw new JwksFetchError('JWKS is not JSON');
  }
  const keys = typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>).keys : undefined;
  if (!Array.isArray(keys)) throw new JwksFetchError('JWKS has no `keys` array');
  const out: JwksKey[] = [];
  const at = new Map<string, number>();
  for (const entry of keys) {
    const key = await parseEntry(entry);
    if (key === undefined) continue;
    const i = at.get(key.kid);
    if (i === undefined) {
      at.set(key.kid, out.length);
      out.push(key);
    } else {
      out[i] = key;
    }
  }
  return out;
}

async function parseEntry(entry: unknown): Promise<JwksKey | undefined> {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
  const e = entry as Record<string, unknown>;
  const kid = typeof e.kid === 'string' ? e.kid : '';
  let jwk: JWK;
  let probeAlg: string;
  if (e.kty === 'RSA' && typeof e.n === 'string' && typeof e.e === 'string') {
    jwk = { kty: 'RSA', n: e.n, e: e.e };
    probeAlg = 'RS256';
  } else if (e.kty === 'OKP' && e.crv === 'Ed25519' && typeof e.x === 'string' && decodeB64url(e.x)?.length === 32) {
    jwk = { kty: 'OKP', crv: 'Ed25519', x: e.x };
    probeAlg = 'EdDSA';
  } else {
    return undefined;
  }
  try {
    await (await import('jose')).importJWK(jwk, probeAlg); // loaded here: a broker without JWKS never holds jose
  } catch {
    return undefined;
  }
  return { kid, kty: jwk.kty as 'RSA' | 'OKP', jwk: Object.freeze(jwk) };
}

/** The JWKS cache of one broker. Create at boot, {@link JwksCache.prefetch}, then {@link JwksCache.start}. */
export class JwksCache {
  private keys: JwksKey[] = [];
  private byKid = new Map<string, JwksKey>();
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<boolean> | undefined;
  /** The background refresh's scheduler and lane, and whether it runs. */
  private readonly scheduler: Scheduler;
  private readonly refreshLane: SchedulerLane<string>;
  private refreshing = false;
  private lastFailureLogAt = Number.NEGATIVE_INFINITY;
  private suppressedFailures = 0;
  private attempts = 0;
  private readonly now: () => number;

  constructor(private readonly opts: JwksOptions) {
    this.now = opts.now ?? Date.now;
    this.scheduler = opts.scheduler ?? new Scheduler(systemClock);
    this.refreshLane = this.scheduler.lane<string>(REFRESH_LANE);
  }

  /** Usable keys currently cached. */
  get size(): number {
    return this.keys.length;
  }

  /** Fetch attempts made so far (boot, background and on-demand). */
  get fetchAttempts(): number {
    return this.attempts;
  }

  /**
   * The boot pre-fetch: logs `JWKS pre-fetch OK` with the usable key count, or
   * `JWKS pre-fetch failed (will retry on demand)` and carries on (never throws). A failed pre-fetch
   * does not count against the miss throttle, so the first token pays the fetch.
   * @returns true when the document was fetched and parsed.
   */
  async prefetch(): Promise<boolean> {
    const ok = await this.refresh((err) => this.opts.log.warn({ err: err.message, url: safeUrl(this.opts.url) }, 'JWKS pre-fetch failed (will retry on demand)'));
    if (ok) this.opts.log.info({ keys: this.keys.length }, 'JWKS pre-fetch OK');
    else this.lastAttemptAt = Number.NEGATIVE_INFINITY;
    return ok;
  }

  /**
   * Starts the background refresh every `refreshIntervalSec`, as one entry of the scheduler re-armed
   * on each run (a fixed cadence; the scheduler caps each wait, and its timer never keeps the process alive).
   */
  start(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.armRefresh();
  }

  private armRefresh(): void {
    if (!this.refreshing) return;
    const ms = Math.max(1, this.opts.refreshIntervalSec) * 1000;
    this.refreshLane.schedule(REFRESH_KEY, this.scheduler.clock.now() + ms, () => {
      this.armRefresh();
      void this.refresh((err) => this.logFailure(err));
    });
  }

  /** Stops the background refresh. */
  stop(): void {
    this.refreshing = false;
    this.refreshLane.cancel(REFRESH_KEY);
  }

  /**
   * The key for a token's `kid` (`""` = the first key). On a miss, re-fetches once if the last
   * attempt is at least 5 s old (or joins the fetch in flight), then looks again.
   * @returns undefined when still unknown (the caller answers `401 Unknown key ID`).
   */
  async lookup(kid: string): Promise<JwksKey | undefined> {
    const hit = this.find(kid);
    if (hit !== undefined) return hit;
    if (this.inflight !== undefined) await this.inflight;
    else if (this.now() - this.lastAttemptAt >= JWKS_MISS_THROTTLE_MS) await this.refresh((err) => this.logFailure(err));
    return this.find(kid);
  }

  private find(kid: string): JwksKey | undefined {
    return kid === '' ? this.keys[0] : this.byKid.get(kid);
  }

  /** One fetch, single-flight: a call while one is in flight joins it. Never rejects. */
  private refresh(onError: (err: Error) => void): Promise<boolean> {
    if (this.inflight !== undefined) return this.inflight;
    this.lastAttemptAt = this.now();
    this.attempts++;
    const run = async (): Promise<boolean> => {
      try {
        const keys = await parseJwks(await fetchJwksBody(this.opts.url, this.opts.timeoutMs));
        this.keys = keys;
        this.byKid = new Map(keys.map((k) => [k.kid, k]));
        return true;
      } catch (e) {
        onError(e instanceof Error ? e : new Error(String(e)));
        return false;
      }
    };
    const p = run().finally(() => {
      if (this.inflight === p) this.inflight = undefined;
    });
    this.inflight = p;
    return p;
  }

  private logFailure(err: Error): void {
    const t = this.now();
    if (t - this.lastFailureLogAt < REFRESH_FAILURE_LOG_MS) {
      this.suppressedFailures++;
      return;
    }
    this.opts.log.warn({ err: err.message, url: safeUrl(this.opts.url), suppressed: this.suppressedFailures }, 'JWKS refresh failed');
    this.lastFailureLogAt = t;
    this.suppressedFailures = 0;
  }
}
