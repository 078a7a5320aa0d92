/**
 * Claim validation, the broker's own (the JWT library only verifies the signature).
 *
 * | claim | rule (skew = JWT_CLOCK_SKEW, now = Unix seconds, floored)                 |
 * | exp   | optional; present → rejected once `now > exp + skew`                      |
 * | nbf   | present → rejected while `now + skew < nbf`                                 |
 * | iat   | present → rejected when `iat > now + skew`                                  |
 * | iss   | only when JWT_ISSUER is non-empty: a string exactly equal                   |
 * | aud   | only when JWT_AUDIENCE is non-empty: a string or an array, one match enough |
 *
 * Order: exp, nbf, iat, then iss, aud; the first failure answers. A temporal claim counts as present
 * when it is a JSON number (compared floored, docs/security.md#claims); anything else is absent. Stricter options of ours, off by
 * default: `JWT_REQUIRE_EXP` and `JWT_MAX_LIFETIME`.
 *
 * Source: docs/security.md#claims.
 */
import type { JwtConfig } from '../config/jwt.js';
import { QueenError } from '../errors.js';

/** The parsed JWT payload (a JSON object). */
export type Claims = Readonly<Record<string, unknown>>;

/** A temporal claim as whole seconds, or undefined when absent or not a finite JSON number. */
export function numericClaim(claims: Claims, name: string): number | undefined {
  const v = Object.hasOwn(claims, name) ? claims[name] : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? Math.floor(v) : undefined;
}

/**
 * Checks the temporal, issuer and audience claims.
 * @param nowSec current Unix time in whole seconds
 * @throws QueenError (401) `token_expired`, `token_no_expiry` (JWT_REQUIRE_EXP or JWT_MAX_LIFETIME
 *   set and no `exp`), `token_not_yet_valid`, `token_issued_in_future`, `token_lifetime_too_long`
 *   (`exp - iat`, or `exp - now` without `iat`, above JWT_MAX_LIFETIME), `invalid_token_issuer`,
 *   `invalid_token_audience`.
 */
export function checkClaims(claims: Claims, cfg: JwtConfig, nowSec: number): void {
  const skew = cfg.clockSkewSec;
  const exp = numericClaim(claims, 'exp');
  const nbf = numericClaim(claims, 'nbf');
  const iat = numericClaim(claims, 'iat');
  if (exp !== undefined) {
    if (nowSec > exp + skew) throw new QueenError('token_expired');
  } else if (cfg.requireExp || cfg.maxLifetimeSec > 0) {
    throw new QueenError('token_no_expiry');
  }
  if (nbf !== undefined && nowSec + skew < nbf) throw new QueenError('token_not_yet_valid');
  if (iat !== undefined && iat > nowSec + skew) throw new QueenError('token_issued_in_future');
  if (cfg.maxLifetimeSec > 0 && exp !== undefined && exp - (iat ?? nowSec) > cfg.maxLifetimeSec) {
    throw new QueenError('token_lifetime_too_long');
  }
  if (cfg.issuer !== '') {
    const iss = Object.hasOwn(claims, 'iss') ? claims.iss : undefined;
    if (typeof iss !== 'string' || iss !== cfg.issuer) throw new QueenError('invalid_token_issuer');
  }
  if (cfg.audiences.length > 0 && !audienceMatches(claims, cfg.audiences)) {
    throw new QueenError('invalid_token_audience');
  }
}

/** True when the token's `aud` (a string, or an array whose string items count) names one of `wanted`. */
export function audienceMatches(claims: Claims, wanted: readonly string[]): boolean {
  const aud = Object.hasOwn(claims, 'aud') ? claims.aud : undefined;
  if (typeof aud === 'string') return wanted.includes(aud);
  if (Array.isArray(aud)) return aud.some((a) => typeof a === 'string' && wanted.includes(a));
  return false;
}

/** The token's `sub` when it is a non-empty string; the only source of a message's `producerSub`. */
export function subjectOf(claims: Claims): string | undefined {
  const sub = Object.hasOwn(claims, 'sub') ? claims.sub : undefined;
  return typeof sub === 'string' && sub !== '' ? sub : undefined;
}
