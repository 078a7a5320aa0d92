/**
 * The control plane `/api/cp/*` (docs/proxy.md#control-plane; public reference `proxy/src/cp.rs`).
 * The token (`x-queen-cp-token`, constant time) is checked by the proxy listener's head hook
 * (src/proxy/server.ts) before any body is read; bodies are capped at 1 MiB there. Every route is
 * idempotent; refusals use the proxy envelope with the codes of src/auth/proxy/state.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { S3Settings } from '../auth/proxy/s3.js';
import type { ProxyState } from '../auth/proxy/state.js';
import type { ApiKeyRow, ClusterRow, TenantRow, UserRow } from '../auth/proxy/state.js';
import { QueenError } from '../errors.js';
import type { BrokerCall } from './forward.js';
import type { Meter } from './meter.js';

type Obj = Record<string, unknown>;
const obj = (b: unknown): Obj => {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw new QueenError('invalid', 'body must be a JSON object');
  return b as Obj;
};
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A tenant in the control plane's shape. */
export function tenantOut(t: TenantRow) {
  return { id: t.id, slug: t.slug, name: t.name, status: t.status, created_at: iso(t.createdAt) };
}

/** A cluster in the control plane's shape. */
export function clusterOut(c: ClusterRow) {
  return {
    id: c.id, slug: c.slug, tenant_id: c.tenantId, plan: c.plan, cell: c.cell, status: c.status,
    overrides: JSON.parse(c.overrides) as Obj, broker_tenant_uuid: c.brokerTenantUuid, created_at: iso(c.createdAt),
  };
}

/** A key in the control plane's shape: never its hash. */
export function keyOut(k: ApiKeyRow) {
  return { id: k.id, cluster_id: k.clusterId, name: k.name, scopes: k.scopes, revoked_at: iso(k.revokedAt), last_used_at: iso(k.lastUsedAt), created_at: iso(k.createdAt) };
}

/** A user in the control plane's shape: never the password hash. */
export function userOut(u: UserRow) {
  return { id: u.id, email: u.email, tenant_id: u.tenantId, is_operator: u.isOperator, password_set: u.passwordHash !== null, created_at: iso(u.createdAt) };
}

const objectBody = { body: { type: 'object' } } as const;
const slugParam = { params: { type: 'object', properties: { slug: { type: 'string', maxLength: 256 } }, required: ['slug'] } } as const;
const idParam = { params: { type: 'object', properties: { id: { type: 'string', maxLength: 256 } }, required: ['id'] } } as const;

/** Removes a tenant's KV entries, lock permits and timers in the broker (src/broker/admin/tenant-usage.ts). */
export interface CoordinationPurge {
  /** @returns rows removed: `kv` (KV entries and lock permits), `timers` */
  purgeCoordination(tenant: string): Promise<{ kv: number; timers: number }>;
}

