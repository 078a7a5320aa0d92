/**
 * The Produce quotas (docs/proxy.md#quotas-and-limits): `max_msgs_per_sec` / `msgs_burst` charged
 * by the messages a push or a transaction carries (`429 rate_limited` + `Retry-After`; a batch over
 * the burst `413 payload_too_large`), `max_partitions_per_queue` and `max_queues` also for the
 * pushes of `POST /api/v1/transaction` (`403 quota_exceeded`, also under concurrent creations),
 * `max_retained_bytes` (`403 storage_quota_exceeded` on Produce only; reads, acks and deletes go
 * on). Enforced by default; with QUEEN_PROXY_ENFORCE=false logged, counted with `enforced="false"`
 * and let through.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor, within } from '../helpers/wait.js';
import { bootstrap, cp, CP_TOKEN, startProxied, withKey, type Tenant } from './helpers.js';

const metrics = async (url: string) => (await call(url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN })).text;
const decisions = async (url: string, tenant: string, code: string, enforced: boolean) =>
  Number(new RegExp(`^queen_proxy_limit_decisions_total\\{tenant="${tenant}",code="${code}",enforced="${enforced}"\\} (\\d+)$`, 'm').exec(await metrics(url))?.[1] ?? 0);

type Item = { queue: string; partition?: string; payload: unknown };
const push = (url: string, t: Tenant, items: Item[]) => within(withKey(url, t.key, 'POST', '/api/v1/push', { items }), 10_000, 'push');
const txPush = (url: string, t: Tenant, items: Item[]) =>
  within(withKey(url, t.key, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items }] }), 10_000, 'transaction');
const one = (queue: string, partition?: string, payload: unknown = { n: 1 }): Item => ({ queue, ...(partition !== undefined ? { partition } : {}), payload });

/** A tenant on `b` with `overrides` on its cluster. */
async function capped(b: BrokerHandle, name: string, overrides: Record<string, number>): Promise<Tenant> {
  const t = await bootstrap(b.url, uniqueName(name).toLowerCase());
  const o = await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, overrides);
  assert.equal(o.status, 200, o.text);
  return { ...t, tenantId: (await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}`)).body.broker_tenant_uuid };
}

async function partitionsOf(b: BrokerHandle, t: Tenant, queue: string): Promise<number> {
  const list = (await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/queues`)).body.queues as { name: string; partitions: number }[];
  return list.find((q) => q.name === queue)?.partitions ?? 0;
}

