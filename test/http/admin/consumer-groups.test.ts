/** Consumer-group admin over real HTTP: lag listings, detail, delete, seek, subscription timestamp. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { parkWitness, waitFor, waitForParked } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { DEFAULT_SUBSCRIPTION_MODE: 'all' } }); });
after(async () => { await b.stop(); });

async function push(queue: string, items: { partition?: string; payload: unknown }[]) {
  const r = await call(b.url, 'POST', '/api/v1/push', { items: items.map((i) => ({ queue, ...i })) });
  assert.equal(r.status, 201, r.text);
}
async function popCount(queue: string, group: string, extra = '') {
  const r = await call(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=100&partitions=100&consumerGroup=${group}&autoAck=true${extra}`);
  return r.status === 204 ? 0 : r.body.messages.length;
}

describe('consumer groups', () => {
  test('list with lag per queue, lagging, detail', async () => {
    const q = uniqueName();
    const g = uniqueName('g');
    await push(q, [{ partition: 'a', payload: 1 }, { partition: 'a', payload: 2 }, { partition: 'b', payload: 3 }]);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a?batch=1&consumerGroup=${g}&autoAck=true`);
    assert.equal(r.body.messages.length, 1);
    const list = await call(b.url, 'GET', '/api/v1/consumer-groups');
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    const row = list.body.find((x: any) => x.name === g && x.queueName === q);
    assert.equal(row.totalLag, 2);
    assert.equal(row.partitionsWithLag, 2);
    assert.deepEqual(row.topics, [q]);
    assert.ok(row.maxTimeLag >= 0);
    assert.ok(['Stable', 'Lagging', 'Dead'].includes(row.state));

    const lagging0 = await call(b.url, 'GET', '/api/v1/consumer-groups/lagging?minLagSeconds=0');
    assert.ok(lagging0.body.some((x: any) => x.consumerGroup === g && x.partition === 'b' && x.offsetLag === 1));
    // the reference's snake_case names carry the same facts (its dashboard reads offset_lag and time_lag_seconds)
    const lag = lagging0.body.find((x: any) => x.consumerGroup === g && x.partition === 'b');
    assert.deepEqual([lag.consumer_group, lag.queue_name, lag.partition_name, lag.partition_id, lag.offset_lag, lag.time_lag_seconds, lag.oldest_unconsumed_at, lag.worker_id, lag.last_consumed_at],
      [g, lag.queueName, 'b', lag.partitionId, 1, lag.timeLagSeconds, lag.oldestUnconsumedAt, null, null]);
    assert.equal(lag.lag_hours, Math.round(lag.timeLagSeconds / 36) / 100);
    const lagging = await call(b.url, 'GET', '/api/v1/consumer-groups/lagging?minLagSeconds=3600');
    assert.ok(!lagging.body.some((x: any) => x.consumerGroup === g));
    assert.equal((await call(b.url, 'GET', '/api/v1/consumer-groups/lagging?minLagSeconds=x')).status, 400);

    const d = await call(b.url, 'GET', `/api/v1/consumer-groups/${g}`);
    assert.equal(d.status, 200);
    // keyed by queue name at the top level, as the reference's get_consumer_group_details_v1
    assert.deepEqual(Object.keys(d.body), [q]);
    assert.equal(d.body[q].totalLag, 2);
    const [pa] = d.body[q].partitions;
    assert.deepEqual([pa.partition, pa.offsetLag, pa.workerId, pa.lastConsumedAt, typeof pa.timeLagSeconds, typeof pa.leaseActive, typeof pa.totalConsumed],
      ['a', 1, null, null, 'number', 'boolean', 'number']);
    const none = await call(b.url, 'GET', '/api/v1/consumer-groups/no-such-group');
    assert.deepEqual([none.status, none.body], [200, {}], 'a group that reads no queue: 200 {} (the reference\'s answer), not a 404 the clients raise on');
  });

  test('a queue named like an Object.prototype key (__proto__, constructor) is listed in the group detail', async () => {
    const g = uniqueName('proto-g');
    for (const q of ['__proto__', 'constructor']) {
      await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }, { queue: q, payload: 2 }] });
      const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=${g}&subscriptionMode=all&batch=1`);
      assert.equal(p.status, 200);
    }
    const d = await call(b.url, 'GET', `/api/v1/consumer-groups/${g}`);
    assert.equal(d.status, 200);
    assert.deepEqual(Object.keys(JSON.parse(d.text)).sort(), ['__proto__', 'constructor']);
    assert.ok(JSON.parse(d.text).constructor.totalLag >= 1);
  });

  test('delete a group (one queue, all queues) and it re-registers afresh', async () => {
    const q1 = uniqueName();
    const q2 = uniqueName();
    const g = uniqueName('g');
    await push(q1, [{ payload: 1 }, { payload: 2 }]);
    await push(q2, [{ payload: 1 }]);
    assert.equal(await popCount(q1, g), 2);
    assert.equal(await popCount(q2, g), 1);
    const one = await call(b.url, 'DELETE', `/api/v1/consumer-groups/${g}/queues/${q1}?deleteMetadata=true`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, { success: true, consumerGroup: g, deletedPartitions: 1, metadataDeleted: true, queueName: q1 });
    assert.equal(await popCount(q1, g, '&subscriptionMode=all'), 2, 'replays from the start after delete');
    assert.equal(await popCount(q2, g), 0, 'other queue untouched');
    const all = await call(b.url, 'DELETE', `/api/v1/consumer-groups/${g}?deleteMetadata=true`);
    assert.equal(all.body.deletedPartitions, 2);
    assert.equal(await popCount(q2, g, '&subscriptionMode=all'), 1);
    const none = await call(b.url, 'DELETE', `/api/v1/consumer-groups/never-seen`);
    assert.equal(none.status, 200);
    assert.equal(none.body.deletedPartitions, 0);
    assert.equal((await call(b.url, 'DELETE', `/api/v1/consumer-groups/${g}/queues/missing-q`)).status, 404);
    // deleteMetadata=false keeps the subscription, drops cursors
    assert.equal(await popCount(q2, g), 0);
    await call(b.url, 'DELETE', `/api/v1/consumer-groups/${g}?deleteMetadata=false`);
    assert.equal(await popCount(q2, g), 1);
    assert.equal((await call(b.url, 'DELETE', `/api/v1/consumer-groups/${g}?deleteMetadata=maybe`)).status, 400);
  });

  test('seek to end, to a timestamp, one partition; parked consumers wake', async () => {
    const q = uniqueName();
    const g = uniqueName('g');
    await push(q, [{ partition: 'a', payload: 1 }, { partition: 'b', payload: 2 }]);
    // `mid` is strictly after the first push and strictly before the second (timestamps are in ms).
    const pushed = Date.now();
    const midMs = await waitFor(() => (Date.now() > pushed ? Date.now() : 0), { what: 'the clock to pass the first push', intervalMs: 1 });
    const mid = new Date(midMs).toISOString();
    await waitFor(() => Date.now() > midMs, { what: 'the clock to pass the seek timestamp', intervalMs: 1 });
    await push(q, [{ partition: 'a', payload: 3 }, { partition: 'b', payload: 4 }]);

    const end = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { toEnd: true });
    assert.equal(end.status, 200, end.text);
    assert.equal(end.body.partitionsUpdated, 2);
    assert.equal(await popCount(q, g), 0);
    const ts = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { timestamp: mid });
    assert.equal(ts.body.success, true);
    assert.equal(await popCount(q, g), 2, 'the two messages after the timestamp');
    const start = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/partitions/a/seek`, { timestamp: '2000-01-01T00:00:00Z' });
    assert.equal(start.body.cursorMovedTo, 0);
    assert.equal(await popCount(q, g), 2, 'partition a from the start');
    const impossible = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { timestamp: '2020-02-30T00:00:00Z' });
    assert.equal(impossible.status, 400, 'a day February lacks is not moved to 1 March');
    assert.equal(impossible.body.code, 'invalid_request');
    const both = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { toEnd: true, timestamp: '2000-01-01T00:00:00Z' });
    assert.equal(both.status, 400, 'toEnd and a timestamp contradict each other');
    assert.match(both.body.error, /not both/);
    const empty = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/partitions/a/seek`);
    assert.equal(empty.body.updated, true, 'empty body ⇒ to end');

    // a parked pop wakes when a seek rewinds
    // (a witness pop parked first with the same timeout would time out first if the seek did not wake it)
    const witness = await parkWitness(b.url, 20_000);
    const parked = call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10&consumerGroup=${g}&wait=true&timeout=20000&autoAck=true`);
    await waitForParked(b.url, 2);
    await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/partitions/b/seek`, { timestamp: '2000-01-01T00:00:00Z' });
    const woke = await parked;
    assert.equal(woke.status, 200);
    assert.equal(woke.body.messages.length, 2);
    assert.ok(witness.parked(), 'the seek woke the parked pop, not its timeout');
    await witness.release();

    const bad = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, {});
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /toEnd=true or a timestamp/);
    assert.equal((await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/seek`, { timestamp: 'soon' })).status, 400);
    assert.equal((await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/missing-q/seek`, { toEnd: true })).status, 404);
    const np = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/queues/${q}/partitions/zz/seek`, { toEnd: true });
    assert.equal(np.status, 404);
    assert.equal(np.body.success, false);
  });

  test('subscription timestamp applies to partitions the group has not touched', async () => {
    const q = uniqueName();
    const g = uniqueName('g');
    await push(q, [{ partition: 'a', payload: 1 }]);
    assert.equal(await popCount(q, g, '&subscriptionMode=new'), 0);
    await push(q, [{ partition: 'b', payload: 2 }]);
    const r = await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/subscription`, { subscriptionTimestamp: '2000-01-01T00:00:00.000Z' });
    assert.equal(r.status, 200);
    assert.equal(r.body.rowsUpdated, 1);
    // partition a's cursor was never written (nothing consumed): it follows the new cut-off too
    assert.equal(await popCount(q, g), 2);
    assert.equal((await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/subscription`, {})).status, 400);
    assert.equal((await call(b.url, 'POST', `/api/v1/consumer-groups/${g}/subscription`, { subscriptionTimestamp: 'x' })).status, 400);
  });
});
