import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { parkWitness } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

async function setup(options: Record<string, unknown>, payloads: unknown[]) {
  const q = uniqueName();
  await call(b.url, 'POST', '/api/v1/configure', { queue: q, options });
  await call(b.url, 'POST', '/api/v1/push', { items: payloads.map((payload, i) => ({ queue: q, payload, transactionId: `t${i}` })) });
  return q;
}
async function pop(q: string, qs = 'batch=10') {
  const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?${qs}`);
  return r.status === 204 ? null : r.body;
}
const ackOf = (m: any, status: string, extra: Record<string, unknown> = {}) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status, ...extra });

describe('ack', () => {
  test('acking the last message completes the whole batch (implicit ack) and releases the lease', async () => {
    const q = await setup({}, [1, 2, 3]);
    const p = await pop(q);
    const r = await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[2], 'completed'));
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.body));
    assert.equal(r.body.length, 1);
    assert.equal(r.body[0].success, true);
    assert.equal(r.body[0].leaseReleased, true);
    assert.deepEqual([r.body[0].queueName, r.body[0].partitionName], [q, 'Default'], 'the reference\'s ack answer names the queue and partition');
    assert.equal(await pop(q), null, 'nothing left');
    const unknown = await call(b.url, 'POST', '/api/v1/ack', { ...ackOf(p.messages[2], 'completed'), partitionId: '00000000-0000-4000-8000-000000000000' });
    assert.deepEqual([unknown.body[0].success, unknown.body[0].queueName, unknown.body[0].partitionName], [false, null, null]);
  });

  test('a partial completed ack keeps the lease; the rest can still be acked', async () => {
    const q = await setup({}, [1, 2, 3]);
    const p = await pop(q);
    const r = await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'completed'));
    assert.equal(r.body[0].leaseReleased, false);
    assert.equal(await pop(q), null, 'still leased');
    const r2 = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: [ackOf(p.messages[1], 'completed'), ackOf(p.messages[2], 'success')] });
    assert.equal(r2.body.length, 2);
    assert.ok(r2.body.every((x: any) => x.success));
    assert.equal(await pop(q), null);
  });

  test('failed rewinds to the failure, keeps the completed prefix, and charges the retry budget', async () => {
    const q = await setup({ retryLimit: 5 }, [1, 2, 3]);
    const p = await pop(q);
    const r = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: [
      ackOf(p.messages[0], 'completed'), ackOf(p.messages[1], 'failed', { error: 'boom' }), ackOf(p.messages[2], 'completed'),
    ] });
    assert.deepEqual(r.body.map((x: any) => x.success), [true, true, true]);
    const again = await pop(q);
    assert.deepEqual(again.messages.map((m: any) => m.data), [2, 3], 'the completed message above the failure is redelivered too');
    assert.equal(again.messages[0].deliveryAttempt, 2);
  });

  test('retry releases without charging the budget; dlq dead-letters at once', async () => {
    const q = await setup({ retryLimit: 0 }, [1, 2]);
    let p = await pop(q);
    await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'retry'));
    p = await pop(q);
    assert.deepEqual(p.messages.map((m: any) => m.data), [1, 2], 'retry with retryLimit 0 still redelivers: nothing charged');
    const r = await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'dlq', { error: 'poison' }));
    assert.equal(r.body[0].dlq, true);
    const dlq = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`);
    assert.equal(dlq.body.messages.length, 1);
    assert.equal(dlq.body.messages[0].data, 1);
    assert.equal(dlq.body.messages[0].errorMessage, 'poison');
    p = await pop(q);
    assert.deepEqual(p.messages.map((m: any) => m.data), [2]);
  });

  test('retryLimit exhausted sends the head message to the DLQ with the error text (retryLimit+1 deliveries)', async () => {
    const q = await setup({ retryLimit: 1 }, ['bad', 'good']);
    for (let delivery = 1; delivery <= 2; delivery++) {
      const p = await pop(q, 'batch=1');
      assert.equal(p.messages[0].data, 'bad', `delivery ${delivery}`);
      const r = await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'failed', { error: 'validation failed' }));
      assert.equal(r.body[0].dlq, delivery === 2);
    }
    const next = await pop(q, 'batch=1');
    assert.equal(next.messages[0].data, 'good');
    const dlq = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`);
    assert.equal(dlq.body.messages.length, 1);
    assert.equal(dlq.body.messages[0].errorMessage, 'validation failed');
    assert.equal(dlq.body.messages[0].data, 'bad');
  });

  test('with the DLQ switched off an exhausted message is dropped, not dead-lettered', async () => {
    const q = await setup({ retryLimit: 0, deadLetterQueue: false, dlqAfterMaxRetries: false }, ['x', 'y']);
    const p = await pop(q, 'batch=1');
    const r = await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'failed'));
    assert.equal(r.body[0].dlq, false);
    assert.equal((await pop(q, 'batch=1')).messages[0].data, 'y');
    assert.equal((await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages.length, 0);
  });

  test('statuses are case-sensitive: COMPLETED and "" are failures', async () => {
    const q = await setup({ retryLimit: 10 }, [1]);
    let p = await pop(q);
    await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'COMPLETED'));
    p = await pop(q);
    assert.ok(p, 'COMPLETED rewound the cursor');
    await call(b.url, 'POST', '/api/v1/ack', ackOf(p.messages[0], 'ok'));
    assert.equal(await pop(q), null, 'ok completes');
  });

  test('a wrong or expired lease is refused per item; a lease-less ack still moves the cursor', async () => {
    const q = await setup({}, [1, 2]);
    const p = await pop(q, 'batch=1');
    const wrong = await call(b.url, 'POST', '/api/v1/ack', { ...ackOf(p.messages[0], 'completed'), leaseId: '019dc9b7-cb4f-7c1a-9b21-7e8a5c3a40e1' });
    assert.equal(wrong.status, 200);
    assert.equal(wrong.body[0].success, false);
    assert.equal(wrong.body[0].error, 'Invalid or expired lease');
    const leaseless = await call(b.url, 'POST', '/api/v1/ack', { transactionId: p.messages[0].transactionId, partitionId: p.messages[0].partitionId });
    assert.equal(leaseless.body[0].success, true);
    const repeat = await call(b.url, 'POST', '/api/v1/ack', { transactionId: p.messages[0].transactionId, partitionId: p.messages[0].partitionId });
    assert.equal(repeat.body[0].noop, true);
    const unknown = await call(b.url, 'POST', '/api/v1/ack', { transactionId: 'nope', partitionId: p.messages[0].partitionId });
    assert.equal(unknown.body[0].success, false);
    assert.match(unknown.body[0].error, /unresolvable/);
  });

  // Lease expiry as a time rule (redelivery at expiry, not before; no charge to the retry budget;
  // parked waiters woken; extension covers the lease) is asserted on a test clock in
  // test/broker/messaging/clock.test.ts. Over HTTP, one real 1 s lease shows the wiring.
  test('a waiter parked on a leased partition is woken when the lease expires', async () => {
    const q = await setup({}, ['m']);
    await pop(q, 'leaseSeconds=1');
    // A witness pop parked first with the same timeout would time out first had only the waiter's
    // own timeout re-check found the message.
    const witness = await parkWitness(b.url, 20_000);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000`);
    assert.equal(r.status, 200);
    assert.equal(r.body.messages[0].data, 'm', 'redelivered after expiry');
    assert.ok(witness.parked(), 'the lease expiry woke the waiter');
    await witness.release();
  });

  test('lease extension never shortens and covers the lease; unknown leases renew nothing', async () => {
    const q = await setup({}, ['m']);
    const p = await pop(q, 'leaseSeconds=1');
    const ext = await call(b.url, 'POST', `/api/v1/lease/${p.leaseId}/extend`, { seconds: 30 });
    assert.equal(ext.status, 200);
    assert.equal(ext.body.success, true);
    assert.equal(ext.body.renewed, 1);
    const expires = Date.parse(ext.body.newExpiresAt);
    assert.ok(expires > Date.now() + 25_000);
    assert.equal(ext.body.lease_expires_at, ext.body.newExpiresAt);
    const shorter = await call(b.url, 'POST', `/api/v1/lease/${p.leaseId}/extend`, { seconds: 5 });
    assert.equal(Date.parse(shorter.body.newExpiresAt), expires, 'never shortens');
    assert.equal(await pop(q), null, 'still leased');
    const empty = await call(b.url, 'POST', '/api/v1/lease/019dc9b7-cb4f-7c1a-9b21-7e8a5c3a40e1/extend');
    assert.equal(empty.status, 200);
    assert.equal(empty.body.success, false);
    assert.equal(empty.body.renewed, 0);
  });
});
