/**
 * The embedded proxy fronting PORT, black box over real sockets (docs/proxy.md): fixed routes,
 * every control-plane route, key issue → use → revoke, tenant isolation, metrics behind the
 * control-plane token, and the head-before-body refusals over a raw socket.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { call, uniqueName, type Answer } from '../helpers/http.js';
import type { BrokerHandle } from '../helpers/broker.js';
import { bootstrap, cp, CP_TOKEN, issueKey, startProxied, withKey, startTwoTenants, type Tenant } from './helpers.js';

const DEFAULT_TENANT = '00000000-0000-0000-0000-000000000001';

/** Sends raw bytes and resolves with everything the server sent until it closed (or `ms` passed). */
function raw(port: number, text: string, ms = 1000): Promise<{ answer: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let answer = '';
    const t = setTimeout(() => { s.destroy(); resolve({ answer, closed: false }); }, ms);
    s.on('data', (d) => (answer += d.toString()));
    s.on('close', () => { clearTimeout(t); resolve({ answer, closed: true }); });
    s.on('error', () => undefined);
    s.write(text);
  });
}

/** Sends raw bytes and resolves with the first complete answer (head and Content-Length body), or what came within `ms`. */
function firstAnswer(port: number, text: string, ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let answer = '';
    const done = () => { clearTimeout(t); s.destroy(); resolve(answer); };
    const t = setTimeout(done, ms);
    s.on('data', (d) => {
      answer += d.toString();
      const end = answer.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(answer.slice(0, end));
      if (end !== -1 && length && Buffer.byteLength(answer.slice(end + 4)) >= Number(length[1])) done();
    });
    s.on('error', () => undefined);
    s.write(text);
  });
}

