/**
 * Conflation (docs/http-api.md#conflation): a conflating consumer group gets only the newest message of each claimed
 * partition, its ack commits everything behind it, and every answer echoes `conflation:true`
 * (empty ones too: 200, never 204). The policy is fixed at the group's first contact.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

const push = (q: string, partition: string, payloads: unknown[]) =>
  call(b.url, 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue: q, partition, payload })) });

describe('conflation', () => {
  test('bad combinations answer 400 with the failure body', async () => {
    const q = uniqueName();
    // Naming the built-in group is no way around the rule (outside check: it answered an ordinary 200 pop).
    for (const qs of ['conflation=true', 'conflation=true&consumerGroup=g&autoAck=true', 'conflation=true&consumerGroup=__QUEUE_MODE__']) {
      const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?${qs}`);
      assert.equal(r.status, 400, qs);
      assert.equal(r.body.success, false);
      assert.deepEqual(r.body.messages, []);
    }
  });

  test('only the newest message of each partition is delivered; its ack commits everything behind it', async () => {
    const q = uniqueName();
    await push(q, 'A', ['a1', 'a2', 'a3']);
    await push(q, 'B', ['b1', 'b2']);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=latest&subscriptionMode=all&conflation=true&partitions=10&batch=100`);
    assert.equal(r.status, 200);
    assert.equal(r.body.conflation, true);
    assert.deepEqual(r.body.messages.map((m: any) => m.data).sort(), ['a3', 'b2']);
    const acks = r.body.messages.map((m: any) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId }));
    const ack = await call(b.url, 'POST', '/api/v1/ack/batch', { consumerGroup: 'latest', acknowledgments: acks });
    assert.ok(ack.body.every((x: any) => x.success && x.leaseReleased));
    const empty = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=latest&conflation=true`);
    assert.equal(empty.status, 200, 'an empty conflating pop is 200, not 204');
    assert.deepEqual(empty.body.messages, []);
    assert.equal(empty.body.conflation, true);
    await push(q, 'A', ['a4']);
    const next = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=latest&conflation=true`);
    assert.deepEqual(next.body.messages.map((m: any) => m.data), ['a4']);
  });

  test('the policy is fixed at first contact: a disagreeing request is told, and the stored policy applies', async () => {
    const q = uniqueName();
    await push(q, 'P', [1, 2, 3]);
    const first = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=c&subscriptionMode=all&conflation=true&leaseSeconds=1`);
    assert.deepEqual(first.body.messages.map((m: any) => m.data), [3]);
    // the 1 s lease expires, then a pop that disagrees on the policy gets the message again
    const plain = await waitFor(async () => {
      const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=c&batch=10`);
      return r.body?.messages?.length > 0 ? r : undefined;
    }, { what: 'redelivery after the 1 s lease expires' });
    assert.equal(plain.body.conflationConflict, true);
    assert.equal(plain.body.conflation, true);
    assert.deepEqual(plain.body.messages.map((m: any) => m.data), [3], 'still conflated');
    const other = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=ordinary&subscriptionMode=all&batch=10`);
    assert.deepEqual(other.body.messages.map((m: any) => m.data), [1, 2, 3], 'other groups are unaffected');
    assert.equal(other.body.conflation, undefined);
    const depth = await call(b.url, 'GET', `/api/v1/resources/queues/${q}/depth?group=c`);
    assert.equal(depth.body.conflation, true);
  });
});
