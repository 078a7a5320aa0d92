/**
 * Broker JWT authentication wired into Fastify: one `onRequest` hook on the root instance, so it
 * covers every route, including paths no route serves (an unknown path is `read-write`), and runs
 * on the request head before any body is read or validated (an unauthorised request with a bad
 * body gets 401/403, never 400).
 *
 * Every request leaves the hook with `request.identity` set: the empty identity when JWT is off,
 * on skip paths and on public routes; otherwise the token's `sub` and roles. `request.identity.sub`
 * is the only source of a pushed message's `producerSub`.
 *
 * Source: docs/security.md#jwt.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { JwtConfig } from '../config/jwt.js';
import { isQueenError } from '../errors.js';
import { PROXY_TENANT } from '../model/tenancy.js';
import type { Logger } from '../observability/logger.js';
import { systemClock, type Clock } from '../util/clock.js';
import type { Scheduler } from '../util/scheduler.js';
import { JwksCache, safeUrl } from './jwks.js';
import { loadKeyMaterial } from './keys.js';
import { routerPath } from './request-path.js';
import { createAuthenticator, EMPTY_IDENTITY, type Authenticator, type Identity } from './verifier.js';
import { sameSecret } from '../util/secret.js';

/** The node-to-node ephemeral routes a verified relay reaches without a JWT (docs/ephemeral.md#multi-node). */
export const NODE_ROUTES: ReadonlySet<string> = new Set(['/api/v1/ephemeral/_adopt', '/api/v1/ephemeral/_leaving', '/api/v1/ephemeral/_ready']);

export { EMPTY_IDENTITY, type Identity } from './verifier.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who made the request (set by the auth hook on every request; empty when unauthenticated). */
    identity: Identity;
  }
}

/** What {@link registerAuth} hands back to the boot code. */
export interface AuthHandle {
  readonly config: JwtConfig;
  readonly authenticator: Authenticator;
  /** The JWKS cache when `JWT_JWKS_URL` is in use. */
  readonly jwks: JwksCache | undefined;
  /** Stops the JWKS background refresh (also done by the app's `onClose`). */
  close(): void;
}

/** Boot line with JWT off (docs/security.md#boot-lines). */
export const JWT_DISABLED_LINE = 'JWT auth disabled — API and dashboard are open (standalone); set JWT_ENABLED=true to require tokens';
/** Boot warning for a cleartext JWKS URL (docs/security.md#boot-lines). */
export const JWKS_HTTP_WARNING = 'JWT_JWKS_URL is plaintext http:// — signing keys fetched over cleartext are MITM-forgeable; use https://';

/** True when the JWKS endpoint is consulted: JWT on, a URL set, and an RS/EdDSA/auto setting. */
export function jwksInUse(cfg: JwtConfig): boolean {
  return cfg.enabled && cfg.jwksUrl !== '' && (cfg.algorithm === 'auto' || cfg.algorithm.startsWith('RS') || cfg.algorithm === 'EdDSA');
}

/**
 * Installs authentication on `app` (call it on the root instance, before `listen`; route plugins
 * may be registered before or after). Logs `JWT auth ENABLED` with the algorithm setting, the
 * accepted algs and the skip list; with a JWKS URL, awaits the boot pre-fetch (`JWKS pre-fetch OK`
 * with the key count, or `JWKS pre-fetch failed (will retry on demand)`: never fatal) and starts
 * the background refresh. Never logs a token or a secret.
 *
 * Refusals are answered from the hook as `{"error": <message>, "code": <registry code>}` with
 * the status listed in docs/security.md#refusals (401, 403, or 500 for server-side key problems).
 *
 * @param cfg from {@link import('../config/jwt.js').loadJwtConfig}, validated at boot
 * @param clock the instant tokens are judged at (`exp`, `nbf`, `iat` with JWT_CLOCK_SKEW) and the JWKS cache's throttle; default wall clock
 * @param scheduler the broker's due-time scheduler (on the same clock), which arms the JWKS background refresh; default the cache's own
 * @param raftToken `QUEEN_RAFT_TOKEN`: a verified relay (`x-queen-eph-fwd` with this token) to one of
 *   the node-to-node ephemeral routes ({@link NODE_ROUTES}) is a node, not a client, and needs no JWT
 *   (docs/ephemeral.md#multi-node)
 */
export async function registerAuth(app: FastifyInstance, cfg: JwtConfig, log: Logger, clock: Clock = systemClock, scheduler?: Scheduler, raftToken?: string): Promise<AuthHandle> {
  let jwks: JwksCache | undefined;
  if (!cfg.enabled) {
    log.info(JWT_DISABLED_LINE);
  } else {
    log.info({ algorithm: cfg.algorithm, acceptedAlgs: [...cfg.acceptedAlgs], skipPaths: cfg.skipPaths }, 'JWT auth ENABLED');
    if (jwksInUse(cfg)) {
      if (/^http:\/\//i.test(cfg.jwksUrl)) log.warn({ url: safeUrl(cfg.jwksUrl) }, JWKS_HTTP_WARNING);
      jwks = new JwksCache({ url: cfg.jwksUrl, timeoutMs: cfg.jwksTimeoutMs, refreshIntervalSec: cfg.jwksRefreshIntervalSec, log, now: () => clock.now(), scheduler });
      await jwks.prefetch();
      jwks.start();
    }
  }
  const keys = await loadKeyMaterial(cfg, jwks, log);
  const authenticator = createAuthenticator(cfg, keys, clock);

  app.decorateRequest('identity', null as unknown as Identity);
  if (!cfg.enabled) {
    app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: () => void) => { // callback style: no promise per request
      request.identity = EMPTY_IDENTITY;
      done();
    });
  } else {
    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      // Handed over in process by the embedded proxy, which authenticated the caller with its own
      // credentials (docs/proxy.md#layouts): the broker's JWT does not apply.
      if ((request.raw as unknown as Record<symbol, unknown>)[PROXY_TENANT] !== undefined) {
        request.identity = EMPTY_IDENTITY;
        return;
      }
      if (raftToken !== undefined && NODE_ROUTES.has(routerPath(request.url)) && request.headers['x-queen-eph-fwd'] !== undefined) {
        const given = request.headers['x-queen-raft-token'];
        if (typeof given === 'string' && sameSecret(given, raftToken)) {
          request.identity = EMPTY_IDENTITY;
          return;
        }
      }
      try {
        request.identity = await authenticator.authenticate(request.method, routerPath(request.url), request.headers.authorization);
      } catch (e) {
        if (!isQueenError(e)) throw e;
        request.identity = EMPTY_IDENTITY;
        if (e.status >= 500) request.log.error({ code: e.code, method: request.method }, e.message);
        if (e.status === 401) reply.header('www-authenticate', 'Bearer');
        return reply.code(e.status).type('application/json').send(e.toJSON());
      }
    });
  }
  const close = (): void => jwks?.stop();
  app.addHook('onClose', async () => close());
  return { config: cfg, authenticator, jwks, close };
}