describe('embedded proxy fronting PORT', () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let beta: Tenant;

  before(async () => ({ b, acme, beta } = await startTwoTenants()));
  after(async () => { await b.stop(); });

  test('boot lines name the layout and the hardened public listener', () => {
    assert.match(b.output(), /single binary: proxy in-process on the public port/);
    assert.match(b.output(), /"tls":false,"msg":"public listener \(hardened\)"/);
  });

  test('/health is open; /metrics* answer 404 without the control-plane token and the text with it', async () => {
    const health = await call(b.url, 'GET', '/health');
    assert.equal(health.status, 200);
    assert.equal(health.headers.get('x-content-type-options'), 'nosniff', 'security headers on forwarded answers');
    assert.equal(health.headers.get('x-frame-options'), 'DENY');
    for (const p of ['/metrics', '/metrics/prometheus']) {
      const none = await call(b.url, 'GET', p);
      assert.equal(none.status, 404);
      assert.deepEqual(none.body, { error: 'not found', code: 'not_found' });
      assert.equal((await call(b.url, 'GET', p, undefined, { authorization: 'Bearer wrong' })).status, 404);
      assert.equal((await call(b.url, 'GET', p, undefined, { authorization: `bearer ${CP_TOKEN}` })).status, 404, 'exact Bearer prefix only');
    }
    await withKey(b.url, acme.key, 'GET', '/api/v1/pop/queue/nothing-here');
    const viaHeader = await call(b.url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN });
    assert.equal(viaHeader.status, 200);
    const viaBearer = await call(b.url, 'GET', '/metrics/prometheus', undefined, { authorization: `Bearer ${CP_TOKEN}` });
    assert.equal(viaBearer.status, 200);
    const acmeTenant = (await cp(b.url, 'GET', `/api/cp/clusters/${acme.slug}`)).body.broker_tenant_uuid as string;
    assert.match(viaBearer.text, new RegExp(`queen_proxy_requests_total\\{tenant="${acmeTenant}",outcome="forwarded"\\} [1-9]`));
  });

  test('control plane: token from the head, 404 for an unknown route, idempotent bootstrap', async () => {
    assert.deepEqual((await cp(b.url, 'GET', '/api/cp/clusters', undefined, 'wrong')).body, { error: 'bad control-plane token', code: 'unauthorized' });
    assert.equal((await call(b.url, 'GET', '/api/cp/clusters', undefined, { authorization: `Bearer ${CP_TOKEN}` })).status, 401, 'Bearer is not accepted on /api/cp');
    const again = await cp(b.url, 'POST', '/api/cp/bootstrap', { tenant: acme.slug, email: `admin@${acme.slug}.test` });
    assert.equal(again.status, 200);
    assert.equal(again.body.tenant_id, acme.tenantId);
    assert.equal(again.body.cluster_id, acme.clusterId);
    assert.equal(again.body.api_key, null, 'the plaintext key is shown once');
    const bad = await call(b.url, 'POST', '/api/cp/tenants', '{"slug":', { 'x-queen-cp-token': CP_TOKEN });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid');
    assert.match(bad.body.error, /^invalid JSON body: /);
  });

  test('control plane: tenants, clusters, overrides, status, usage, activity, keys', async () => {
    const slug = uniqueName('t').toLowerCase();
    const t1 = await cp(b.url, 'POST', '/api/cp/tenants', { slug, name: 'T' });
    assert.equal(t1.status, 201);
    assert.equal((await cp(b.url, 'POST', '/api/cp/tenants', { slug })).status, 200, 'idempotent');
    const badSlug = await cp(b.url, 'POST', '/api/cp/tenants', { slug: 'Not A Label!' });
    assert.deepEqual(badSlug.body, { error: 'new row for relation "tenants" violates check constraint "tenants_slug_check"', code: 'invalid' });
    const c = await cp(b.url, 'POST', '/api/cp/clusters', { tenant: slug, slug: `${slug}-c`, plan: 'dev' });
    assert.equal(c.status, 201);
    assert.match(c.body.broker_tenant_uuid, /^[0-9a-f-]{36}$/);
    assert.equal((await cp(b.url, 'POST', '/api/cp/clusters', { tenant: slug, slug: `${slug}-c` })).status, 200);
    assert.equal((await cp(b.url, 'POST', '/api/cp/clusters', { tenant: 'no-such-tenant', slug: 'x' })).body.code, 'tenant_unknown');
    const list = await cp(b.url, 'GET', '/api/cp/clusters?plan=dev');
    assert.ok(list.body.clusters.some((x: { slug: string }) => x.slug === `${slug}-c`));
    assert.equal((await cp(b.url, 'GET', '/api/cp/clusters/nope')).status, 404);
    const ov = await cp(b.url, 'PUT', `/api/cp/clusters/${c.body.id}/overrides`, { max_req_per_sec: 1000, max_queues: null });
    assert.equal(ov.status, 200);
    assert.deepEqual(ov.body.overrides, { max_req_per_sec: 1000, max_queues: null });
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${c.body.id}/overrides`, { bogus: 1 })).body.code, 'invalid');
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${c.body.id}/status`, { status: 'push_blocked' })).body.status, 'push_blocked');
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${c.body.id}/status`, { status: 'odd' })).status, 400);
    const usage = await cp(b.url, 'GET', `/api/cp/clusters/${acme.clusterId}/usage`);
    assert.equal(usage.status, 200);
    assert.equal(typeof usage.body.requests, 'number');
    const act = await cp(b.url, 'POST', '/api/cp/activity', { slugs: [acme.slug, 'unknown-x'] });
    assert.deepEqual(act.body.activity.map((a: { known: boolean }) => a.known), [true, false]);
    assert.equal((await cp(b.url, 'POST', '/api/cp/activity', { slugs: Array(257).fill('a') })).status, 400);
    // keys: the store's validation messages
    const k = (body: object) => cp(b.url, 'POST', '/api/cp/keys', { cluster_id: c.body.id, name: 'k', ...body });
    assert.equal((await k({ key_hash: 'ABC', scopes: ['read'] })).body.error, 'issue_api_key: key_hash must be 64 lowercase hex chars (sha256)');
    assert.equal((await k({ key_hash: 'a'.repeat(64), scopes: [] })).body.error, 'issue_api_key: at least one scope is required');
    assert.deepEqual((await k({ key_hash: 'c'.repeat(64), scopes: ['read'], name: 'k'.repeat(201) })).body,
      { error: 'issue_api_key: name must be at most 200 characters', code: 'invalid' });
    const long = await cp(b.url, 'POST', '/api/cp/tenants', { slug: uniqueName('long').toLowerCase(), name: 'n'.repeat(201) });
    assert.deepEqual([long.status, long.body], [400, { error: 'create_tenant: name must be at most 200 characters', code: 'invalid' }]);
    assert.equal((await cp(b.url, 'POST', '/api/cp/tenants', { slug: uniqueName('full').toLowerCase(), name: ` ${'n'.repeat(200)} ` })).status, 201, '200 characters once trimmed');
    assert.equal((await k({ key_hash: 'a'.repeat(64), scopes: ['write'] })).body.error, 'issue_api_key: invalid scope write');
    const issued = await k({ key_hash: 'b'.repeat(64), scopes: ['read'] });
    assert.equal(issued.status, 201);
    // a re-run answers the same key; one asking for other scopes or another name is a conflict, not a silent no-op
    const rerun = await k({ key_hash: 'b'.repeat(64), scopes: ['read', 'read'] });
    assert.deepEqual([rerun.status, rerun.body.id], [201, issued.body.id]);
    assert.deepEqual((await k({ key_hash: 'b'.repeat(64), scopes: ['read', 'admin'] })).body,
      { error: 'issue_api_key: this key_hash is already registered with other scopes or another name; revoke it and issue a new key', code: 'conflict' });
    assert.equal((await k({ key_hash: 'b'.repeat(64), scopes: ['read'], name: 'renamed' })).status, 409);
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/keys/${issued.body.id}`)).status, 200);
    assert.deepEqual((await k({ key_hash: 'b'.repeat(64), scopes: ['read'] })).body,
      { error: 'issue_api_key: this key_hash was revoked; issue a new key', code: 'conflict' });
    assert.equal((await cp(b.url, 'DELETE', '/api/cp/keys/00000000-0000-0000-0000-00000000dead')).body.code, 'key_unknown');
    // tenant lifecycle: delete needs status deleting (or force)
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/tenants/${slug}`)).body.code, 'not_deleting');
    assert.equal((await cp(b.url, 'PUT', `/api/cp/tenants/${slug}/status`, { status: 'deleting' })).body.status, 'deleting');
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/tenants/${slug}`)).status, 200);
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/tenants/${slug}`)).body.code, 'tenant_unknown');
    const forced = uniqueName('f').toLowerCase();
    await cp(b.url, 'POST', '/api/cp/tenants', { slug: forced });
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/tenants/${forced}?force=true`)).status, 200);
  });

  test('a key works at once, and its revocation is effective on the next request', async () => {
    const { key, id } = await issueKey(b.url, acme.clusterId, ['produce']);
    const q = uniqueName('rev');
    assert.equal((await withKey(b.url, key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] })).status, 201);
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { authorization: key })).status, 201, 'the bare key');
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { cookie: `queen_session=${key}` })).status, 401, 'never from a cookie');
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/keys/${id}`)).status, 200);
    const after = await withKey(b.url, key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] });
    assert.deepEqual([after.status, after.body], [401, { error: 'unknown or revoked api key', code: 'unauthorized' }]);
    assert.equal((await withKey(b.url, 'qk_live_unknown', 'GET', '/api/v1/pop/queue/x')).body.error, 'unknown or revoked api key');
  });

  test('two tenants with the same queue name never see each other\'s messages, KV or locks', async () => {
    const q = uniqueName('orders');
    const push = (t: Tenant, who: string, extra: Record<string, string> = {}) =>
      withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'p', payload: { who } }] }, extra);
    assert.equal((await push(acme, 'acme')).status, 201);
    assert.equal((await push(beta, 'beta', { 'x-queen-tenant': DEFAULT_TENANT })).status, 201, 'a client-sent x-queen-tenant is stripped');
    const popA = await withKey(b.url, acme.key, 'GET', `/api/v1/pop/queue/${q}?batch=10`, undefined, { 'x-queen-tenant': beta.tenantId });
    const popB = await withKey(b.url, beta.key, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
    assert.deepEqual(popA.body.messages.map((m: { data: { who: string } }) => m.data.who), ['acme']);
    assert.deepEqual(popB.body.messages.map((m: { data: { who: string } }) => m.data.who), ['beta']);
    // an ack naming another tenant's partition is refused like an unknown partition
    const mA = popA.body.messages[0] as { transactionId: string; partitionId: string; leaseId: string };
    const ackA = { transactionId: mA.transactionId, partitionId: mA.partitionId, leaseId: mA.leaseId };
    // extending another tenant's lease renews nothing: it answers like an unknown lease id
    const extended = await withKey(b.url, beta.key, 'POST', `/api/v1/lease/${mA.leaseId}/extend`, { seconds: 3600 });
    assert.deepEqual([extended.status, extended.body.success, extended.body.renewed, extended.body.newExpiresAt], [200, false, 0, null], extended.text);
    const ownExtend = await withKey(b.url, acme.key, 'POST', `/api/v1/lease/${mA.leaseId}/extend`, { seconds: 60 });
    assert.deepEqual([ownExtend.body.success, ownExtend.body.renewed], [true, 1], ownExtend.text);
    const stolen = await withKey(b.url, beta.key, 'POST', '/api/v1/ack', ackA);
    assert.equal(stolen.body[0]?.success ?? stolen.body.success, false, stolen.text);
    const own = await withKey(b.url, acme.key, 'POST', '/api/v1/ack', ackA);
    assert.equal(own.body[0]?.success ?? own.body.success, true, own.text);
    // the default tenant on the same broker sees none of them
    const direct = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
    assert.equal(direct.status, 401, 'PORT is fronted: no key, no access');
    // KV
    const ns = uniqueName('ns');
    assert.equal((await withKey(b.url, acme.key, 'PUT', `/api/v1/kv/${ns}/k`, { value: 'acme', forever: true })).status, 200);
    const kvB = await withKey(b.url, beta.key, 'GET', `/api/v1/kv/${ns}/k`);
    assert.equal(kvB.body.found, false, kvB.text);
    assert.equal((await withKey(b.url, acme.key, 'GET', `/api/v1/kv/${ns}/k`)).body.value, 'acme');
    // locks
    const lock = (t: Tenant) => withKey(b.url, t.key, 'POST', '/api/v1/locks', { operations: [{ op: 'acquire', name: `${ns}-l`, owner: t.slug, ttlSeconds: 30 }] });
    const la = await lock(acme);
    const lb = await lock(beta);
    assert.equal(la.body.results[0].acquired, true, la.text);
    assert.equal(lb.body.results[0].acquired, true, 'the same lock name in another tenant is another lock');
    // deleting a queue acts on the caller's tenant only
    await push(beta, 'beta-2');
    assert.equal((await withKey(b.url, acme.key, 'DELETE', `/api/v1/resources/queues/${q}`)).status, 200);
    const popB2 = await withKey(b.url, beta.key, 'GET', `/api/v1/pop/queue/${q}?batch=10&consumerGroup=g2`);
    assert.ok(popB2.body.messages.length >= 1, 'beta\'s queue survives acme\'s delete');
  });

  test('operator views: each tenant lists, browses and administers its own queues, messages, groups, dead letters and traces only', async () => {
    const q = uniqueName('views');
    // two tenants of their own, so that no other test's rows are in their listings
    const acme = await bootstrap(b.url, uniqueName('va').toLowerCase());
    const beta = await bootstrap(b.url, uniqueName('vb').toLowerCase());
    type Seen = { pid: string; tid: string; dlqId: string };
    const seen = new Map<string, Seen>();
    for (const [t, other] of [[acme, beta], [beta, acme]] as const) {
      const forged = { 'x-queen-tenant': other.tenantId }; // a client-sent tenant changes nothing
      const items = [1, 2].map((n) => ({ queue: q, partition: 'p', payload: { who: t.slug, n }, transactionId: `${t.slug}-${n}` }));
      assert.equal((await withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [...items, { queue: `${q}-${t.slug}`, payload: 0 }] }, forged)).status, 201);
      const pop = await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}?batch=1&consumerGroup=grp-${t.slug}`, undefined, forged);
      const m = pop.body.messages[0] as { transactionId: string; partitionId: string; leaseId: string };
      const dlq = await withKey(b.url, t.key, 'POST', '/api/v1/ack', { ...m, status: 'dlq', consumerGroup: `grp-${t.slug}`, error: `boom-${t.slug}` }, forged);
      assert.equal(dlq.status, 200, dlq.text);
      const tr = await withKey(b.url, t.key, 'POST', '/api/v1/traces', { transactionId: m.transactionId, partitionId: m.partitionId, traceNames: [q], data: { who: t.slug } }, forged);
      assert.equal(tr.status, 201, tr.text);
      const listed = await withKey(b.url, t.key, 'GET', `/api/v1/dlq?queue=${q}`, undefined, forged);
      assert.equal(listed.body.total, 1, listed.text);
      seen.set(t.slug, { pid: m.partitionId, tid: m.transactionId, dlqId: listed.body.messages[0].id });
    }
    for (const [t, other] of [[acme, beta], [beta, acme]] as const) {
      const forged = { 'x-queen-tenant': other.tenantId };
      const get = (path: string) => withKey(b.url, t.key, 'GET', path, undefined, forged);
      const mine = seen.get(t.slug)!;
      const theirs = seen.get(other.slug)!;
      assert.notEqual(mine.pid, theirs.pid, 'one queue name, two partitions');
      const queues = (await get('/api/v1/resources/queues')).body.queues.map((x: { name: string }) => x.name).sort();
      assert.deepEqual(queues, [q, `${q}-${t.slug}`].sort(), `${t.slug} lists its own queues`);
      const detail = await get(`/api/v1/resources/queues/${q}`);
      assert.equal(detail.status, 200, detail.text);
      assert.equal(detail.body.totals.total, 2, detail.text);
      assert.deepEqual((await get(`/api/v1/resources/partitions?queue=${q}`)).body.partitions.map((x: { id: string }) => x.id), [mine.pid]);
      assert.deepEqual((await get('/api/v1/status/queues?limit=1000')).body.queues.map((x: { name: string }) => x.name).sort(), queues);
      const browsed = await get(`/api/v1/messages?queue=${q}`);
      assert.deepEqual(browsed.body.messages.map((x: { data: { who: string } }) => x.data.who), [t.slug, t.slug], browsed.text);
      assert.equal((await get(`/api/v1/messages/${mine.pid}/${mine.tid}`)).body.status, 'dead_letter');
      assert.equal((await get(`/api/v1/messages/${theirs.pid}/${theirs.tid}`)).body.code, 'message_not_found');
      const groups = (await get('/api/v1/consumer-groups')).body.map((g: { name: string }) => g.name);
      assert.ok(groups.includes(`grp-${t.slug}`) && !groups.includes(`grp-${other.slug}`), JSON.stringify(groups));
      const foreign = await get(`/api/v1/consumer-groups/grp-${other.slug}`);
      assert.deepEqual([foreign.status, foreign.body], [200, {}], 'another tenant\'s group reads no queue of this tenant');
      assert.deepEqual(Object.keys((await get(`/api/v1/consumer-groups/grp-${t.slug}`)).body), [q], 'its own group reads its queue');
      const dead = await get('/api/v1/dlq');
      assert.deepEqual(dead.body.messages.map((x: { errorMessage: string }) => x.errorMessage), [`boom-${t.slug}`], dead.text);
      assert.equal(dead.body.total, 1);
      const traces = await get(`/api/v1/traces/${mine.pid}/${mine.tid}`);
      assert.deepEqual(traces.body.traces.map((x: { data: { who: string } }) => x.data.who), [t.slug]);
      assert.deepEqual((await get(`/api/v1/traces/${theirs.pid}/${theirs.tid}`)).body.traces, []);
      const stolenTrace = await withKey(b.url, t.key, 'POST', '/api/v1/traces', { transactionId: theirs.tid, partitionId: theirs.pid, data: 1 });
      assert.equal(stolenTrace.body.code, 'message_not_found');
      // administration of another tenant's rows answers as for unknown ones
      assert.equal((await withKey(b.url, t.key, 'POST', `/api/v1/dlq/${theirs.dlqId}/replay`, {})).body.code, 'dlq_not_found');
      assert.equal((await withKey(b.url, t.key, 'DELETE', `/api/v1/messages/${theirs.pid}/${theirs.tid}`)).body.code, 'message_not_found');
      const named = await get(`/api/v1/traces/by-name/${q}`);
      assert.deepEqual([named.body.total, named.body.traces.map((x: { data: { who: string } }) => x.data.who)], [1, [t.slug]], named.text);
      const names = (await get('/api/v1/traces/names?limit=1000')).body.trace_names.map((x: { trace_name: string; trace_count: number }) => [x.trace_name, x.trace_count]);
      assert.deepEqual(names.filter(([n]: [string]) => n === q), [[q, 1]], 'the name counts this tenant\'s events only');
      assert.equal((await get('/api/v1/analytics/queue-lag')).body.code, 'not_tenanted', 'process-wide routes stay the default tenant\'s');
    }
    // acme purges its dead letters and replays nothing of beta's; beta's dead letter is intact
    assert.equal((await withKey(b.url, acme.key, 'DELETE', `/api/v1/dlq?queue=${q}`)).body.deleted, 1);
    assert.equal((await withKey(b.url, beta.key, 'GET', `/api/v1/dlq?queue=${q}`)).body.total, 1);
    const replay = await withKey(b.url, beta.key, 'POST', `/api/v1/dlq/${seen.get(beta.slug)!.dlqId}/replay`, {});
    assert.equal(replay.body.result, 'moved', replay.text);
    const back = await withKey(b.url, beta.key, 'GET', `/api/v1/messages?queue=${q}`);
    assert.equal(back.body.messages.length, 3, 'the replay went into beta\'s queue');
    assert.equal((await withKey(b.url, acme.key, 'GET', `/api/v1/messages?queue=${q}`)).body.messages.length, 2);
  });

  test('raw socket: a refused control-plane request with Content-Length 50000000 and no body gets a complete 401 within a second', async () => {
    const started = Date.now();
    const r = await raw(b.port, 'POST /api/cp/tenants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\nx-queen-cp-token: wrong\r\n\r\n');
    assert.match(r.answer, /^HTTP\/1\.1 401 /);
    const body = r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4);
    assert.deepEqual(JSON.parse(body), { error: 'bad control-plane token', code: 'unauthorized' });
    assert.ok(r.closed, 'the connection is closed, the body never read');
    assert.ok(Date.now() - started < 1000);
    const big = await raw(b.port, `POST /api/cp/tenants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024 + 1}\r\nx-queen-cp-token: ${CP_TOKEN}\r\n\r\n`);
    assert.match(big.answer, /^HTTP\/1\.1 413 /);
    assert.match(big.answer, /"control-plane request body over 1 MiB","code":"payload_too_large"/);
    const data = await raw(b.port, 'POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n');
    assert.match(data.answer, /^HTTP\/1\.1 401 /, 'the data plane refuses from the head too');
  });

  test('every answer carries the security headers: forwarded, data-plane refusals, the proxy\'s own routes; refusals keep their code and headers', async () => {
    const secured = (h: Headers, what: string) => {
      assert.equal(h.get('x-content-type-options'), 'nosniff', what);
      assert.equal(h.get('x-frame-options'), 'DENY', what);
      assert.equal(h.get('referrer-policy'), 'no-referrer', what);
      assert.equal(h.get('cross-origin-resource-policy'), 'same-origin', what);
      assert.equal(h.get('strict-transport-security'), null, `${what}: no HSTS without TLS`);
    };
    const q = uniqueName('sec');
    const pushed = await withKey(b.url, acme.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] });
    assert.equal(pushed.status, 201, pushed.text);
    secured(pushed.headers, 'forwarded push');
    assert.match(pushed.headers.get('content-type') ?? '', /^application\/json/, 'the broker\'s own headers stay');
    const refusals: [Promise<Answer>, number, string, string][] = [
      [call(b.url, 'GET', '/api/v1/pop/queue/x'), 401, 'unauthorized', 'no credential'],
      [withKey(b.url, 'qk_live_unknown', 'GET', '/api/v1/pop/queue/x'), 401, 'unauthorized', 'unknown key'],
      [withKey(b.url, acme.key, 'GET', '/api/v1/system/maintenance'), 404, 'route_blocked', 'blocked route'],
      [call(b.url, 'GET', '/api/v1//x'), 400, 'invalid_path', 'empty segment'],
      [call(b.url, 'GET', '/auth/me'), 401, 'unauthorized', 'session route'],
      [call(b.url, 'GET', '/api/cp/tenants', undefined, { 'x-queen-cp-token': 'wrong' }), 401, 'unauthorized', 'control plane'],
    ];
    for (const [p, status, code, what] of refusals) {
      const r = await p;
      assert.equal(r.status, status, `${what}: ${r.text}`);
      assert.equal(r.body.code, code, what);
      assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8', what);
      secured(r.headers, what);
    }
    // The body cap, from the head: 413 with Connection: close, complete within a second, the body never read.
    const started = Date.now();
    const big = await raw(b.port, `POST /api/v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acme.key}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n`);
    assert.match(big.answer, /^HTTP\/1\.1 413 /);
    assert.match(big.answer, /\r\nconnection: close\r\n/i);
    assert.match(big.answer, /\r\nx-frame-options: DENY\r\n/i);
    assert.deepEqual(JSON.parse(big.answer.slice(big.answer.indexOf('\r\n\r\n') + 4)), { error: 'request body over 16777216 bytes', code: 'payload_too_large' });
    assert.ok(big.closed, 'the connection is closed');
    assert.ok(Date.now() - started < 1000);
    // A refused head without a key: the complete 401 within a second.
    const t0 = Date.now();
    const none = await firstAnswer(b.port, 'POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n');
    assert.match(none, /^HTTP\/1\.1 401 /);
    assert.equal(JSON.parse(none.slice(none.indexOf('\r\n\r\n') + 4)).code, 'unauthorized');
    assert.ok(Date.now() - t0 < 1000);
  });

  test('raw socket: a missing or repeated Host answers 400 invalid_request on the proxy listener, as on PORT', async () => {
    for (const head of ['GET /health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n', 'GET /health HTTP/1.1\r\n\r\n',
      `POST /api/v1/push HTTP/1.1\r\nHost: a\r\nhost: b\r\nAuthorization: Bearer ${acme.key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`]) {
      const r = await raw(b.port, head);
      assert.match(r.answer, /^HTTP\/1\.1 400 /, head);
      assert.match(r.answer, /\r\nx-frame-options: DENY\r\n/i, 'the listener\'s security headers');
      const body = JSON.parse(r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4)) as { code: string; error: string };
      assert.equal(body.code, 'invalid_request', r.answer);
      assert.match(body.error, /Host/);
      assert.ok(r.closed, 'the connection is closed');
    }
  });

  test('raw socket: Expect: 100-continue is answered 100 only once the head passed its checks; a refusal closes without inviting the body', async () => {
    const expect = (path: string, headers: string, length: number) =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n${headers}Content-Length: ${length}\r\n\r\n`;
    for (const [what, head, status] of [
      ['no key', expect('/api/v1/push', '', 50_000_000), 401],
      ['wrong control-plane token', expect('/api/cp/tenants', 'x-queen-cp-token: wrong\r\n', 1000), 401],
      ['over the body cap', expect('/api/v1/push', `Authorization: Bearer ${acme.key}\r\n`, 50_000_000), 413],
      ['control plane over 1 MiB', expect('/api/cp/tenants', `x-queen-cp-token: ${CP_TOKEN}\r\n`, 2 * 1024 * 1024), 413],
    ] as const) {
      const started = Date.now();
      const r = await raw(b.port, head);
      assert.doesNotMatch(r.answer, /100 Continue/, `${what}: the body is not invited`);
      assert.match(r.answer, new RegExp(`^HTTP/1\\.1 ${status} `), `${what}: ${r.answer}`);
      assert.ok(r.closed, `${what}: the connection is closed`);
      assert.ok(Date.now() - started < 1000, what);
    }
    // Passing heads: 100 Continue, then the body, then the answer (data plane and control plane).
    const q = uniqueName('expect');
    const body = JSON.stringify({ items: [{ queue: q, payload: { n: 1 } }] });
    for (const [path, headers, text, status] of [
      ['/api/v1/push', `Authorization: Bearer ${acme.key}\r\n`, body, 201],
      ['/api/cp/tenants', `x-queen-cp-token: ${CP_TOKEN}\r\n`, '{}', 400],
    ] as const) {
      const answer = await new Promise<string>((resolve, reject) => {
        const s = net.connect(b.port, '127.0.0.1');
        let got = '';
        let sent = false;
        const t = setTimeout(() => { s.destroy(); reject(new Error(`no answer: ${JSON.stringify(got)}`)); }, 5000);
        s.on('data', (d) => {
          got += d.toString();
          if (!sent && got.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) { sent = true; s.write(text); }
          const rest = got.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
          const end = rest.indexOf('\r\n\r\n');
          const length = /\r\ncontent-length: (\d+)\r\n/i.exec(rest.slice(0, end + 2));
          if (end !== -1 && length && Buffer.byteLength(rest.slice(end + 4)) >= Number(length[1])) { clearTimeout(t); s.destroy(); resolve(got); }
        });
        s.on('error', reject);
        s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n${headers}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n`);
      });
      assert.match(answer, new RegExp(`^HTTP/1\\.1 100 Continue\\r\\n\\r\\nHTTP/1\\.1 ${status} `), `${path}: ${answer}`);
    }
    const popped = await withKey(b.url, acme.key, 'GET', `/api/v1/pop/queue/${q}?autoAck=true`);
    assert.deepEqual(popped.body.messages.map((m: { data: unknown }) => m.data), [{ n: 1 }], 'the invited body was pushed');
  });

  test('a transaction is Produce, but one that acks needs consume too: a produce-only key cannot ack through it', async () => {
    const q = uniqueName('txack');
    assert.equal((await withKey(b.url, acme.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }, { queue: q, payload: { n: 2 } }] })).status, 201);
    const leased = await withKey(b.url, acme.key, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=g&batch=2`);
    const [m1, m2] = leased.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
    const producer = await issueKey(b.url, acme.clusterId, ['produce', 'read']);
    const ack = (m: typeof m1) => ({ type: 'ack', transactionId: m!.transactionId, partitionId: m!.partitionId, leaseId: m!.leaseId, status: 'completed', consumerGroup: 'g' });
    const refused = await withKey(b.url, producer.key, 'POST', '/api/v1/transaction', { operations: [ack(m1), { type: 'push', items: [{ queue: q, payload: { n: 3 } }] }] });
    assert.deepEqual([refused.status, refused.body.code], [403, 'forbidden'], refused.text);
    assert.match(refused.body.error, /consume/);
    const pushOnly = await withKey(b.url, producer.key, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: q, payload: { n: 4 } }] }] });
    assert.equal(pushOnly.status, 200, pushOnly.text);
    assert.equal(pushOnly.body.success, true, 'a transaction of pushes stays Produce');
    const full = await withKey(b.url, acme.key, 'POST', '/api/v1/transaction', { operations: [ack(m1), ack(m2)] });
    assert.equal(full.body.success, true, `the consuming key acks both, so the refused one acked nothing: ${full.text}`);
    const rest = await withKey(b.url, acme.key, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=g&batch=10&autoAck=true`);
    assert.deepEqual(rest.body.messages.map((m: { data: unknown }) => m.data), [{ n: 4 }], 'the refused transaction pushed nothing either');
  });

  test('/auth/me without a cookie is 401 no session; an unknown /api path is blocked before authentication', async () => {
    assert.deepEqual((await call(b.url, 'GET', '/auth/me')).body, { error: 'no session', code: 'unauthorized' });
    assert.deepEqual((await call(b.url, 'GET', '/api/v2/anything')).body, { error: 'not available', code: 'route_blocked' });
  });
});

