/**
 * The messaging rules that depend on time, driven by a test clock on a real SQLite store: lease
 * expiry (redelivery, no charge to the retry budget, parked waiters woken, extension), delayed
 * delivery, the window buffer, and the retry budget ending in the DLQ. Time moves only when the
 * test advances the clock, so nothing sleeps and each case takes milliseconds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '../../../src/broker/broker.js';
import { QUEUE_MODE } from '../../../src/broker/broker.js';
import type { TestClock } from '../../../src/util/clock.js';
import { RawJson } from '../../../src/util/json.js';
import { popOf, startTestServices, type TestServices } from '../../helpers/services.js';
import { waitFor } from '../../helpers/wait.js';

let t: TestServices;
let broker: Broker;
let clock: TestClock;
before(() => {
  t = startTestServices();
  broker = t.services.broker;
  clock = t.clock;
});
after(() => t.stop());

const texts = (r: Awaited<ReturnType<Broker['pop']>>) => (r && 'messages' in r ? r.messages.map((m) => (m.data as RawJson).text ?? JSON.stringify(m.data)) : []);

describe('on a test clock', () => {
  test('an expired lease redelivers the batch, not a moment before', async () => {
    await broker.configure({ queue: 'lease', mode: 'replace', options: { leaseTime: 10 } });
    await broker.push([{ queue: 'lease', payload: 1 }], null);
    const first = await broker.pop(popOf('lease'));
    assert.deepEqual(texts(first), ['1']);
    assert.equal(await broker.pop(popOf('lease')), null, 'leased: nothing for a second consumer');
    clock.advance(9_999);
    assert.equal(await broker.pop(popOf('lease')), null, 'one ms before expiry the lease still holds');
    clock.advance(1);
    const again = await broker.pop(popOf('lease'));
    assert.deepEqual(texts(again), ['1'], 'redelivered at expiry');
    assert.notEqual(again && 'messages' in again ? again.messages[0]!.leaseId : undefined, first && 'messages' in first ? first.messages[0]!.leaseId : undefined);
  });

  // The reference: a pop whose answer nobody receives hands its claim back and, since 2.0.3,
  // takes back the delivery attempt it counted (queen-mq/queen: CHANGELOG.md, 2.0.3). Here the
  // caller leaves while the claim runs (its signal aborts after the pop started).
  test('a claim made for a caller that left while it ran is handed back: no lease held, no attempt counted', async () => {
    await broker.configure({ queue: 'gone', mode: 'replace', options: { leaseTime: 600 } });
    await broker.push([{ queue: 'gone', payload: 'a' }, { queue: 'gone', payload: 'b' }], null);
    const attempts = (r: Awaited<ReturnType<Broker['pop']>>) => (r && 'messages' in r ? r.messages.map((m) => m.deliveryAttempt) : []);
    const left = new AbortController();
    const popping = broker.pop(popOf('gone'), left.signal);
    left.abort(); // the pop is past its first await: the claim goes on, for nobody
    assert.equal(await popping, null, 'nothing answered to a caller that left');
    const first = await broker.pop(popOf('gone'));
    assert.deepEqual(texts(first), ['"a"', '"b"'], 'claimable at once, not held for the 600 s lease');
    assert.deepEqual(attempts(first), [1, 1], 'the handed-back claim counted no attempt');

    // a redelivery handed back counts the same attempt again, not one more
    clock.advance(600_000);
    const left2 = new AbortController();
    const popping2 = broker.pop(popOf('gone'), left2.signal);
    left2.abort();
    assert.equal(await popping2, null);
    const second = await broker.pop(popOf('gone'));
    assert.deepEqual(attempts(second), [2, 2], 'the expiry made it a redelivery; the hand-back did not add one');
  });

  test('lease expiry redelivers without charging the retry budget', async () => {
    await broker.configure({ queue: 'lease-budget', mode: 'replace', options: { retryLimit: 0 } });
    await broker.push([{ queue: 'lease-budget', payload: 'm' }], null);
    const first = await broker.pop(popOf('lease-budget', { leaseSeconds: 1 }));
    assert.deepEqual(texts(first), ['"m"']);
    clock.advance(1_000);
    const again = await broker.pop(popOf('lease-budget'));
    assert.ok(again && 'messages' in again && first && 'messages' in first);
    assert.deepEqual(texts(again), ['"m"'], 'redelivered after expiry');
    const a = again.messages[0]!;
    const f = first.messages[0]!;
    const [stale] = await broker.ack([{ transactionId: f.transactionId, partitionId: f.partitionId, leaseId: f.leaseId, status: 'completed', group: QUEUE_MODE }]);
    assert.equal(stale!.success, false, 'the first lease is gone');
    const [failed] = await broker.ack([{ transactionId: a.transactionId, partitionId: a.partitionId, leaseId: a.leaseId, status: 'failed', error: 'boom', group: QUEUE_MODE }]);
    assert.equal(failed!.dlq, true, 'retryLimit 0: the first charged failure dead-letters, so expiry charged nothing');
  });

  test('a waiter parked on a leased partition is woken when the lease expires, not before', async () => {
    await broker.push([{ queue: 'lease-wake', payload: 'm' }], null);
    assert.deepEqual(texts(await broker.pop(popOf('lease-wake', { leaseSeconds: 10 }))), ['"m"']);
    let answer: Awaited<ReturnType<Broker['pop']>> | 'pending' = 'pending';
    const parked = broker.pop(popOf('lease-wake', { wait: true, timeoutMs: 60_000 })).then((r) => (answer = r));
    clock.advance(9_999);
    await new Promise((r) => setImmediate(r));
    assert.equal(answer, 'pending', 'the lease still holds 1 ms before expiry');
    clock.advance(1);
    await waitFor(() => answer !== 'pending', { what: 'the parked pop to be answered once the lease expired' });
    assert.deepEqual(texts(await parked), ['"m"'], 'woken by the expiry, long before its 60 s timeout');
  });

  test('lease extension never shortens and covers the lease; unknown leases renew nothing', async () => {
    await broker.push([{ queue: 'lease-extend', payload: 'm' }], null);
    const p = await broker.pop(popOf('lease-extend', { leaseSeconds: 1 }));
    assert.ok(p && 'messages' in p);
    const leaseId = p.messages[0]!.leaseId;
    const start = clock.now();
    const ext = await broker.extendLease(leaseId, 30);
    assert.equal(ext.success, true);
    assert.equal(ext.renewed, 1);
    assert.equal(Date.parse(ext.newExpiresAt as string), start + 30_000);
    clock.advance(10_000);
    const shorter = await broker.extendLease(leaseId, 5);
    assert.equal(Date.parse(shorter.newExpiresAt as string), start + 30_000, 'never shortens');
    assert.equal(await broker.pop(popOf('lease-extend')), null, 'still leased after the original 1 s');
    clock.set(start + 29_999);
    assert.equal(await broker.pop(popOf('lease-extend')), null, 'still leased 1 ms before the extended expiry');
    clock.advance(1);
    assert.deepEqual(texts(await broker.pop(popOf('lease-extend'))), ['"m"'], 'redelivered at the extended expiry');
    const unknown = await broker.extendLease('019dc9b7-cb4f-7c1a-9b21-7e8a5c3a40e1', 30);
    assert.deepEqual([unknown.success, unknown.renewed, unknown.error], [false, 0, 'Lease not found or already expired']);
    assert.equal((await broker.extendLease(leaseId, 30)).error, 'Lease not found or already expired', 'the acked lease is gone');
  });

  test('a delayed message is invisible until delayedProcessing has passed', async () => {
    await broker.configure({ queue: 'delayed', mode: 'replace', options: { delayedProcessing: 30 } });
    await broker.push([{ queue: 'delayed', payload: 'later' }], null);
    assert.equal(await broker.pop(popOf('delayed')), null, 'invisible at push time');
    clock.advance(29_999);
    assert.equal(await broker.pop(popOf('delayed')), null, 'invisible 1 ms before');
    clock.advance(1);
    assert.deepEqual(texts(await broker.pop(popOf('delayed'))), ['"later"']);
  });

  test('the window buffer holds a partition until it has been quiet for windowBuffer seconds', async () => {
    await broker.configure({ queue: 'window', mode: 'replace', options: { windowBuffer: 5 } });
    await broker.push([{ queue: 'window', payload: 1 }], null);
    clock.advance(4_000);
    await broker.push([{ queue: 'window', payload: 2 }], null); // restarts the quiet period
    clock.advance(4_000);
    assert.equal(await broker.pop(popOf('window')), null, '4 s after the last push: still buffering');
    clock.advance(1_000);
    assert.deepEqual(texts(await broker.pop(popOf('window'))), ['1', '2'], 'both, once quiet for 5 s');
  });

  test('failed acks retry up to retryLimit, then the message goes to the DLQ', async () => {
    await broker.configure({ queue: 'retry', mode: 'replace', options: { retryLimit: 2 } });
    await broker.push([{ queue: 'retry', payload: 'poison', transactionId: 'p1' }], null);
    let dlq = false;
    let deliveries = 0;
    for (let i = 0; i < 5 && !dlq; i++) {
      const got = await broker.pop(popOf('retry'));
      assert.ok(got && 'messages' in got && got.messages.length === 1, `delivery ${i + 1}`);
      deliveries++;
      const m = got.messages[0]!;
      const [out] = await broker.ack([{ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'failed', error: 'boom', group: QUEUE_MODE }]);
      dlq = out!.dlq;
    }
    assert.equal(deliveries, 3, 'the first delivery and retryLimit=2 retries');
    assert.ok(dlq, 'the last failure hands the message to the DLQ');
    assert.equal(await broker.pop(popOf('retry')), null, 'nothing left to deliver');
    const listed = (await broker.listDlq({ queue: 'retry', limit: 10, offset: 0 })) as { messages: { transactionId: string; errorMessage: string }[] };
    assert.deepEqual(listed.messages.map((m) => [m.transactionId, m.errorMessage]), [['p1', 'boom']]);
  });
});
