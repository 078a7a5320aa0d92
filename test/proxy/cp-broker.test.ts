/**
 * Control-plane routes that reach into the broker (docs/proxy.md#control-plane): a cluster's queues,
 * configuring a queue as the cluster's tenant, and purging a tenant in status `deleting` before it
 * is deleted. Each with its codes, idempotency, the 1 MiB cap and the token read from the head
 * before any body.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { within } from '../helpers/wait.js';
import { bootstrap, cp, CP_TOKEN, withKey, startTwoTenants, type Tenant } from './helpers.js';

/** Sends raw bytes; resolves with what the server sent until it closed (or `ms` passed). */
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

const names = (body: { queues: { name: string }[] }) => body.queues.map((q) => q.name).sort();

describe('control plane into the broker', () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let beta: Tenant;

  before(async () => ({ b, acme, beta } = await startTwoTenants()));
  after(async () => { await b.stop(); });

  test('POST /api/cp/clusters/:slug/configure and GET /api/cp/clusters/:slug/queues act on that cluster only', async () => {
    const first = await within(cp(b.url, 'POST', `/api/cp/clusters/${acme.slug}/configure`, { queue: 'orders', options: { leaseTime: 120 } }), 10_000, 'configure');
    assert.ok(first.status >= 200 && first.status < 300, first.text);
    const again = await within(cp(b.url, 'POST', `/api/cp/clusters/${acme.slug}/configure`, { queue: 'orders', options: { leaseTime: 120 } }), 10_000, 'configure again');
    assert.equal(again.status, first.status, 'idempotent');
    const listed = await within(cp(b.url, 'GET', `/api/cp/clusters/${acme.slug}/queues`), 10_000, 'queues');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.cluster_id, acme.clusterId);
    assert.deepEqual(names(listed.body), ['orders']);
    const detail = await within(withKey(b.url, acme.key, 'GET', '/api/v1/resources/queues/orders'), 10_000, 'detail');
    assert.equal(detail.status, 200, 'the queue belongs to the cluster’s tenant');
    assert.deepEqual(names((await within(cp(b.url, 'GET', `/api/cp/clusters/${beta.slug}/queues`), 10_000, 'beta queues')).body), []);
    assert.equal((await withKey(b.url, beta.key, 'GET', '/api/v1/resources/queues/orders')).status, 404, 'not the other tenant’s');
    // refusals
    assert.deepEqual((await cp(b.url, 'POST', `/api/cp/clusters/${acme.slug}/configure`, { options: {} })).body.code, 'invalid');
    assert.deepEqual((await cp(b.url, 'POST', `/api/cp/clusters/${acme.slug}/configure`, [1])).status, 400);
    const badOpt = await cp(b.url, 'POST', `/api/cp/clusters/${acme.slug}/configure`, { queue: 'orders', options: { leaseTime: 'soon' } });
    assert.equal(badOpt.status, 400, `the broker's refusal keeps its status: ${badOpt.text}`);
    assert.equal((await cp(b.url, 'GET', '/api/cp/clusters/nope-nope/queues')).body.code, 'cluster_unknown');
    assert.equal((await cp(b.url, 'POST', '/api/cp/clusters/nope-nope/configure', { queue: 'x' })).body.code, 'cluster_unknown');
    assert.equal((await cp(b.url, 'GET', `/api/cp/clusters/${acme.slug}/queues`, undefined, 'wrong')).status, 401);
  });

  test('the new routes read the token from the head and cap bodies at 1 MiB', async () => {
    for (const path of [`/api/cp/clusters/${acme.slug}/configure`, `/api/cp/tenants/${acme.slug}/purge`]) {
      const started = Date.now();
      const r = await raw(b.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\nx-queen-cp-token: wrong\r\n\r\n`);
      assert.match(r.answer, /^HTTP\/1\.1 401 /, path);
      assert.deepEqual(JSON.parse(r.answer.slice(r.answer.indexOf('\r\n\r\n') + 4)), { error: 'bad control-plane token', code: 'unauthorized' });
      assert.ok(r.closed && Date.now() - started < 1000, 'complete and closed at once');
      const big = await raw(b.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024 + 1}\r\nx-queen-cp-token: ${CP_TOKEN}\r\n\r\n`);
      assert.match(big.answer, /^HTTP\/1\.1 413 /, path);
    }
    const long = await cp(b.url, 'POST', `/api/cp/clusters/${acme.slug}/configure`, { queue: 'orders', pad: 'x'.repeat(1024 * 1024) });
    assert.deepEqual([long.status, long.body?.code], [413, 'payload_too_large']);
  });

  test('POST /api/cp/tenants/:slug/purge empties a deleting tenant (queues, KV, locks, timers), idempotently; DELETE without force needs it', async () => {
    const gone = await bootstrap(b.url, uniqueName('gone').toLowerCase());
    const q = 'shared-name';
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64');
    for (const t of [gone, beta]) {
      const p = await within(withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { who: t.slug } }] }), 10_000, 'push');
      assert.equal(p.status, 201, p.text);
      const kv = await withKey(b.url, t.key, 'PUT', '/api/v1/kv/purge-ns/k', { value: { who: t.slug }, forever: true });
      assert.deepEqual([kv.status, kv.body.applied], [200, true], kv.text);
      const lock = await withKey(b.url, t.key, 'POST', '/api/v1/locks', { operations: [{ op: 'acquire', name: 'purge-lock', ttlSeconds: 600, owner: t.slug }] });
      assert.deepEqual([lock.status, lock.body.results[0].acquired], [200, true], lock.text);
      // a timer on a queue of its own and one on a queue that does not exist: both belong to the tenant
      for (const tq of [q, 'no-such-queue']) {
        const timer = await withKey(b.url, t.key, 'POST', '/api/v1/timers', { operations: [{ op: 'schedule', queue: tq, timerKey: 'k', delayMs: 600_000, txn: `${t.slug}-k`, payload: b64({ who: t.slug }) }] });
        assert.deepEqual([timer.status, timer.body.results[0].status], [200, 'scheduled'], timer.text);
      }
    }
    const coordination = async (t: Tenant) => ({
      kv: (await withKey(b.url, t.key, 'GET', '/api/v1/kv/purge-ns/k')).body.found,
      lock: (await withKey(b.url, t.key, 'POST', '/api/v1/locks', { operations: [{ op: 'get', name: 'purge-lock' }] })).body.results[0].held,
      timers: [
        (await withKey(b.url, t.key, 'GET', `/api/v1/timers/${q}/k`)).body.found,
        (await withKey(b.url, t.key, 'GET', '/api/v1/timers/no-such-queue/k')).body.found,
      ],
    });
    const everything = { kv: true, lock: true, timers: [true, true] };
    assert.deepEqual(await coordination(gone), everything, 'the purged tenant holds KV, a lock and timers before');
    assert.equal((await cp(b.url, 'POST', `/api/cp/tenants/${gone.slug}/purge`)).body.code, 'not_deleting', 'an active tenant is not purged');
    assert.equal((await cp(b.url, 'POST', '/api/cp/tenants/nope-nope/purge')).body.code, 'tenant_unknown');
    assert.equal((await cp(b.url, 'PUT', `/api/cp/tenants/${gone.slug}/status`, { status: 'deleting' })).status, 200);
    const early = await cp(b.url, 'DELETE', `/api/cp/tenants/${gone.slug}`);
    assert.deepEqual([early.status, early.body.code], [409, 'not_purged']);
    const purge = await within(cp(b.url, 'POST', `/api/cp/tenants/${gone.slug}/purge`), 20_000, 'purge');
    assert.equal(purge.status, 200, purge.text);
    assert.deepEqual(purge.body, { slug: gone.slug, purged: true, clusters: 1, queues_deleted: 1, kv_deleted: 2, timers_deleted: 1 },
      'KV: the entry and the lock permit; timers: the one on a queue that never existed (the queue deletion took the other)');
    const rerun = await within(cp(b.url, 'POST', `/api/cp/tenants/${gone.slug}/purge`), 20_000, 'purge again');
    assert.deepEqual([rerun.status, rerun.body.queues_deleted, rerun.body.kv_deleted, rerun.body.timers_deleted], [200, 0, 0, 0]);
    assert.deepEqual(names((await cp(b.url, 'GET', `/api/cp/clusters/${gone.slug}/queues`)).body), []);
    // the other tenant's queue of the same name is untouched
    const other = await within(withKey(b.url, beta.key, 'GET', `/api/v1/pop/queue/${q}`), 10_000, 'beta pop');
    assert.equal(other.status, 200);
    assert.deepEqual(other.body.messages.map((m: { data: unknown }) => m.data), [{ who: beta.slug }]);
    assert.deepEqual(await coordination(beta), everything, 'the other tenant keeps its KV entry, lock and timers');
    // the purged tenant's are gone (read with a key while it is still there: status back to active for the reads)
    assert.equal((await cp(b.url, 'PUT', `/api/cp/tenants/${gone.slug}/status`, { status: 'active' })).status, 200);
    assert.deepEqual(await coordination(gone), { kv: false, lock: false, timers: [false, false] });
    assert.equal((await cp(b.url, 'PUT', `/api/cp/tenants/${gone.slug}/status`, { status: 'deleting' })).status, 200);
    const del = await cp(b.url, 'DELETE', `/api/cp/tenants/${gone.slug}`);
    assert.equal(del.status, 200, del.text);
    assert.equal((await cp(b.url, 'POST', `/api/cp/tenants/${gone.slug}/purge`)).body.code, 'tenant_unknown');
  });
});
