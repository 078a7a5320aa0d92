/**
 * The cluster console on the proxy listener (docs/proxy.md#console; public reference
 * `proxy/src/console.rs`): `/console` serves a small self-contained page (its script at
 * `/console/app.js`, no external asset) for people with a session; `/api/console/*` is its API.
 * An API key is never a console credential; without a session `/console` redirects to the login
 * page and `/api/console/*` answers `401`.
 *
 * API (JSON, proxy envelope; writes pass the cross-site origin check in src/proxy/server.ts):
 * - `GET /api/console/clusters` — the clusters the person may select, with their role.
 * - `GET|POST /api/console/clusters/:cluster/keys` — list, or create `{name, scopes}` (the plaintext
 *   `api_key` is in this answer only); `DELETE …/keys/:id` revokes. Cluster admins only.
 * - `GET /api/console/clusters/:cluster/members`, `PUT …/members` `{email, role}` (grant or
 *   change; an unknown e-mail becomes a user of the cluster's tenant without a password),
 *   `DELETE …/members/:user`. Cluster admins only.
 *
 * The queues dashboard itself is the broker's, served at `/` through the data plane with the same
 * session; the console's picker stores the acting cluster where the dashboard reads it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { generateKey, hashKey } from '../auth/proxy/api-keys.js';
import { resolveRole, selectableClusters } from '../auth/proxy/roles.js';
import type { SessionTokens } from '../auth/proxy/sessions.js';
import type { ClusterRow, ProxyState } from '../auth/proxy/state.js';
import type { ProxyConfig, Role } from '../config/proxy.js';
import { QueenError } from '../errors.js';
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS } from './console-assets.js';
import { keyOut } from './cp.js';
import { sessionCredential, verifySession, type Session } from './sessions.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type Params = { cluster: string; id?: string; user?: string };

/** Fastify plugin: `/console`, `/console/app.js`, `/console/app.css` and `/api/console/*`. */
export async function consoleRoutes(app: FastifyInstance, deps: { config: ProxyConfig; state: ProxyState; tokens: SessionTokens }): Promise<void> {
  const { config, state, tokens } = deps;
  const files = { html: CONSOLE_HTML, js: CONSOLE_JS, css: CONSOLE_CSS };

  const session = async (req: FastifyRequest, path: string): Promise<Session | undefined> => {
    const credential = sessionCredential(req, path, config);
    if (!credential) return undefined;
    const s = await verifySession(tokens, state, credential);
    return s?.user ? s : undefined;
  };

  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!(await session(req, '/console'))) {
      return reply.code(303).header('cache-control', 'no-store').header('location', `/auth/login?next=${encodeURIComponent(req.url.split('?')[0]!)}`).send();
    }
    return reply.header('cache-control', 'no-store').header('content-security-policy', CSP).type('text/html; charset=utf-8').send(files.html);
  };
  app.get('/console', page);
  app.get('/console/app.js', async (_req, reply) => reply.header('cache-control', 'no-cache').type('text/javascript; charset=utf-8').send(files.js));
  app.get('/console/app.css', async (_req, reply) => reply.header('cache-control', 'no-cache').type('text/css; charset=utf-8').send(files.css));
  app.get('/console/*', page);

  /** The session of an `/api/console` request. @throws QueenError `unauthorized` */
  const need = async (req: FastifyRequest): Promise<Session & { user: NonNullable<Session['user']> }> => {
    const s = await session(req, '/api/console');
    if (!s) throw new QueenError('unauthorized', 'a console session is required: sign in at /auth/login');
    return s as Session & { user: NonNullable<Session['user']> };
  };
  /** The cluster of the route with the caller's role on it, admin required unless `anyRole`. @throws QueenError */
  const clusterFor = async (req: FastifyRequest<{ Params: Params }>, anyRole = false): Promise<{ cluster: ClusterRow; role: Role; s: Session }> => {
    const s = await need(req);
    const cluster = state.store.clusterById(req.params.cluster) ?? state.store.clusterBySlug(req.params.cluster.toLowerCase());
    if (!cluster) throw new QueenError('cluster_unknown', 'unknown cluster');
    const r = resolveRole(s.claims, s.user, cluster, state.store, config.operatorEnabled);
    if (!r.ok) throw new QueenError(r.status === 401 ? 'unauthorized' : 'forbidden', r.error);
    if (!anyRole && r.role !== 'admin') throw new QueenError('forbidden', 'cluster admins only');
    return { cluster, role: r.role, s };
  };
  const p = { params: { type: 'object', properties: { cluster: { type: 'string', maxLength: 256 }, id: { type: 'string', maxLength: 256 }, user: { type: 'string', maxLength: 320 } }, required: ['cluster'] } } as const;

  app.get('/api/console/clusters', async (req, reply) => {
    const s = await need(req);
    const list = selectableClusters(s.user, state.store, config.operatorEnabled);
    return reply.header('cache-control', 'no-store').send({ clusters: list.map(({ cluster, role }) => ({ id: cluster.id, slug: cluster.slug, status: cluster.status, plan: cluster.plan, role })) });
  });
  app.get<{ Params: Params }>('/api/console/clusters/:cluster/keys', { schema: p }, async (req, reply) => {
    const { cluster } = await clusterFor(req);
    return reply.header('cache-control', 'no-store').send({ keys: state.store.keysOfCluster(cluster.id).map(keyOut) });
  });
  app.post<{ Params: Params; Body: { name?: unknown; scopes?: unknown } }>('/api/console/clusters/:cluster/keys', { schema: { ...p, body: { type: 'object' } } }, async (req, reply) => {
    const { cluster, s } = await clusterFor(req);
    const plaintext = generateKey(config.keyEnv);
    const row = state.issueKey({ cluster_id: cluster.id, name: req.body.name, key_hash: hashKey(plaintext), scopes: req.body.scopes });
    req.log.info({ user: s.user!.id, cluster: cluster.slug, key_id: row.id }, 'console: api key created');
    return reply.code(201).header('cache-control', 'no-store').send({ ...keyOut(row), api_key: plaintext });
  });
  app.delete<{ Params: Params }>('/api/console/clusters/:cluster/keys/:id', { schema: p }, async (req) => {
    const { cluster } = await clusterFor(req);
    const key = state.store.keyById(req.params.id ?? '');
    if (!key || key.clusterId !== cluster.id) throw new QueenError('key_unknown', `no api key ${req.params.id ?? ''} on this cluster`);
    return state.revokeKey(key.id);
  });
  app.get<{ Params: Params }>('/api/console/clusters/:cluster/members', { schema: p }, async (req, reply) => {
    const { cluster } = await clusterFor(req);
    return reply.header('cache-control', 'no-store').send({ members: state.store.membersOfCluster(cluster.id).map((m) => ({ user_id: m.userId, email: m.email, role: m.role })) });
  });
  app.put<{ Params: Params; Body: { email?: unknown; role?: unknown } }>('/api/console/clusters/:cluster/members', { schema: { ...p, body: { type: 'object' } } }, async (req) => {
    const { cluster } = await clusterFor(req);
    if (typeof req.body.email !== 'string') throw new QueenError('invalid', 'email is required');
    if (!state.store.userByEmail(req.body.email.trim().toLowerCase())) await state.createUser({ tenant: cluster.tenantId, email: req.body.email });
    return state.grantRole(req.body.email, cluster.id, req.body.role);
  });
  app.delete<{ Params: Params }>('/api/console/clusters/:cluster/members/:user', { schema: p }, async (req) => {
    const { cluster, s } = await clusterFor(req);
    const target = state.findUser(req.params.user ?? '');
    if (target.id === s.user!.id) throw new QueenError('invalid', 'you cannot remove your own role');
    return state.revokeRole(target.id, cluster.id);
  });
}
