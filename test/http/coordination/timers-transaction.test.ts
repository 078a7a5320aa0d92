/**
 * The `timers` rider of `POST /api/v1/transaction` (docs/http-api.md#transaction-riders): timer operations commit with the
 * transaction's acks and pushes or not at all; results are appended as `type:"timer"` with `opIndex`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { b64json, popWait, schedule } from './timer-helpers.js';

describe('transaction timers rider', () => {
  let b: BrokerHandle;
  before(async () => { b = await startBroker(); });
  after(async () => { await b?.stop(); });

  it('ack + push + schedule commit together; the timer fires; results carry type "timer" and opIndex', async () => {
    const qin = uniqueName('in');
    const qout = uniqueName('out');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: qin, payload: { step: 1 }, transactionId: 'in-1' }] });
    const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${qin}`);
    const m = popped.body.messages[0];
    const r = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed' },
        { type: 'push', items: [{ queue: qout, payload: { now: true }, transactionId: 'out-now' }] },
      ],
      requiredLeases: [popped.body.leaseId],
      timers: [schedule(qout, 'later', { delayMs: 300, txn: 'out-later', payload: b64json({ later: true }) }), { op: 'cancel', queue: qout, timerKey: 'nope' }],
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.success, true, r.text);
    assert.deepEqual(r.body.results.map((x: any) => [x.index, x.type]), [[0, 'ack'], [1, 'push'], [2, 'timer'], [3, 'timer']]);
    assert.deepEqual([r.body.results[2].opIndex, r.body.results[2].status, r.body.results[2].ok], [0, 'scheduled', true]);
    assert.deepEqual([r.body.results[3].opIndex, r.body.results[3].status, r.body.results[3].ok], [1, 'absent', false]);
    const first = await popWait(b.url, qout, 2000, '&autoAck=true');
    assert.deepEqual(first.body.messages.map((x: any) => x.transactionId), ['out-now']);
    const second = await popWait(b.url, qout, 3000, '&autoAck=true');
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body.messages.map((x: any) => [x.transactionId, x.data]), [['out-later', { later: true }]]);
  });

  it('a rolled-back transaction schedules nothing (duplicate push, rejected ack)', async () => {
    const q = uniqueName('rb');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1, transactionId: 'dup' }] });
    const dup = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'push', items: [{ queue: q, payload: 2, transactionId: 'dup' }] }],
      timers: [schedule(q, 'k1')],
    });
    assert.equal(dup.body.success, false);
    assert.equal(dup.body.reason, 'duplicate');
    const rej = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'ack', transactionId: 'no-such', partitionId: '00000000-0000-0000-0000-000000000000', status: 'completed' }],
      timers: [schedule(q, 'k2')],
    });
    assert.equal(rej.body.success, false);
    assert.deepEqual((await call(b.url, 'GET', `/api/v1/timers/${q}`)).body.rows, []);
  });

  it('bad rider input answers 400 with the transaction failure body; beyond the horizon names its reason', async () => {
    const q = uniqueName('bad');
    const push = [{ type: 'push', items: [{ queue: q, payload: 1 }] }];
    const far = await call(b.url, 'POST', '/api/v1/transaction', { operations: push, timers: [schedule(q, 'k', { delayMs: 91 * 86_400_000 })] });
    assert.equal(far.status, 400, far.text);
    assert.deepEqual([far.body.code, far.body.success, far.body.reason, far.body.results], ['timer_horizon_exceeded', false, 'timer_horizon_exceeded', []]);
    const notArray = await call(b.url, 'POST', '/api/v1/transaction', { operations: push, timers: { op: 'schedule' } });
    assert.deepEqual([notArray.status, notArray.body.reason], [400, 'bad_request']);
    const owned = await call(b.url, 'POST', '/api/v1/transaction', { operations: push, timers: [schedule(q, 'k', { producerSub: 'x' })] });
    assert.deepEqual([owned.status, owned.body.code, owned.body.success], [400, 'invalid_request', false]);
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204, 'nothing of the refused transactions was pushed');
  });
});

describe('transaction timers rider refused by encryption', () => {
  it('a timer into an encrypted queue without a key refuses the whole transaction and leaves the broker consistent', async () => {
    const key = 'ab'.repeat(32);
    const first = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key } });
    const qenc = uniqueName('enc');
    await call(first.url, 'POST', '/api/v1/configure', { queue: qenc, options: { encryptionEnabled: true } });
    await first.stop();
    const b = await startBroker({ dataDir: first.dataDir });
    try {
      const qin = uniqueName('in');
      const qout = uniqueName('out');
      await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: qin, payload: 1, transactionId: 'in-1' }] });
      const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${qin}`);
      const m = popped.body.messages[0];
      const r = await call(b.url, 'POST', '/api/v1/transaction', {
        operations: [
          { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed' },
          { type: 'push', items: [{ queue: qout, payload: 'x', transactionId: 'out-1' }] },
        ],
        requiredLeases: [popped.body.leaseId],
        timers: [schedule(qenc, 'k', { delayMs: 100, txn: 't', payload: b64json({ secret: true }) })],
      });
      assert.equal(r.status, 503, r.text);
      assert.equal(r.body.code, 'encryption_unavailable');
      assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${qout}`)).status, 204, 'the push was rolled back');
      const ext = await call(b.url, 'POST', `/api/v1/lease/${popped.body.leaseId}/extend`, {});
      assert.equal(ext.body.renewed, 1, 'the ack was rolled back: the lease is still held');
      const ack = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: popped.body.leaseId });
      assert.equal(ack.body[0].success, true, 'memory and store still agree: a normal ack works');
      const again = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: qout, payload: 'y', transactionId: 'out-1' }] });
      assert.equal(again.body[0].status, 'queued', 'out-1 was never stored, so it is not a duplicate');
    } finally {
      await b.stop();
    }
  });
});
