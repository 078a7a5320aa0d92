import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { afterLeasesGrantedBefore, waitForParked } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

async function popOne(q: string) {
  const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
  return r.status === 204 ? null : r.body.messages[0];
}

describe('POST /api/v1/transaction', () => {
  test('an ack and a push commit together', async () => {
    const src = uniqueName('src');
    const dst = uniqueName('dst');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: src, payload: { n: 1 }, transactionId: 'in-1' }] });
    const m = await popOne(src);
    const r = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed' },
        { type: 'push', items: [{ queue: dst, partition: 'p2', payload: { derived: true }, transactionId: 'out-1' }] },
      ],
      requiredLeases: [m.leaseId],
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.success, true);
    assert.equal(r.body.results.length, 2);
    assert.equal(r.body.results[0].type, 'ack');
    assert.equal(r.body.results[1].type, 'push');
    assert.equal(r.body.results[1].transactionId, 'out-1');
    assert.equal(await popOne(src), null, 'source acked');
    const out = await popOne(dst);
    assert.deepEqual(out.data, { derived: true });
  });

  test('a duplicate push rolls everything back (200, success:false)', async () => {
    const src = uniqueName('src');
    const dst = uniqueName('dst');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: src, payload: 1 }, { queue: dst, payload: 'existing', transactionId: 'dup' }] });
    const m = await popOne(src);
    const r = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed' },
        { type: 'push', items: [{ queue: dst, payload: 'new', transactionId: 'fresh' }, { queue: dst, payload: 'again', transactionId: 'dup' }] },
      ],
      requiredLeases: [m.leaseId],
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.success, false);
    assert.equal(r.body.reason, 'duplicate');
    assert.match(r.body.error, /QDUP/);
    const ext = await call(b.url, 'POST', `/api/v1/lease/${m.leaseId}/extend`, {});
    assert.equal(ext.body.renewed, 1, 'the ack was rolled back: the lease is still held');
    const all = await call(b.url, 'GET', `/api/v1/pop/queue/${dst}?batch=10`);
    assert.deepEqual(all.body.messages.map((x: any) => x.data), ['existing'], "'fresh' was not written");
  });

  /** A message of a new queue, popped under a 1 s lease that has expired by the time this returns. */
  async function expiredLease(src: string) {
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: src, payload: 1 }] });
    const m = (await call(b.url, 'GET', `/api/v1/pop/queue/${src}?leaseSeconds=1`)).body.messages[0];
    await afterLeasesGrantedBefore(b.url);
    return m;
  }

  test('a stale lease rolls everything back', async () => {
    const src = uniqueName('src');
    const dst = uniqueName('dst');
    const m = await expiredLease(src);
    const r = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed' },
        { type: 'push', items: [{ queue: dst, payload: 'x' }] },
      ],
      requiredLeases: [m.leaseId],
    });
    assert.equal(r.body.success, false);
    assert.equal(r.body.reason, 'ack_rejected');
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${dst}`)).status, 204, 'nothing pushed');
    assert.ok(await popOne(src), 'source message not acked: redelivered');
  });

  test('a push-only transaction whose required lease expired is refused as lease_not_held, not as a rejected ack', async () => {
    const dst = uniqueName('dst');
    const m = await expiredLease(uniqueName('src'));
    const r = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'push', items: [{ queue: dst, payload: 'x' }] }],
      requiredLeases: [m.leaseId],
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.success, false);
    assert.equal(r.body.reason, 'lease_not_held');
    assert.match(r.body.error, /required lease .* is not held/);
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${dst}`)).status, 204, 'nothing pushed');
  });

  // A bundle that acks the batches of two pops: the reference's clients named each ack's lease
  // only in requiredLeases, and with two leases there the acks went unfenced, so an ack could
  // complete a message another consumer had taken after the lease expired (queen-mq/queen:
  // CHANGELOG.md, 2.0.0 "every ACK of a transaction names its own lease").
  test('acks under two leases, one of them expired and re-leased elsewhere: everything rolls back, the new holder keeps its message', async () => {
    const late = uniqueName('late');
    const held = uniqueName('held');
    const dst = uniqueName('dst');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: late, payload: 'l' }, { queue: held, payload: 'h' }] });
    const a1 = (await call(b.url, 'GET', `/api/v1/pop/queue/${late}?leaseSeconds=1`)).body.messages[0];
    const a2 = (await call(b.url, 'GET', `/api/v1/pop/queue/${held}?leaseSeconds=600`)).body.messages[0];
    await afterLeasesGrantedBefore(b.url);
    const other = (await call(b.url, 'GET', `/api/v1/pop/queue/${late}?leaseSeconds=600`)).body.messages[0];
    assert.equal(other.transactionId, a1.transactionId, 'another consumer took the message after the lease expired');
    assert.notEqual(other.leaseId, a1.leaseId);
    const ackOps = (withLease: boolean) => [a1, a2].map((m) => ({ type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed', ...(withLease ? { leaseId: m.leaseId } : {}) }));
    for (const withLease of [true, false]) {
      const r = await call(b.url, 'POST', '/api/v1/transaction', {
        operations: [...ackOps(withLease), { type: 'push', items: [{ queue: dst, payload: 'derived' }] }],
        requiredLeases: [a1.leaseId, a2.leaseId],
      });
      assert.equal(r.status, 200);
      assert.equal(r.body.success, false, `leases on the ops: ${withLease}: ${r.text}`);
      assert.equal(r.body.reason, 'ack_rejected');
    }
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${dst}`)).status, 204, 'nothing pushed');
    const mine = await call(b.url, 'POST', '/api/v1/ack', { transactionId: a2.transactionId, partitionId: a2.partitionId, leaseId: a2.leaseId, status: 'completed' });
    assert.equal(mine.body[0].success, true, 'the live lease of the bundle was not consumed by the rollback');
    const theirs = await call(b.url, 'POST', '/api/v1/ack', { transactionId: other.transactionId, partitionId: other.partitionId, leaseId: other.leaseId, status: 'completed' });
    assert.equal(theirs.body[0].success, true, 'the new holder still holds its lease and acks normally');
    assert.equal(theirs.body[0].noop, false, 'the message was not completed by the rolled-back bundle');
  });

  test('a transaction push wakes a parked consumer and intra-request repeats are stored once', async () => {
    const dst = uniqueName('dst');
    const waiting = call(b.url, 'GET', `/api/v1/pop/queue/${dst}?wait=true&timeout=10000&batch=10`);
    await waitForParked(b.url, 1);
    const r = await call(b.url, 'POST', '/api/v1/transaction', { operations: [
      { type: 'push', items: [{ queue: dst, payload: 1, transactionId: 'same' }, { queue: dst, payload: 2, transactionId: 'same' }] },
    ] });
    assert.equal(r.body.success, true);
    assert.equal(r.body.results[1].duplicate, true);
    const got = await waiting;
    assert.deepEqual(got.body.messages.map((x: any) => x.data), [1]);
  });

  test('malformed transactions answer 400 with the failure shape', async () => {
    for (const body of [{}, { operations: [] }, { operations: [{ type: 'kv' }] }, { operations: [{ type: 'ack' }] }]) {
      const r = await call(b.url, 'POST', '/api/v1/transaction', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.success, false);
      assert.equal(typeof r.body.error, 'string');
      assert.equal(r.body.code, 'invalid_request');
    }
  });

  test('a push item without payload or data is refused (400), not stored as {}', async () => {
    // Outside check: both forms answered 200 and the queue then held a message whose data was {}.
    const q = uniqueName('nopayload');
    for (const op of [{ type: 'push', queue: q }, { type: 'push', items: [{ queue: q }] }]) {
      const r = await call(b.url, 'POST', '/api/v1/transaction', { operations: [op] });
      assert.equal(r.status, 400, JSON.stringify(op));
      assert.equal(r.body.code, 'invalid_request');
      assert.match(r.body.error, /payload is required/);
      assert.equal(r.body.success, false);
      assert.equal(r.body.reason, 'bad_request');
      assert.deepEqual(r.body.results, []);
    }
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`)).status, 204, 'nothing stored');
    // An explicit null payload is a payload (as on /push).
    const ok = await call(b.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: q, payload: null }] });
    assert.equal(ok.status, 200);
    assert.equal((await popOne(q)).data, null);
  });

  test('a refusal for a bad name carries the failure shape too', async () => {
    const r = await call(b.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: 'tx\u0000bad', payload: 1 }] });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'invalid_name');
    assert.equal(r.body.success, false);
    assert.equal(r.body.reason, 'bad_request');
    assert.deepEqual(r.body.results, []);
  });
});
