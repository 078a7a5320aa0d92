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
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { QueenError } from '../errors.js';
import { DEFAULT_TENANT, PROXY_TENANT, TENANT_UUID } from '../model/tenancy.js';

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

/** Constant-time equality of two secrets (their length may leak). */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
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

/** Installs the hook that sets `request.tenant` on every request of `app` (after authentication). */
export function installTenancy(app: FastifyInstance, cfg: TenancySettings): void {
  app.decorateRequest('tenant', DEFAULT_TENANT);
  app.addHook('onRequest', async (request, reply) => {
    try {
      request.tenant = tenantOf(request, cfg);
    } catch (e) {
      if (!(e instanceof QueenError)) throw e;
      return reply.code(e.status).type('application/json').send(e.toJSON());
    }
  });
}
