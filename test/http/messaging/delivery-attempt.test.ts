/**
 * `deliveryAttempt` as a client sees it (docs/http-api.md#delivery-attempts): the number of times
 * this message has been delivered to this consumer group, this delivery included, never below it,
 * whatever the sizes of the batches that delivered it; a seek starts the count again. One real
 * lease expiry shows the wiring; the other redeliveries come from nacks, which release at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

type Msg = { data: number; transactionId: string; partitionId: string; leaseId: string; deliveryAttempt: number; consumerGroup: string };

/** A fresh queue with messages 0..n-1 in one partition. */
async function queueOf(n: number): Promise<string> {
  const q = uniqueName();
  const r = await call(b.url, 'POST', '/api/v1/push', { items: Array.from({ length: n }, (_, i) => ({ queue: q, partition: 'p', payload: i, transactionId: `t${i}` })) });
  assert.equal(r.status, 201, r.text);
  return q;
}

async function pop(q: string, qs: string): Promise<Msg[]> {
  const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?${qs}`);
  assert.ok(r.status === 200 || r.status === 204, r.text);
  return r.status === 204 ? [] : r.body.messages;
}

async function ack(msgs: Msg[], status = 'completed'): Promise<void> {
  const r = await call(b.url, 'POST', '/api/v1/ack/batch', {
    acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status, consumerGroup: m.consumerGroup })),
  });
  assert.equal(r.status, 200, r.text);
  assert.ok((r.body as { success: boolean }[]).every((x) => x.success), r.text);
}

/** [payload, deliveryAttempt] of each message. */
const seen = (msgs: Msg[]) => msgs.map((m) => [m.data, m.deliveryAttempt]);

describe('deliveryAttempt', () => {
  test('the probe: 6 popped, lease expired, 2 popped and acked: the other 4 come back as their second delivery', async () => {
    const q = await queueOf(6);
    assert.deepEqual(seen(await pop(q, 'batch=6&leaseSeconds=1')), [[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1]]);
    const two = await waitFor(async () => { const m = await pop(q, 'batch=2'); return m.length > 0 ? m : undefined; }, { what: 'the 1 s lease to expire' });
    assert.deepEqual(seen(two), [[0, 2], [1, 2]]);
    await ack(two);
    const rest = await pop(q, 'batch=10');
    assert.deepEqual(seen(rest), [[2, 2], [3, 2], [4, 2], [5, 2]], 'delivered once before, in the first batch');
    await ack(rest);
    assert.deepEqual(await pop(q, 'batch=10'), []);
  });

  test('retry nack, then smaller batches: each message counts its own deliveries', async () => {
    const q = await queueOf(6);
    const first = await pop(q, 'batch=6');
    await ack([first[0]!], 'retry'); // releases the lease, the cursor stays at 0
    const a = await pop(q, 'batch=2');
    assert.deepEqual(seen(a), [[0, 2], [1, 2]]);
    await ack([a[1]!]);
    const b1 = await pop(q, 'batch=1');
    assert.deepEqual(seen(b1), [[2, 2]]);
    await ack([b1[0]!], 'retry');
    assert.deepEqual(seen(await pop(q, 'batch=10')), [[2, 3], [3, 2], [4, 2], [5, 2]], 'offset 2 was delivered three times, 3–5 twice');
  });

  test('a batch reaching past what was delivered before: redeliveries and first deliveries side by side', async () => {
    const q = await queueOf(6);
    const first = await pop(q, 'batch=2');
    await ack([first[0]!], 'retry');
    const again = await pop(q, 'batch=10');
    assert.deepEqual(seen(again), [[0, 2], [1, 2], [2, 1], [3, 1], [4, 1], [5, 1]]);
    await ack([again[0]!]); // completes offset 0, the lease goes on
    await ack([again[3]!], 'retry'); // rewinds to offset 3 (1 and 2 completed below it)
    assert.deepEqual(seen(await pop(q, 'batch=10')), [[3, 2], [4, 2], [5, 2]]);
  });

  test('a failed ack rewinds to the failure: the rest of the batch is a redelivery, new messages are first deliveries', async () => {
    const q = await queueOf(4);
    const first = await pop(q, 'batch=4');
    await ack([first[0]!, first[1]!]);
    await ack([first[2]!], 'failed');
    const again = await pop(q, 'batch=1');
    assert.deepEqual(seen(again), [[2, 2]]);
    await ack(again);
    await call(b.url, 'POST', '/api/v1/push', { items: [4, 5].map((i) => ({ queue: q, partition: 'p', payload: i, transactionId: `t${i}` })) });
    assert.deepEqual(seen(await pop(q, 'batch=10')), [[3, 2], [4, 1], [5, 1]]);
  });

  test('consumer groups count apart; a seek starts the count again, backwards or within a batch', async () => {
    const before = new Date(Date.now() - 60_000).toISOString();
    const q = await queueOf(3);
    const g = uniqueName('g');
    const first = await pop(q, `batch=3&consumerGroup=${g}`);
    await ack([first[0]!], 'retry');
    assert.deepEqual(seen(await pop(q, `batch=3&consumerGroup=${g}`)), [[0, 2], [1, 2], [2, 2]]);
    assert.deepEqual(seen(await pop(q, 'batch=3&consumerGroup=other')), [[0, 1], [1, 1], [2, 1]], 'another group: its first delivery');
    const seek = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { timestamp: before });
    assert.equal(seek.status, 200, seek.text);
    const replay = await pop(q, `batch=3&consumerGroup=${g}`);
    assert.deepEqual(seen(replay), [[0, 1], [1, 1], [2, 1]], 'a seek sets the position: what it re-offers is counted from 1 again');
    await ack(replay);
    const back = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { timestamp: before });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(seen(await pop(q, `batch=3&consumerGroup=${g}`)), [[0, 1], [1, 1], [2, 1]], 'after acking and seeking back');
  });

  test('the counts survive a kill -9 and a restart', async () => {
    const own = await startBroker();
    try {
      const q = uniqueName();
      await call(own.url, 'POST', '/api/v1/push', { items: Array.from({ length: 6 }, (_, i) => ({ queue: q, partition: 'p', payload: i, transactionId: `t${i}` })) });
      const popOwn = async () => (await call(own.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=2`)).body.messages as Msg[];
      const first = (await call(own.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=6`)).body.messages as Msg[];
      const nack = await call(own.url, 'POST', '/api/v1/ack', { transactionId: first[0]!.transactionId, partitionId: first[0]!.partitionId, leaseId: first[0]!.leaseId, status: 'retry' });
      assert.equal(nack.status, 200, nack.text);
      const two = await popOwn();
      assert.deepEqual(seen(two), [[0, 2], [1, 2]]);
      const acked = await call(own.url, 'POST', '/api/v1/ack', { transactionId: two[1]!.transactionId, partitionId: two[1]!.partitionId, leaseId: two[1]!.leaseId, status: 'completed' });
      assert.equal(acked.status, 200, acked.text);
      await own.kill();
      const again = await startBroker({ dataDir: own.dataDir });
      try {
        const r = await call(again.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=10`);
        assert.deepEqual(seen(r.body.messages), [[2, 2], [3, 2], [4, 2], [5, 2]]);
      } finally {
        await again.stop();
      }
    } finally {
      await own.stop();
    }
  });
});
