import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { parkWitness, waitForParked } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

async function push(queue: string, partition: string, payloads: unknown[]) {
  const r = await call(b.url, 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue, partition, payload })) });
  assert.equal(r.status, 201);
  return r.body;
}

describe('pop', () => {
  test('delivers a partition in push order, across requests, with the per-message addressing fields', async () => {
    const q = uniqueName();
    await push(q, 'P', [0, 1, 2]);
    await push(q, 'P', [3, 4]);
    const got: unknown[] = [];
    for (;;) {
      const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=2`);
      if (r.status === 204) break;
      assert.equal(r.status, 200);
      for (const m of r.body.messages) {
        got.push(m.data);
        for (const k of ['id', 'transactionId', 'partitionId', 'leaseId', 'consumerGroup', 'createdAt']) assert.ok(k in m, k);
        assert.equal(m.partition, 'P');
        assert.equal(m.consumerGroup, '__QUEUE_MODE__');
      }
      const ack = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: r.body.messages.map((m: any) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })) });
      assert.equal(ack.status, 200);
    }
    assert.deepEqual(got, [0, 1, 2, 3, 4]);
  });

  test('204 carries no body when there is nothing to deliver', async () => {
    const r = await fetch(`${b.url}/api/v1/pop/queue/${uniqueName()}`);
    assert.equal(r.status, 204);
    assert.equal(await r.text(), '');
    assert.equal(r.headers.get('content-length'), null);
  });

  test('the lease rule: one live lease per (partition, group); other partitions stay available', async () => {
    const q = uniqueName();
    await push(q, 'A', ['a1', 'a2']);
    const first = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    assert.deepEqual(first.body.messages.map((m: any) => m.data), ['a1']);
    const second = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    assert.equal(second.status, 204, 'a2 sits behind the live lease on A');
    await push(q, 'B', ['b1']);
    const third = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=5`);
    assert.deepEqual(third.body.messages.map((m: any) => m.data), ['b1']);
    const partRoute = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/A`);
    assert.equal(partRoute.status, 204, 'the partition route respects the lease too');
    const otherGroup = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/A?consumerGroup=g2&subscriptionMode=all&batch=5`);
    assert.deepEqual(otherGroup.body.messages.map((m: any) => m.data), ['a1', 'a2'], 'another group has its own lease and cursor');
  });

  test('partitions=N claims several partitions under one lease and one batch budget', async () => {
    const q = uniqueName();
    await push(q, 'x', [1, 2]);
    await push(q, 'y', [3, 4]);
    await push(q, 'z', [5, 6]);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?partitions=2&batch=3`);
    assert.equal(r.body.partitionsClaimed, 2);
    assert.equal(r.body.messages.length, 3);
    assert.equal(new Set(r.body.messages.map((m: any) => m.leaseId)).size, 1);
    const ext = await call(b.url, 'POST', `/api/v1/lease/${r.body.leaseId}/extend`, {});
    assert.equal(ext.body.renewed, 2, 'one renew extends every partition of the lease');
  });

  test('a parked long-poll is woken by a push', async () => {
    const q = uniqueName();
    const waiting = call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000`);
    await waitForParked(b.url, 1);
    await push(q, 'Default', ['hello']);
    const r = await waiting;
    // 200 with the message, not the 204 of its 20 s timeout: the push woke it (how fast: npm run bench, wakeup row).
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['hello']);
  });

  test('a long-poll answers 204 at its timeout', async () => {
    const started = Date.now();
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${uniqueName()}?wait=true&timeout=300`);
    assert.equal(r.status, 204);
    assert.ok(Date.now() - started >= 290); // a lower bound (not before its timeout): no machine is too slow for it
  });

  test('a parked pop whose client went away claims nothing', async () => {
    const q = uniqueName();
    const ctl = new AbortController();
    const gone = fetch(`${b.url}/api/v1/pop/queue/${q}?wait=true&timeout=20000`, { signal: ctl.signal }).catch(() => undefined);
    await waitForParked(b.url, 1);
    ctl.abort();
    await gone;
    await waitForParked(b.url, 0);
    await push(q, 'Default', ['kept']);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['kept']);
  });

  test('namespace/task discovery pop finds queues by label and wakes on push', async () => {
    const ns = uniqueName('ns');
    const q = `${ns}.resize.images`;
    const waiting = call(b.url, 'GET', `/api/v1/pop?namespace=${ns}&task=resize&wait=true&timeout=10000`);
    await waitForParked(b.url, 1);
    await push(q, 'Default', ['img']);
    const r = await waiting;
    assert.equal(r.status, 200);
    assert.equal(r.body.queue, '');
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['img']);
    const missing = await call(b.url, 'GET', '/api/v1/pop');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'namespace_or_task_required');
  });

  test('delayedProcessing hides a message until its delay has passed, then a waiter gets it', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { delayedProcessing: 1 } });
    await push(q, 'Default', ['later']);
    const now = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.equal(now.status, 204);
    // A pop parked earlier with the same timeout: had the delay's end not woken the waiter (only the
    // re-check at its own timeout finding the message), the witness would have timed out first.
    const witness = await parkWitness(b.url, 20_000);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['later']);
    assert.ok(witness.parked(), 'the waiter was woken when the delay ended, not at its timeout');
    await witness.release();
  });

  test('windowBuffer holds a partition until it has been quiet for the window', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { windowBuffer: 1 } });
    await push(q, 'Default', [1, 2]);
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204);
    const witness = await parkWitness(b.url, 20_000);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000&batch=10`);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), [1, 2]);
    assert.ok(witness.parked(), 'the window\'s end woke the waiter, not its timeout');
    await witness.release();
  });
});
