/**
 * Session tokens for people (docs/proxy.md#sessions; public reference `proxy/src/auth.rs`,
 * `proxy/src/oauth.rs`): JWTs the proxy mints and verifies itself.
 *
 * - Signer: EdDSA (`kid` from the public key) or HS256 (`kid` `hs`), src/config/proxy.ts.
 * - Claims: `sub` (user UUID), `iss`, `iat`, `exp` (seconds), `jti` (UUID v4), `role` (`viewer`
 *   for an unscoped session), optional `cluster` (cluster UUID), optional `aud`, and on a bearer
 *   minted from a session `sid` (the session's `jti`).
 * - Verification: the algorithm is pinned to the configured signer (no HS↔EdDSA downgrade), `exp`
 *   required, `iss` must match, `jti` non-empty, `sub` a UUID, `role` one of the four, `cluster` a
 *   UUID if present, `aud` one-sided (when configured and named, one must match, case-insensitive),
 *   then the deny-list for `jti` and `sid`. Every failure is the same `invalid credential`.
 */
import { randomUUID } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { ROLES, type Role, type SessionConfig } from '../../config/proxy.js';
import type { ProxyStore } from '../../storage/proxy.js';
import type { Clock } from '../../util/clock.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Lifetime of a bearer from `GET /auth/session-token`, seconds. */
export const BEARER_TTL_S = 15 * 60;

/** The claims of a verified session or bearer. */
export interface SessionClaims {
  sub: string;
  jti: string;
  role: Role;
  cluster: string | undefined;
  /** The session a bearer was minted from (undefined on a session itself). */
  sid: string | undefined;
  /** Expiry, epoch seconds. */
  exp: number;
}

/** Thrown when no signer is configured (`500 session token could not be minted`). */
export class NoSigner extends Error {
  constructor() {
    super('session token could not be minted');
    this.name = 'NoSigner';
  }
}

/** Mints, verifies and revokes session tokens over the proxy store's deny-list. */
export class SessionTokens {
  constructor(private readonly config: SessionConfig, private readonly store: ProxyStore, private readonly clock: Clock) {}

  /** True when a signer is configured. */
  get canMint(): boolean {
    return this.config.signer !== undefined;
  }

