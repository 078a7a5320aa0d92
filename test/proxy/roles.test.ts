/**
 * Roles per cluster on the embedded proxy, black box (docs/proxy.md#roles): one walk of the
 * role × route-class matrix over real requests, the live operator, the acting cluster
 * (`x-queen-act-cluster`), a bearer scoped to cluster A used on cluster B, no role, and the
 * control-plane routes that create users and grant, change and revoke roles.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName, type Answer } from '../helpers/http.js';
import { bootstrap, cp, startProxied, type Tenant } from './helpers.js';
import { login, person, SESSION_ENV, withCookie } from './session-helpers.js';

const PASSWORD = 'matrix-password-42';

describe('roles per cluster', () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let clusterB: { id: string; slug: string };
  const cookies: Record<string, string> = {};

  before(async () => {
    b = await startProxied({ ...SESSION_ENV, QUEEN_PROXY_OPERATOR_ENABLED: 'true' });
    acme = await bootstrap(b.url, uniqueName('acme').toLowerCase());
    const c = await cp(b.url, 'POST', '/api/cp/clusters', { tenant: acme.slug, slug: `${acme.slug}-b` });
    assert.equal(c.status, 201, c.text);
    clusterB = { id: c.body.id, slug: c.body.slug };
    for (const role of ['admin', 'producer', 'consumer', 'viewer']) {
      await person(b.url, acme.slug, `${role}@${acme.slug}.test`, PASSWORD, { cluster: acme.slug, role });
      cookies[role] = await login(b.url, `${role}@${acme.slug}.test`, PASSWORD);
    }
    const op = await cp(b.url, 'POST', '/api/cp/users', { tenant: acme.slug, email: `op@${acme.slug}.test`, password: PASSWORD, is_operator: true });
    assert.equal(op.status, 201, op.text);
    cookies.operator = await login(b.url, `op@${acme.slug}.test`, PASSWORD);
    await person(b.url, acme.slug, `nobody@${acme.slug}.test`, PASSWORD);
    cookies.nobody = await login(b.url, `nobody@${acme.slug}.test`, PASSWORD);
  });
  after(async () => { await b.stop(); });

  test('the role × route-class matrix, walked over real requests', async () => {
    const q = uniqueName('matrix');
    const ns = uniqueName('ns');
    const requests: Record<string, [string, string, unknown?]> = {
      produce: ['POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }],
      consume: ['GET', `/api/v1/pop/queue/${q}?wait=false`],
      queue_admin: ['POST', '/api/v1/configure', { queue: q }],
      read: ['GET', '/api/v1/resources/queues'],
      'gated read': ['GET', `/api/v1/kv/${ns}/k`],
      'gated grow': ['PUT', `/api/v1/kv/${ns}/k`, { value: 'v', forever: true }],
      'gated open': ['DELETE', `/api/v1/kv/${ns}/k`],
      operator: ['GET', '/api/v1/status'],
      blocked: ['GET', '/api/v1/system/anything'],
    };
    const allowed: Record<string, string[]> = {
      admin: ['produce', 'consume', 'queue_admin', 'read', 'gated read', 'gated grow', 'gated open'],
      producer: ['produce', 'read', 'gated read', 'gated grow', 'gated open'],
      consumer: ['consume', 'read', 'gated read', 'gated grow', 'gated open'],
      viewer: ['read', 'gated read'],
      operator: ['produce', 'consume', 'queue_admin', 'read', 'gated read', 'gated grow', 'gated open', 'operator'],
    };
    const seen: Record<string, string[]> = {};
    for (const who of Object.keys(allowed)) {
      seen[who] = [];
      for (const [cls, [method, path, body]] of Object.entries(requests)) {
        const r: Answer = await withCookie(b.url, cookies[who]!, method, path, body, { origin: b.url, 'x-queen-act-cluster': acme.slug });
        if (r.status < 400 || (r.status === 404 && r.body?.code !== 'route_blocked')) {
          seen[who].push(cls);
        } else if (cls === 'operator' || cls === 'blocked') {
          assert.deepEqual([r.status, r.body], [404, { error: 'not available', code: 'route_blocked' }], `${who} ${cls}`);
        } else {
          assert.deepEqual([r.status, r.body], [403, { error: 'operation not permitted for this credential', code: 'forbidden' }], `${who} ${cls}: ${r.text}`);
        }
      }
    }
    assert.deepEqual(seen, allowed);
  });

  test('no role on the cluster → 403; an unknown acting cluster → 421; two clusters and no x-queen-act-cluster → 421', async () => {
    const none = await withCookie(b.url, cookies.nobody!, 'GET', '/api/v1/resources/queues', undefined, { 'x-queen-act-cluster': acme.slug });
    assert.deepEqual([none.status, none.body], [403, { error: 'no role on this cluster', code: 'forbidden' }]);
    const unknown = await withCookie(b.url, cookies.admin!, 'GET', '/api/v1/resources/queues', undefined, { 'x-queen-act-cluster': 'no-such-cluster' });
    assert.deepEqual([unknown.status, unknown.body.code], [421, 'cluster_unknown']);
    const ambiguous = await withCookie(b.url, cookies.operator!, 'GET', '/api/v1/resources/queues');
    assert.deepEqual([ambiguous.status, ambiguous.body.code], [421, 'cluster_unknown'], 'the operator selects among every cluster');
  });

  test('x-queen-act-cluster picks the cluster: each cluster is its own broker tenant', async () => {
    const email = `multi@${acme.slug}.test`;
    await person(b.url, acme.slug, email, PASSWORD, { cluster: acme.slug, role: 'admin' });
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${clusterB.slug}/members/${encodeURIComponent(email)}`, { role: 'producer' })).status, 200);
    const cookie = await login(b.url, email, PASSWORD);
    const me = await withCookie(b.url, cookie, 'GET', '/auth/me', undefined, { 'x-queen-act-cluster': clusterB.slug });
    assert.deepEqual(me.body.clusters.map((c: { slug: string; role: string }) => [c.slug, c.role]), [[acme.slug, 'admin'], [clusterB.slug, 'producer']]);
    assert.deepEqual(me.body.acting_cluster, { id: clusterB.id, slug: clusterB.slug, role: 'producer' });
    const q = uniqueName('act');
    const push = await withCookie(b.url, cookie, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'on-b' }] }, { origin: b.url, 'x-queen-act-cluster': clusterB.id });
    assert.equal(push.status, 201, push.text);
    const popB = await withCookie(b.url, cookie, 'GET', `/api/v1/pop/queue/${q}?wait=false`, undefined, { 'x-queen-act-cluster': clusterB.slug });
    assert.equal(popB.status, 403, 'producer on B cannot consume');
    const popA = await withCookie(b.url, cookie, 'GET', `/api/v1/pop/queue/${q}?wait=false`, undefined, { 'x-queen-act-cluster': acme.slug });
    assert.equal(popA.status, 204, `cluster A does not see B's queue: ${popA.status} ${popA.text}`);
    assert.equal((await withCookie(b.url, cookie, 'GET', '/api/v1/resources/queues')).status, 421, 'two clusters, none named');
  });

  test('a bearer scoped to cluster A used on cluster B → 403 token not valid for this cluster', async () => {
    const email = `scoped@${acme.slug}.test`;
    await person(b.url, acme.slug, email, PASSWORD, { cluster: acme.slug, role: 'admin' });
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${clusterB.slug}/members/${encodeURIComponent(email)}`, { role: 'admin' })).status, 200);
    const cookie = await login(b.url, email, PASSWORD);
    const st = await withCookie(b.url, cookie, 'GET', `/auth/session-token?cluster=${acme.slug}`);
    assert.equal(st.status, 200, st.text);
    assert.deepEqual([st.body.cluster_id, st.body.role], [acme.clusterId, 'admin']);
    const auth = { authorization: `Bearer ${st.body.token as string}` };
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, auth)).status, 200, 'the token names its cluster');
    const onB = await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { ...auth, 'x-queen-act-cluster': clusterB.slug });
    assert.deepEqual([onB.status, onB.body], [403, { error: 'token not valid for this cluster', code: 'forbidden' }]);
    const viewerToken = (await withCookie(b.url, cookies.viewer!, 'GET', `/auth/session-token?cluster=${acme.slug}`)).body;
    assert.equal(viewerToken.role, 'viewer');
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'x', payload: 1 }] }, { authorization: `Bearer ${viewerToken.token as string}` })).status, 403);
    const noRole = await withCookie(b.url, cookies.nobody!, 'GET', `/auth/session-token?cluster=${acme.slug}`);
    assert.deepEqual([noRole.status, noRole.body.error], [403, 'no role on this cluster']);
  });

  test('control plane: grant, change, list and revoke a role; refusals in the envelope', async () => {
    const email = `member@${acme.slug}.test`;
    await person(b.url, acme.slug, email, PASSWORD);
    const path = `/api/cp/clusters/${acme.slug}/members/${encodeURIComponent(email)}`;
    assert.equal((await cp(b.url, 'PUT', path, { role: 'viewer' })).body.role, 'viewer');
    const cookie = await login(b.url, email, PASSWORD);
    const q = uniqueName('grant');
    const push = () => withCookie(b.url, cookie, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { origin: b.url, 'x-queen-act-cluster': acme.slug });
    assert.equal((await push()).status, 403);
    assert.equal((await cp(b.url, 'PUT', path, { role: 'producer' })).body.role, 'producer');
    assert.equal((await push()).status, 201, 'the change is seen by the next request');
    const members = await cp(b.url, 'GET', `/api/cp/clusters/${acme.slug}/members`);
    assert.ok(members.body.members.some((m: { email: string; role: string }) => m.email === email && m.role === 'producer'));
    assert.equal((await cp(b.url, 'DELETE', path)).body.revoked, true);
    assert.equal((await cp(b.url, 'DELETE', path)).body.revoked, false, 'idempotent');
    assert.deepEqual((await push()).body, { error: 'no role on this cluster', code: 'forbidden' });
    assert.deepEqual((await cp(b.url, 'PUT', path, { role: 'root' })).body, { error: 'role must be one of admin, producer, consumer, viewer', code: 'invalid' });
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${acme.slug}/members/ghost@x.test`, { role: 'viewer' })).body.code, 'user_unknown');
    const other = await bootstrap(b.url, uniqueName('other').toLowerCase());
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${other.slug}/members/${encodeURIComponent(email)}`, { role: 'viewer' })).body.code, 'conflict', 'another tenant');
    assert.deepEqual((await cp(b.url, 'POST', '/api/cp/users', { tenant: acme.slug, email: 'no-at-sign' })).body, { error: 'email must contain @', code: 'invalid' });
    assert.equal((await cp(b.url, 'POST', '/api/cp/users', { tenant: acme.slug, email: `short@${acme.slug}.test`, password: 'short' })).body.code, 'invalid');
    const got = await cp(b.url, 'GET', `/api/cp/users/${encodeURIComponent(email)}`);
    assert.equal(got.body.password_set, true);
    assert.equal(JSON.stringify(got.body).includes('$2'), false, 'never the hash');
  });
});
