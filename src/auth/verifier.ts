/**
 * The request pipeline of broker JWT authentication, in the normative order (docs/security.md#request-pipeline):
 *
 *  0. JWT off → empty identity           7. key selection → 500s / 401 Unknown key ID
 *  1. skip path → empty identity          8. signature (jose, pinned to the token's alg)
 *  2. public route → empty identity       9. exp, nbf, iat (with skew)
 *  3. no Authorization → 401              10. iss, aud
 *  4. extract the token                   11. roles vs the route's level → 403
 *  5. decode the header → 401             12. identity: `sub` and the roles held
 *  6. alg gate → 401 (before any key lookup)
 *
 * Signature verification is `jose`'s; every other check is ours. The first failing step answers.
 *
 * Source: docs/security.md#request-pipeline.
 */
import type { compactVerify } from 'jose';
import type { JwtConfig } from '../config/jwt.js';
import { QueenError } from '../errors.js';
import { classify, levelRoleSets, passes, type AccessLevel } from './access-levels.js';
import type { TokenAlg } from '../model/jwt-algorithms.js';
import { checkClaims, subjectOf, type Claims } from './claims.js';
import { selectKey, type KeyMaterial } from './keys.js';
import { rolesOf } from './roles.js';
import { compileSkipPaths } from './skip-paths.js';
import { decodeHeader, extractToken, type TokenHeader } from './token.js';
import { systemClock, type Clock } from '../util/clock.js';

/** Who made a request. Empty (no `sub`, no roles) when JWT is off, or on skip paths and public routes. */
export interface Identity {
  /** The token's `sub` when a non-empty string; stamped as a pushed message's `producerSub`. */
  readonly sub?: string;
  /** The role strings the token holds (both role claims, as sent). */
  readonly roles: ReadonlySet<string>;
}

/** The identity of an unauthenticated request. */
export const EMPTY_IDENTITY: Identity = Object.freeze({ roles: new Set<string>() as ReadonlySet<string> });

/** Checks one request head. */
export interface Authenticator {
  /**
   * Authenticates and authorises a request from its head alone.
   * @param method request method, exact
   * @param path the path the router dispatches on (`routerPath` of request-path.ts): the path as received, percent-decoding as the router does
   * @param authorization the `Authorization` header value, if any
   * @returns the caller's identity
   * @throws QueenError with the status and message listed in docs/security.md#refusals (401, 403 or 500) when the request must be refused.
   */
  authenticate(method: string, path: string, authorization: string | readonly string[] | undefined): Promise<Identity>;
  /** The level the route table gives a request (exposed for diagnostics and tests). */
  levelOf(method: string, path: string): AccessLevel;
}

/**
 * Builds the authenticator.
 * @param clock the instant `exp`, `nbf` and `iat` are judged at (with `cfg.clockSkewSec`), and the
 *   verified-signature cache's age; the broker's clock (tests pass a `TestClock`)
 */
export function createAuthenticator(cfg: JwtConfig, keys: KeyMaterial, clock: Clock = systemClock): Authenticator {
  const nowMs = (): number => clock.now();
  const skip = compileSkipPaths(cfg.skipPaths);
  const sets = levelRoleSets(cfg.roles);
  const verified = new VerifiedTokens(10_000, 60_000);

  async function authenticate(method: string, path: string, authorization: string | readonly string[] | undefined): Promise<Identity> {
    if (!cfg.enabled || skip(path)) return EMPTY_IDENTITY;
    const level = classify(method, path);
    if (level === 'public') return EMPTY_IDENTITY;
    const token = extractToken(authorization);
    if (token === undefined) throw new QueenError('auth_required');
    // A token's header is a function of its text: one that verified before is not decoded again.
    const header = verified.header(token) ?? decodeHeader(token);
    const alg = header.alg as TokenAlg;
    if (!cfg.acceptedAlgs.has(alg)) throw new QueenError('unsupported_token_algorithm');
    const key = await selectKey(keys, alg, header.kid);
    let claims = verified.get(token, key, nowMs());
    if (claims === undefined) {
      claims = await verifySignature(token, header.raw, alg, key);
      verified.set(token, header, key, claims, nowMs());
    }
    checkClaims(claims, cfg, Math.floor(nowMs() / 1000));
    const roles = rolesOf(claims, cfg.rolesClaim, cfg.rolesArrayClaim);
    if (!passes(level, roles, sets)) throw new QueenError('insufficient_permissions');
    const sub = subjectOf(claims);
    return sub === undefined ? { roles } : { sub, roles };
  }

  return { authenticate, levelOf: classify };
}

let loaded: Promise<typeof import('jose')> | undefined;
/** `jose`, loaded on the first signature check: a broker without JWT never holds it (idle RSS, README). */
function jose(): Promise<typeof import('jose')> {
  return (loaded ??= import('jose'));
}

/**
 * Verifies the signature with exactly the token's `alg`, then parses the payload.
 * @throws QueenError `invalid_token_signature` on any failure: bad signature, wrong key type,
 *   malformed segments, an unencoded-payload (`b64`) header, or a payload that is not a JSON object.
 */
async function verifySignature(token: string, header: Readonly<Record<string, unknown>>, alg: TokenAlg, key: Parameters<typeof compactVerify>[1]): Promise<Claims> {
  if (Object.hasOwn(header, 'b64')) throw new QueenError('invalid_token_signature');
  let payload: Uint8Array;
  try {
    ({ payload } = await (await jose()).compactVerify(token, key as Exclude<typeof key, (...a: never[]) => unknown>, { algorithms: [alg] }));
  } catch {
    throw new QueenError('invalid_token_signature');
  }
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
  } catch {
    throw new QueenError('invalid_token_signature');
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new QueenError('invalid_token_signature');
  return claims as Claims;
}

/**
 * Tokens whose signature verified, keyed by the exact token text and the key object that verified
 * it, so a client that sends the same bearer token on every request pays the signature check once
 * a minute instead of on every request. Only the signature result (and the decoded header, a
 * function of the token's text) is remembered: the algorithm, the key, the temporal claims, issuer,
 * audience and roles are checked on every request. A key rotated out of the JWKS cache is a
 * different key object, so its tokens verify afresh. Bounded: the oldest entry goes when `max` is
 * reached.
 */
class VerifiedTokens {
  private readonly entries = new Map<string, { header: TokenHeader; key: unknown; claims: Claims; until: number }>();

  /** @param max entries kept @param ttlMs how long (ms) a verification is reused */
  constructor(private readonly max: number, private readonly ttlMs: number) {}

  /** The decoded header of a token that verified and is still remembered. */
  header(token: string): TokenHeader | undefined {
    return this.entries.get(token)?.header;
  }

  get(token: string, key: unknown, now: number): Claims | undefined {
    const e = this.entries.get(token);
    if (!e) return undefined;
    if (e.key !== key || e.until <= now) {
      this.entries.delete(token);
      return undefined;
    }
    return e.claims;
  }

  set(token: string, header: TokenHeader, key: unknown, claims: Claims, now: number): void {
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { header, key, claims, until: now + this.ttlMs });
  }
}
