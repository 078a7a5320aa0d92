/**
 * The tenant of a request: the one place on the broker router that decides it
 * (docs/proxy.md#tenancy; public reference `server/src/tenant.rs`, `proxy/src/proxy_embed.rs`).
 *
 * In this order:
 * 1. a request the embedded proxy hands over in process carries the tenant it resolved from the
 *    API key's cluster under {@link PROXY_TENANT} (a symbol no client can set): that tenant;
 * 2. a request with `x-queen-eph-fwd` is a *verified relay* when `QUEEN_RAFT_TOKEN` is set and
 *    `x-queen-raft-token` equals it (constant time); a relay that is not verified and names a
 *    tenant other than the default answers `403 tenant_unverified`;
 * 3. with `QUEEN_TENANCY_HEADER` on, or for a verified relay, `x-queen-tenant` absent or empty is
 *    the default tenant, an 8-4-4-4-12 hex UUID is that tenant (lowercased), anything else answers
 *    `400 invalid_tenant`;
 * 4. otherwise the header is ignored: the default tenant.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { QueenError } from '../errors.js';
import { quotaCheck, RateRefusal } from '../model/in-process.js';
import { bodyBytesRead } from './body-encoding.js';
import { DEFAULT_TENANT, PROXY_TENANT, TENANT_UUID } from '../model/tenancy.js';
import { routerPath } from '../auth/request-path.js';
import { sameSecret } from '../util/secret.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's tenant (lowercase UUID), set by the tenancy hook before any handler runs. */
    tenant: string;
  }
}

/** What the tenancy rules read from the configuration. */
export interface TenancySettings {
  /** `QUEEN_TENANCY_HEADER`: honour a client's `x-queen-tenant`. */
  header: boolean;
  /** `QUEEN_RAFT_TOKEN`, undefined when unset: proves a broker-to-broker relay. */
  raftToken: string | undefined;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The tenant of `request` by the rules of the module comment.
 * @throws QueenError `invalid_tenant` (400), `tenant_unverified` (403)
 */
export function tenantOf(request: FastifyRequest, cfg: TenancySettings): string {
  const stamped = (request.raw as unknown as Record<symbol, unknown>)[PROXY_TENANT];
  if (typeof stamped === 'string') return stamped;
  const named = (header(request, 'x-queen-tenant') ?? '').trim();
  const relayed = header(request, 'x-queen-eph-fwd') !== undefined;
  const token = header(request, 'x-queen-raft-token');
  const verified = relayed && cfg.raftToken !== undefined && token !== undefined && sameSecret(token, cfg.raftToken);
  if (relayed && !verified && named !== '' && named.toLowerCase() !== DEFAULT_TENANT) throw new QueenError('tenant_unverified');
  if (!cfg.header && !verified) return DEFAULT_TENANT;
  if (named === '') return DEFAULT_TENANT;
  if (!TENANT_UUID.test(named)) throw new QueenError('invalid_tenant');
  return named.toLowerCase();
}

/**
 * Routes that still serve the whole process rather than one tenant: another tenant gets
 * `403 not_tenanted` rather than someone else's rows (docs/proxy.md#tenant-scoped-operator-routes).
 * All process-wide by nature: `/api/v1/system/*` (maintenance), `/api/v1/status/buffers` (the
 * maintenance spool), `/api/v1/analytics/*` (process metrics), `/api/v1/stats`, `/metrics`. Every
 * other operator route (resources, status, consumer groups, messages, dead letters, traces) reads
 * the request's tenant.
 */
export const TENANT_BLIND_PREFIXES: readonly string[] = [
  '/api/v1/status/buffers', '/api/v1/analytics', '/metrics', '/api/v1/stats', '/api/v1/system',
];

/** Each of {@link TENANT_BLIND_PREFIXES} and the same with a trailing `/`. */
const BLIND = TENANT_BLIND_PREFIXES.map((p) => [p, p.endsWith('/') ? p : `${p}/`] as const);

/** True when `path` (no query) is served for the whole process ({@link TENANT_BLIND_PREFIXES}). */
export function tenantBlind(_method: string, path: string): boolean {
  for (const [exact, dir] of BLIND) if (path === exact || path.startsWith(dir)) return true;
  return false;
}

/** Installs the hook that sets `request.tenant` on every request of `app` (after authentication). */
export function installTenancy(app: FastifyInstance, cfg: TenancySettings): void {
  app.decorateRequest('tenant', DEFAULT_TENANT);
  // Callback-style hooks: they run on every request, and an async hook costs a promise and a
  // microtask hop each (measured with bench/cpu.ts, broker CPU per message).
  app.addHook('onRequest', (request, reply, done) => {
    try {
      request.tenant = tenantOf(request, cfg);
      if (request.tenant !== DEFAULT_TENANT && tenantBlind(request.method, routerPath(request.url))) throw new QueenError('not_tenanted');
    } catch (e) {
      if (!(e instanceof QueenError)) return done(e as Error);
      reply.code(e.status).type('application/json').send(e.toJSON());
      return;
    }
    done();
  });
  // The embedded proxy's quotas that need the parsed body (src/proxy/quotas.ts), before the handler.
  app.addHook('preHandler', (request, reply, done) => {
    const check = quotaCheck(request.raw);
    if (!check) return done();
    const declared = request.headers['content-length'];
    const length = declared === undefined ? bodyBytesRead(request.raw) : Number(declared); // chunked: the bytes counted as read
    check({ method: request.method, path: routerPath(request.url), body: request.body, tenant: request.tenant, bytes: Number.isFinite(length) ? length : 0 }).then((release) => {
      if (release) reply.raw.once('close', () => release(reply.raw.statusCode));
      done();
    }, (e: unknown) => {
      if (!(e instanceof RateRefusal)) return done(e as Error);
      reply.code(e.status).header('retry-after', String(e.retryAfterS)).type('application/json').send(e.toJSON());
    });
  });
}