describe('verified relays with the proxy fronting PORT', () => {
  test('x-queen-eph-fwd with the right QUEEN_RAFT_TOKEN reaches the broker router; with a wrong one it is an ordinary client', async () => {
    const b = await startProxied({ QUEEN_RAFT_TOKEN: 'raft-relay-token' });
    try {
      const relay = await call(b.url, 'GET', '/api/v1/ephemeral/queues', undefined, { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': 'raft-relay-token' });
      assert.equal(relay.status, 200, relay.text);
      const forged = await call(b.url, 'GET', '/api/v1/ephemeral/queues', undefined, { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': 'wrong' });
      assert.equal(forged.status, 401, 'no key: refused by the proxy');
    } finally {
      await b.stop();
    }
  });
});

describe('control plane without QUEEN_PROXY_CP_TOKEN', () => {
  test('every /api/cp route and /metrics answer 404 not_found', async () => {
    const b = await startProxied({ QUEEN_PROXY_CP_TOKEN: '' });
    try {
      for (const [m, p] of [['POST', '/api/cp/bootstrap'], ['GET', '/api/cp/clusters'], ['DELETE', '/api/cp/keys/x'], ['PUT', '/api/cp/clusters/x/s3'], ['GET', '/api/cp/clusters/x/s3']] as const) {
        assert.deepEqual((await cp(b.url, m, p, m === 'POST' ? {} : undefined, '')).body, { error: 'not found', code: 'not_found' });
      }
      assert.equal((await call(b.url, 'GET', '/metrics/prometheus', undefined, { authorization: 'Bearer ' })).status, 404);
    } finally {
      await b.stop();
    }
  });
});