describe('Produce quotas, enforced (the default)', () => {
  let b: BrokerHandle;
  before(async () => { b = await startProxied({ QUEEN_PROXY_STORAGE_SAMPLE_MS: '100' }); });
  after(async () => { await b.stop(); });

  test('max_msgs_per_sec / msgs_burst: charged per message of a push and of a transaction; 429 + Retry-After; a batch over the burst is 413', async () => {
    // rate 0: the bucket never refills, so what is refused does not depend on how fast the test runs
    const t = await capped(b, 'msgs', { max_msgs_per_sec: 0, msgs_burst: 5 });
    const free = await bootstrap(b.url, uniqueName('free').toLowerCase());
    const over = await push(b.url, t, [one('m'), one('m'), one('m'), one('m'), one('m'), one('m')]);
    assert.deepEqual([over.status, over.body.code], [413, 'payload_too_large'], over.text);
    assert.match(over.body.error, /6 messages.*msgs_burst is 5/);
    assert.equal((await push(b.url, t, [one('m'), one('m'), one('m')])).status, 201, 'three of five');
    const tx = await txPush(b.url, t, [one('m'), one('m')]);
    assert.deepEqual([tx.status, tx.body.success], [200, true], tx.text);
    const refused = await push(b.url, t, [one('m')]);
    assert.deepEqual([refused.status, refused.body.code], [429, 'rate_limited'], refused.text);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1, `Retry-After ${refused.headers.get('retry-after')}`);
    const refusedTx = await txPush(b.url, t, [one('m')]);
    assert.deepEqual([refusedTx.status, refusedTx.body.code], [429, 'rate_limited'], refusedTx.text);
    assert.ok(Number(refusedTx.headers.get('retry-after')) >= 1);
    const pop = await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/m?batch=100&autoAck=true');
    assert.deepEqual([pop.status, pop.body.messages.length], [200, 5], 'only the admitted five are stored; pops are not charged');
    assert.equal((await push(b.url, free, [one('m'), one('m'), one('m'), one('m'), one('m'), one('m')])).status, 201, 'another cluster has its own bucket');
    assert.equal(await decisions(b.url, t.tenantId, 'rate_limited', true), 2);
    assert.equal(await decisions(b.url, t.tenantId, 'payload_too_large', true), 1);
  });

  test('max_partitions_per_queue: a push or a transaction push that would create one more partition → 403 quota_exceeded; existing ones go on', async () => {
    const t = await capped(b, 'parts', { max_partitions_per_queue: 2 });
    assert.equal((await push(b.url, t, [one('q', 'a'), one('q', 'b')])).status, 201);
    const third = await push(b.url, t, [one('q', 'a'), one('q', 'c')]);
    assert.deepEqual([third.status, third.body.code], [403, 'quota_exceeded'], third.text);
    assert.match(third.body.error, /max_partitions_per_queue/);
    const viaTx = await txPush(b.url, t, [one('q', 'c')]);
    assert.deepEqual([viaTx.status, viaTx.body.code], [403, 'quota_exceeded'], viaTx.text);
    const single = await within(withKey(b.url, t.key, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: 'q', partition: 'd', payload: 1 }] }), 10_000, 'tx');
    assert.deepEqual([single.status, single.body.code], [403, 'quota_exceeded'], 'the single-item push operation too');
    assert.equal((await push(b.url, t, [one('q', 'a'), one('q', 'b')])).status, 201, 'existing partitions go on');
    assert.equal((await txPush(b.url, t, [one('q', 'b')])).status, 200);
    assert.equal((await push(b.url, t, [one('other', 'x'), one('other')])).status, 201, 'each queue has its own count (no partition = "Default")');
    assert.equal(await partitionsOf(b, t, 'q'), 2);
    // Ten pushes at once, each creating a partition of a new queue: exactly the limit get through.
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => push(b.url, t, [one('race', `p${i}`)])));
    assert.deepEqual(answers.map((a) => a.status).filter((s) => s === 201).length, 2, answers.map((a) => `${a.status} ${a.text}`).join('\n'));
    assert.ok(answers.every((a) => a.status === 201 || a.body.code === 'quota_exceeded'));
    assert.equal(await partitionsOf(b, t, 'race'), 2);
  });

  test('max_queues counts the pushes of a transaction', async () => {
    const t = await capped(b, 'txq', { max_queues: 1 });
    assert.deepEqual((await txPush(b.url, t, [one('first')])).body.success, true);
    const second = await txPush(b.url, t, [one('first'), one('second')]);
    assert.deepEqual([second.status, second.body.code], [403, 'quota_exceeded'], second.text);
    assert.match(second.body.error, /allows 1 queues/);
    assert.equal((await txPush(b.url, t, [one('first')])).status, 200, 'the existing queue goes on');
    const listed = (await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/queues`)).body.queues.map((q: { name: string }) => q.name);
    assert.deepEqual(listed, ['first']);
    // a queue deleted through the proxy gives its slot back at once
    assert.equal((await withKey(b.url, t.key, 'DELETE', '/api/v1/resources/queues/first')).status, 200);
    assert.deepEqual((await txPush(b.url, t, [one('second')])).body.success, true, 'the freed slot');
  });

  test('a dead-letter replay is a Produce of one message: charged to the message rate, refused when it would create a queue over max_queues', async () => {
    const t = await capped(b, 'replay', { max_queues: 1, max_msgs_per_sec: 0, msgs_burst: 3 });
    for (let i = 0; i < 2; i++) {
      assert.equal((await push(b.url, t, [one('dl')])).status, 201);
      const m = (await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/dl')).body.messages[0];
      const ack = await withKey(b.url, t.key, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq' });
      assert.equal(ack.body[0]?.dlq, true, ack.text);
    }
    const ids = (await withKey(b.url, t.key, 'GET', '/api/v1/dlq?queue=dl')).body.messages.map((d: { id: string }) => d.id) as string[];
    assert.equal(ids.length, 2);
    const elsewhere = await withKey(b.url, t.key, 'POST', `/api/v1/dlq/${ids[0]}/replay`, { queue: 'elsewhere' });
    assert.deepEqual([elsewhere.status, elsewhere.body.code], [403, 'quota_exceeded'], elsewhere.text);
    const back = await withKey(b.url, t.key, 'POST', `/api/v1/dlq/${ids[0]}/replay`, {});
    assert.deepEqual([back.status, back.body.success], [200, true], `the third message of the burst: ${back.text}`);
    const spent = await withKey(b.url, t.key, 'POST', `/api/v1/dlq/${ids[1]}/replay`, {});
    assert.deepEqual([spent.status, spent.body.code], [429, 'rate_limited'], spent.text);
    assert.ok(Number(spent.headers.get('retry-after')) >= 1);
  });

  test('max_batch_items caps the pushes of a transaction too (413, always enforced)', async () => {
    const t = await capped(b, 'txcap', { max_batch_items: 2 });
    const over = await within(withKey(b.url, t.key, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [one('c'), one('c')] }, { type: 'push', queue: 'c', payload: 3 }] }), 10_000, 'tx');
    assert.deepEqual([over.status, over.body.code], [413, 'payload_too_large'], over.text);
    assert.match(over.body.error, /the transaction pushes 3 entries; the plan allows 2/);
    assert.equal((await txPush(b.url, t, [one('c'), one('c')])).status, 200);
  });

  test('max_retained_bytes: Produce refused with 403 storage_quota_exceeded while the stored bytes reach it; reads, acks and deletes go on', async () => {
    const t = await capped(b, 'bytes', { max_retained_bytes: 1000 });
    const big = 'x'.repeat(600);
    assert.equal((await push(b.url, t, [one('s', undefined, big)])).status, 201);
    assert.equal((await push(b.url, t, [one('s', undefined, big)])).status, 201, '≈600 bytes stored: under the limit');
    const full = await push(b.url, t, [one('s', undefined, 'small')]);
    assert.deepEqual([full.status, full.body.code], [403, 'storage_quota_exceeded'], full.text);
    const tx = await txPush(b.url, t, [one('s', undefined, 'small')]);
    assert.deepEqual([tx.status, tx.body.code], [403, 'storage_quota_exceeded'], tx.text);
    const popped = await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/s?batch=1');
    assert.equal(popped.status, 200, 'reads go on');
    const m = popped.body.messages[0];
    const ack = await withKey(b.url, t.key, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' });
    assert.deepEqual([ack.status, ack.body[0]?.success], [200, true], `acks go on: ${ack.text}`);
    const del = await withKey(b.url, t.key, 'DELETE', '/api/v1/resources/queues/s');
    assert.equal(del.status, 200, `deletes go on: ${del.text}`);
    // the next sample sees the space given back
    await waitFor(async () => (await push(b.url, t, [one('s', undefined, 'again')])).status === 201, { what: 'a push accepted once the queue is gone', timeoutMs: 15_000 });
    assert.ok(await decisions(b.url, t.tenantId, 'storage_quota_exceeded', true) >= 2);
  });
});

describe('Produce quotas in shadow mode (QUEEN_PROXY_ENFORCE=false)', () => {
  test('over the message rate, the partition limit, max_queues in a transaction and the stored bytes: logged, counted enforced="false", let through', async () => {
    const b = await startProxied({ QUEEN_PROXY_ENFORCE: 'false', QUEEN_PROXY_STORAGE_SAMPLE_MS: '100', LOG_FORMAT: 'json' });
    try {
      const t = await capped(b, 'shadow', { max_msgs_per_sec: 0, msgs_burst: 2, max_partitions_per_queue: 1, max_queues: 1, max_retained_bytes: 100 });
      assert.equal((await push(b.url, t, [one('q', 'a', 'x'.repeat(200))])).status, 201);
      assert.equal((await push(b.url, t, [one('q', 'b')])).status, 201, 'a second partition and a spent bucket and the bytes over: let through');
      assert.equal((await push(b.url, t, [one('q', 'a'), one('q', 'a'), one('q', 'a')])).status, 201, 'a batch over the burst: let through');
      assert.equal((await txPush(b.url, t, [one('q2')])).status, 200, 'a second queue in a transaction: let through');
      assert.equal(await partitionsOf(b, t, 'q'), 2);
      assert.ok(await decisions(b.url, t.tenantId, 'rate_limited', false) >= 1);
      assert.ok(await decisions(b.url, t.tenantId, 'quota_exceeded', false) >= 2, 'partitions and queues');
      assert.ok(await decisions(b.url, t.tenantId, 'storage_quota_exceeded', false) >= 1);
      assert.equal(await decisions(b.url, t.tenantId, 'payload_too_large', false), 1);
      assert.equal(await decisions(b.url, t.tenantId, 'quota_exceeded', true), 0);
      await waitFor(() => /shadow mode: request over the cluster message rate let through/.test(b.output()), { what: 'the message-rate shadow line' });
      await waitFor(() => /"limit":"max_partitions_per_queue".*shadow mode/.test(b.output()) || /shadow mode.*"limit":"max_partitions_per_queue"/.test(b.output()), { what: 'the partition shadow line' });
      assert.ok(!b.output().includes(t.key), 'no key in the logs');
    } finally {
      await b.stop();
    }
  });
});