/** Fastify plugin: the control-plane routes over `state`; usage figures from `meter`; the broker through `broker` and `purge`; S3 settings through `s3`. */
export async function controlPlaneRoutes(app: FastifyInstance, { state, meter, broker, purge, s3 }: { state: ProxyState; meter: Meter; broker: BrokerCall; purge: CoordinationPurge; s3: S3Settings }): Promise<void> {
  /** A broker answer that must be 2xx; anything else is `503 unavailable` with the broker's own text. */
  const ok = (what: string, r: { status: number; body: unknown }): Obj => {
    if (r.status >= 200 && r.status < 300 && typeof r.body === 'object' && r.body !== null) return r.body as Obj;
    const e = typeof r.body === 'object' && r.body !== null ? (r.body as Obj).error : undefined;
    const detail = typeof e === 'string' ? e : '';
    throw new QueenError('unavailable', `${what}: the broker answered ${r.status}${detail ? `: ${detail}` : ''}`);
  };
  const queueNames = async (tenant: string): Promise<string[]> => {
    const list = ok('list queues', await broker(tenant, 'GET', '/api/v1/resources/queues')).queues;
    return Array.isArray(list) ? list.map((q) => String((q as Obj).name)) : [];
  };

  app.post('/api/cp/bootstrap', { schema: objectBody }, async (req) => {
    const b = obj(req.body);
    if (b.password !== undefined && (typeof b.password !== 'string' || b.password.length < 8 || Buffer.byteLength(b.password) > 72)) {
      throw new QueenError('invalid', 'password must be a string of 8 to 72 bytes');
    }
    const r = state.bootstrap(b);
    if (typeof b.password === 'string') {
      const ok = await state.setBootstrapPassword(r.user_id, b.password);
      return { ...r, password_set: ok, can_login: ok };
    }
    return r;
  });
  app.post('/api/cp/provision', { schema: objectBody }, async (req) => {
    const b = obj(req.body);
    const { tenant } = state.createTenant({ slug: b.tenant, name: b.name });
    const { cluster } = state.createCluster({ tenant: tenant.id, slug: b.cluster ?? tenant.slug, plan: b.plan, cell: b.cell });
    return { tenant: tenantOut(tenant), cluster: clusterOut(cluster) };
  });
  app.post('/api/cp/tenants', { schema: objectBody }, async (req, reply) => {
    const { tenant, created } = state.createTenant(obj(req.body));
    return reply.code(created ? 201 : 200).send({ ...tenantOut(tenant), created });
  });
  app.delete<{ Params: { slug: string }; Querystring: { force?: string } }>('/api/cp/tenants/:slug',
    { schema: { ...slugParam, querystring: { type: 'object', properties: { force: { type: 'string', enum: ['true', 'false'] } } } } },
    async (req) => {
      const force = req.query.force === 'true';
      if (!force) {
        // Without force only a purged tenant goes: its clusters hold no queue any more.
        const { clusters } = state.purgeTarget(req.params.slug);
        for (const c of clusters) if ((await queueNames(c.brokerTenantUuid)).length > 0) throw new QueenError('not_purged');
      }
      return state.deleteTenant(req.params.slug, force);
    });
  app.put<{ Params: { slug: string } }>('/api/cp/tenants/:slug/status', { schema: { ...slugParam, ...objectBody } },
    async (req) => tenantOut(state.setTenantStatus(req.params.slug, obj(req.body).status)));
  // Purge: every queue (messages, partitions, consumer groups, dead letters), KV entry, lock permit
  // and timer of every cluster of a tenant in status `deleting`; a re-run finds nothing and deletes nothing.
  app.post<{ Params: { slug: string } }>('/api/cp/tenants/:slug/purge', { schema: slugParam }, async (req) => {
    const { tenant, clusters } = state.purgeTarget(req.params.slug);
    let queues = 0;
    let kv = 0;
    let timers = 0;
    for (const c of clusters) {
      for (const name of await queueNames(c.brokerTenantUuid)) {
        const r = ok(`delete queue ${name}`, await broker(c.brokerTenantUuid, 'DELETE', `/api/v1/resources/queues/${encodeURIComponent(name)}`));
        if (r.deleted === true) queues++;
      }
      const removed = await purge.purgeCoordination(c.brokerTenantUuid).catch((e: unknown) => {
        throw new QueenError('unavailable', `purge KV, locks and timers: ${(e as Error).message}`);
      });
      kv += removed.kv;
      timers += removed.timers;
    }
    state.purged(tenant.slug, queues);
    return { slug: tenant.slug, purged: true, clusters: clusters.length, queues_deleted: queues, kv_deleted: kv, timers_deleted: timers };
  });
  app.get<{ Querystring: { plan?: string } }>('/api/cp/clusters', { schema: { querystring: { type: 'object', properties: { plan: { type: 'string', maxLength: 64 } } } } },
    async (req) => ({ clusters: state.store.clusters(req.query.plan).map(clusterOut) }));
  app.post('/api/cp/clusters', { schema: objectBody }, async (req, reply) => {
    const { cluster, created } = state.createCluster(obj(req.body));
    return reply.code(created ? 201 : 200).send({ ...clusterOut(cluster), created });
  });
  app.get<{ Params: { slug: string } }>('/api/cp/clusters/:slug', { schema: slugParam }, async (req) => {
    const c = state.cluster(req.params.slug);
    return { ...clusterOut(c), limits: state.limits(c), keys: state.store.keysOfCluster(c.id).map(keyOut) };
  });
  app.get<{ Params: { slug: string } }>('/api/cp/clusters/:slug/queues', { schema: slugParam }, async (req) => {
    const c = state.cluster(req.params.slug);
    const list = ok('list queues', await broker(c.brokerTenantUuid, 'GET', '/api/v1/resources/queues'));
    return { cluster_id: c.id, slug: c.slug, queues: list.queues ?? [] };
  });
  // Configure a queue of the cluster as its tenant (the broker's POST /api/v1/configure body,
  // idempotent there): the broker's answer and status; its refusals keep their code.
  app.post<{ Params: { slug: string } }>('/api/cp/clusters/:slug/configure', { schema: { ...slugParam, ...objectBody } }, async (req, reply) => {
    const c = state.cluster(req.params.slug);
    const b = obj(req.body);
    if (typeof b.queue !== 'string' || b.queue === '') throw new QueenError('invalid', 'queue must be a non-empty string');
    const r = await broker(c.brokerTenantUuid, 'POST', '/api/v1/configure', b);
    if (r.status >= 500 || typeof r.body !== 'object' || r.body === null) ok('configure', r);
    return reply.code(r.status).send(r.body);
  });
  // S3 settings (docs/proxy.md#s3-settings): the secret is sealed with QUEEN_ENCRYPTION_KEY and never shown.
  app.put<{ Params: { slug: string } }>('/api/cp/clusters/:slug/s3', { schema: { ...slugParam, ...objectBody } }, async (req) => s3.put(req.params.slug, req.body));
  app.get<{ Params: { slug: string } }>('/api/cp/clusters/:slug/s3', { schema: slugParam }, async (req) => s3.get(req.params.slug));
  app.delete<{ Params: { slug: string } }>('/api/cp/clusters/:slug/s3', { schema: slugParam }, async (req) => s3.delete(req.params.slug));
  app.put<{ Params: { id: string } }>('/api/cp/clusters/:id/overrides', { schema: { ...idParam, ...objectBody } },
    async (req) => clusterOut(state.setOverrides(req.params.id, req.body)));
  app.put<{ Params: { id: string } }>('/api/cp/clusters/:id/status', { schema: { ...idParam, ...objectBody } },
    async (req) => clusterOut(state.setClusterStatus(req.params.id, obj(req.body).status)));
  app.get<{ Params: { id: string } }>('/api/cp/clusters/:id/usage', { schema: idParam }, async (req) => {
    const c = state.cluster(req.params.id);
    return { cluster_id: c.id, slug: c.slug, ...meter.usage(c.id) };
  });
  app.post('/api/cp/activity', { schema: objectBody }, async (req) => {
    const slugs = obj(req.body).slugs;
    if (!Array.isArray(slugs) || slugs.length > 256 || slugs.some((s) => typeof s !== 'string')) throw new QueenError('invalid', 'slugs must be an array of at most 256 strings');
    return {
      activity: (slugs as string[]).map((slug) => {
        const c = state.store.clusterBySlug(slug);
        return { slug, known: c !== undefined, last_request_at: c ? iso(meter.usage(c.id).last_request_at_ms) : null };
      }),
    };
  });
  // People (docs/proxy.md#control-plane): users and their roles per cluster.
  app.post('/api/cp/users', { schema: objectBody }, async (req, reply) => {
    const { user, created } = await state.createUser(obj(req.body));
    return reply.code(created ? 201 : 200).send({ ...userOut(user), created });
  });
  app.get<{ Params: { id: string } }>('/api/cp/users/:id', { schema: idParam }, async (req) => {
    const u = state.findUser(req.params.id);
    return { ...userOut(u), roles: state.store.rolesOfUser(u.id).map((r) => ({ cluster_id: r.clusterId, role: r.role })) };
  });
  app.delete<{ Params: { id: string } }>('/api/cp/users/:id', { schema: idParam }, async (req) => state.deleteUser(req.params.id));
  app.get<{ Params: { slug: string } }>('/api/cp/clusters/:slug/members', { schema: slugParam }, async (req) => {
    const c = state.cluster(req.params.slug);
    return { cluster_id: c.id, members: state.store.membersOfCluster(c.id).map((m) => ({ user_id: m.userId, email: m.email, role: m.role })) };
  });
  app.put<{ Params: { slug: string; user: string } }>('/api/cp/clusters/:slug/members/:user',
    { schema: { params: { type: 'object', properties: { slug: { type: 'string', maxLength: 256 }, user: { type: 'string', maxLength: 320 } }, required: ['slug', 'user'] }, ...objectBody } },
    async (req) => state.grantRole(req.params.user, req.params.slug, obj(req.body).role));
  app.delete<{ Params: { slug: string; user: string } }>('/api/cp/clusters/:slug/members/:user',
    { schema: { params: { type: 'object', properties: { slug: { type: 'string', maxLength: 256 }, user: { type: 'string', maxLength: 320 } }, required: ['slug', 'user'] } } },
    async (req) => state.revokeRole(req.params.user, req.params.slug));
  app.post('/api/cp/keys', { schema: objectBody }, async (req, reply) => reply.code(201).send(keyOut(state.issueKey(obj(req.body)))));
  app.delete<{ Params: { id: string } }>('/api/cp/keys/:id', { schema: idParam }, async (req) => state.revokeKey(req.params.id));
}
