/**
 * The login guard (docs/proxy.md#login-guard; public reference `proxy/src/harden.rs`,
 * `proxy/src/oauth.rs`): two layers in front of `POST /auth/login`.
 *
 * 1. Per-IP throttle: more than `throttleAttempts` attempts (success or not) in a sliding
 *    `throttleWindowMs` → refused until the oldest attempt leaves the window.
 * 2. Failure budgets: per IP `ipFreeFailures` and per account `accountFreeFailures` free failures,
 *    then each further failure closes the door for `backoffBaseMs · 2^(n−1)` (n = failures past the
 *    free ones), capped at `lockoutMaxMs`. A success clears the account's and the IP's failures; a
 *    record quiet for `lockoutMaxMs` after its door reopened is forgotten.
 *
 * Account identifiers are normalised (trimmed, lower-cased) before they are counted, so changing
 * letter case does not escape the guard. During a back-off every attempt gets the same answer
 * whatever the password (the caller answers 429 before checking it). Times from the injected clock.
 */
import type { LoginGuardConfig } from '../../config/proxy.js';
import type { Clock } from '../../util/clock.js';

/** At most this many IP or account records are kept; the oldest are dropped beyond. */
const MAX_RECORDS = 100_000;

interface Failures {
  count: number;
  /** Epoch ms until which attempts are refused (0 = open). */
  until: number;
  last: number;
}

/** The answer for an attempt: allowed, or refused for `retryAfterS` seconds (≥ 1). */
export type GuardDecision = { ok: true } | { ok: false; retryAfterS: number; reason: 'throttle' | 'ip' | 'account' };

/** Normalises a login identifier before it is counted: trimmed and lower-cased. */
export function normaliseLogin(email: string): string {
  return email.trim().toLowerCase();
}

/** Per-IP throttle plus per-IP and per-account failure back-off, in memory. */
export class LoginGuard {
  private readonly attempts = new Map<string, number[]>();
  private readonly ipFailures = new Map<string, Failures>();
  private readonly accountFailures = new Map<string, Failures>();

  constructor(private readonly config: LoginGuardConfig, private readonly clock: Clock) {}

  /**
   * Records an attempt from `ip` for `account` and says whether it may proceed. Call before
   * checking the password; then call {@link failed} or {@link succeeded}.
   */
  attempt(ip: string, account: string): GuardDecision {
    const now = this.clock.now();
    const acct = normaliseLogin(account);
    const window = (this.attempts.get(ip) ?? []).filter((t) => now - t < this.config.throttleWindowMs);
    if (window.length >= this.config.throttleAttempts) {
      this.attempts.set(ip, window);
      return { ok: false, reason: 'throttle', retryAfterS: seconds(window[0]! + this.config.throttleWindowMs - now) };
    }
    window.push(now);
    this.put(this.attempts, ip, window);
    const ipF = this.current(this.ipFailures, ip, now);
    if (ipF && ipF.until > now) return { ok: false, reason: 'ip', retryAfterS: seconds(ipF.until - now) };
    const acF = this.current(this.accountFailures, acct, now);
    if (acF && acF.until > now) return { ok: false, reason: 'account', retryAfterS: seconds(acF.until - now) };
    return { ok: true };
  }

  /** Counts a failed attempt against `ip` and `account`. */
  failed(ip: string, account: string): void {
    const now = this.clock.now();
    this.bump(this.ipFailures, ip, this.config.ipFreeFailures, now);
    this.bump(this.accountFailures, normaliseLogin(account), this.config.accountFreeFailures, now);
  }

  /** A successful sign-in clears the failures of `ip` and `account`. */
  succeeded(ip: string, account: string): void {
    this.ipFailures.delete(ip);
    this.accountFailures.delete(normaliseLogin(account));
  }

  private current(map: Map<string, Failures>, key: string, now: number): Failures | undefined {
    const f = map.get(key);
    if (f && now - Math.max(f.until, f.last) >= this.config.lockoutMaxMs) {
      map.delete(key);
      return undefined;
    }
    return f;
  }

  private bump(map: Map<string, Failures>, key: string, free: number, now: number): void {
    const f = this.current(map, key, now) ?? { count: 0, until: 0, last: now };
    f.count += 1;
    f.last = now;
    const over = f.count - free;
    if (over > 0) f.until = now + Math.min(this.config.backoffBaseMs * 2 ** Math.min(over - 1, 40), this.config.lockoutMaxMs);
    this.put(map, key, f);
  }

  private put<V>(map: Map<string, V>, key: string, value: V): void {
    if (!map.has(key) && map.size >= MAX_RECORDS) map.delete(map.keys().next().value!);
    map.set(key, value);
  }
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