  /**
   * Mints a token for `sub`. `ttlS` defaults to `QUEEN_PROXY_JWT_TTL_S`; `exp` never passes
   * `notAfter` (epoch s) when given (a bearer never outlives its session).
   * @throws NoSigner when neither key is configured
   */
  async mint(opts: { sub: string; role?: Role; cluster?: string; sid?: string; ttlS?: number; notAfter?: number }): Promise<{ token: string; claims: SessionClaims }> {
    const signer = this.config.signer;
    if (!signer) throw new NoSigner();
    const iat = Math.floor(this.clock.now() / 1000);
    let exp = iat + (opts.ttlS ?? this.config.ttlS);
    if (opts.notAfter !== undefined) exp = Math.min(exp, opts.notAfter);
    const claims: SessionClaims = { sub: opts.sub, jti: randomUUID(), role: opts.role ?? 'viewer', cluster: opts.cluster, sid: opts.sid, exp };
    const payload: JWTPayload & Record<string, unknown> = { role: claims.role };
    if (claims.cluster !== undefined) payload.cluster = claims.cluster;
    if (claims.sid !== undefined) payload.sid = claims.sid;
    let jwt = new SignJWT(payload).setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'JWT' })
      .setSubject(claims.sub).setIssuer(this.config.issuer).setIssuedAt(iat).setExpirationTime(exp).setJti(claims.jti);
    if (this.config.audience !== undefined) jwt = jwt.setAudience(this.config.audience);
    const token = await jwt.sign(signer.alg === 'EdDSA' ? signer.privateKey : signer.secret);
    return { token, claims };
  }

  /** The claims of a valid, unrevoked token; undefined for any failure (answer `invalid credential`). */
  async verify(token: string): Promise<SessionClaims | undefined> {
    const signer = this.config.signer;
    if (!signer || token.length > 8192) return undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== signer.alg || header.typ === 'oauth-flow') return undefined;
      const { payload } = await jwtVerify(token, signer.alg === 'EdDSA' ? signer.publicKey : signer.secret, {
        algorithms: [signer.alg], issuer: this.config.issuer, requiredClaims: ['exp', 'jti', 'sub'],
        currentDate: new Date(this.clock.now()), clockTolerance: 0,
      });
      if (typeof payload.jti !== 'string' || payload.jti === '' || typeof payload.sub !== 'string' || !UUID.test(payload.sub)) return undefined;
      if (typeof payload.exp !== 'number') return undefined;
      const role = payload.role;
      if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) return undefined;
      const cluster = payload.cluster;
      if (cluster !== undefined && (typeof cluster !== 'string' || !UUID.test(cluster))) return undefined;
      const sid = payload.sid;
      if (sid !== undefined && typeof sid !== 'string') return undefined;
      const aud = this.config.audience;
      if (aud !== undefined && payload.aud !== undefined) {
        const named = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
        if (!named.some((a) => typeof a === 'string' && a.toLowerCase() === aud.toLowerCase())) return undefined;
      }
      const now = this.clock.now();
      if (this.store.isTokenRevoked(payload.jti, now)) return undefined;
      if (sid !== undefined && this.store.isTokenRevoked(sid, now)) return undefined;
      return { sub: payload.sub, jti: payload.jti, role: role as Role, cluster, sid, exp: payload.exp };
    } catch {
      return undefined;
    }
  }

  /**
   * Deny-lists a session (`jti`, kept until its `exp`, epoch s): the session and every bearer minted
   * from it (their `sid`) are refused from now on. Expired entries are pruned on the way.
   */
  revoke(jti: string, exp: number): void {
    const now = this.clock.now();
    this.store.pruneRevokedTokens(now);
    this.store.revokeToken(jti, Math.max(exp * 1000, now + 1000));
  }

  /**
   * Signs the state of an OAuth flow (`typ` `oauth-flow`, never a session: no `sub`, no `role`),
   * valid `ttlS` seconds. @throws NoSigner
   */
  async signFlow(data: Record<string, string>, ttlS: number): Promise<string> {
    const signer = this.config.signer;
    if (!signer) throw new NoSigner();
    const iat = Math.floor(this.clock.now() / 1000);
    return new SignJWT({ flow: data }).setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'oauth-flow' })
      .setIssuer(this.config.issuer).setIssuedAt(iat).setExpirationTime(iat + ttlS).setJti(randomUUID())
      .sign(signer.alg === 'EdDSA' ? signer.privateKey : signer.secret);
  }

  /**
   * The data of a valid, unexpired, unused flow token, which is deny-listed on the way (usable
   * once); undefined otherwise.
   */
  async useFlow(token: string): Promise<Record<string, string> | undefined> {
    const signer = this.config.signer;
    if (!signer || token.length > 8192) return undefined;
    try {
      const { payload, protectedHeader } = await jwtVerify(token, signer.alg === 'EdDSA' ? signer.publicKey : signer.secret, {
        algorithms: [signer.alg], issuer: this.config.issuer, typ: 'oauth-flow', requiredClaims: ['exp', 'jti'], currentDate: new Date(this.clock.now()), clockTolerance: 0,
      });
      if (protectedHeader.typ !== 'oauth-flow' || typeof payload.jti !== 'string' || typeof payload.exp !== 'number') return undefined;
      if (this.store.isTokenRevoked(payload.jti, this.clock.now())) return undefined;
      this.revoke(payload.jti, payload.exp);
      const flow = payload.flow;
      if (typeof flow !== 'object' || flow === null) return undefined;
      return Object.fromEntries(Object.entries(flow).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
    } catch {
      return undefined;
    }
  }

  /** Drops expired deny-list entries (called periodically). */
  prune(): number {
    return this.store.pruneRevokedTokens(this.clock.now());
  }
}
