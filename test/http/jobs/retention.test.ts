/**
 * Retention and eviction over real HTTP: consumed messages go after completedRetentionSeconds
 * while unconsumed ones stay; retentionSeconds and maxWaitTimeSeconds remove unconsumed messages
 * and count each removal.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { RETENTION_INTERVAL: '200', DEFAULT_SUBSCRIPTION_MODE: 'all' } }); });
after(async () => { await b.stop(); });

async function partitions(q: string): Promise<Record<string, { total: number; firstOffset: number }>> {
  const r = await call(b.url, 'GET', `/api/v1/resources/partitions?queue=${q}`);
  return Object.fromEntries(r.body.partitions.map((p: any) => [p.name, { total: p.messages.total, firstOffset: p.firstOffset }]));
}
async function removedMetric(q: string, consumed: string): Promise<number> {
  const text = await (await fetch(`${b.url}/metrics/prometheus`)).text();
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('queen_retention_removed_messages_total{') && line.includes(`queue="${q}"`) && line.includes(`consumed="${consumed}"`)) {
      n += Number(line.split(' ').pop());
    }
  }
  return n;
}
/** Only for windows that are the subject of a test: sweeps (every 200 ms) run and must remove nothing. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retention', () => {
  test('completedRetentionSeconds removes consumed messages only, all groups considered', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { retentionEnabled: true, completedRetentionSeconds: 1 } });
    const items = [];
    for (const partition of ['a', 'b']) for (let i = 0; i < 5; i++) items.push({ queue: q, partition, payload: i });
    await call(b.url, 'POST', '/api/v1/push', { items });
    // queue mode consumes partition a fully and 2 of b; group g consumes all of a only
    const pa = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a?batch=10&autoAck=true`);
    assert.equal(pa.body.messages.length, 5);
    const pb = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/b?batch=2`);
    const last = pb.body.messages[1];
    await call(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId });
    const g = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a?batch=10&consumerGroup=g&autoAck=true`);
    assert.equal(g.body.messages.length, 5);
    await sleep(400); // the subject: about two sweeps run while the consumed messages are younger than 1 s
    assert.equal((await partitions(q)).a!.total, 5, 'younger than completedRetentionSeconds: kept');
    const after = await waitFor(async () => { const p = await partitions(q); return p.a!.total === 0 ? p : undefined; }, { what: 'partition a to be emptied by retention' });
    assert.deepEqual(after.a, { total: 0, firstOffset: 5 }, 'a: consumed by every group, removed');
    // b: queue mode consumed 2, group g consumed none (subscription all) ⇒ nothing is consumed by every group
    assert.deepEqual(after.b, { total: 5, firstOffset: 0 }, 'b: unconsumed by g, kept');
    // g catches up on b: its consumed prefix (2 by queue mode) can go now
    await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/b?batch=10&consumerGroup=g&autoAck=true`);
    await waitFor(async () => (await partitions(q)).b!.firstOffset === 2, { what: 'the consumed prefix of b to be removed' });
    assert.deepEqual((await partitions(q)).b, { total: 3, firstOffset: 2 });
    assert.equal(await removedMetric(q, 'true'), 7);
    assert.equal(await removedMetric(q, 'false'), 0, 'nothing unconsumed was removed');
    // the queue still works after its head moved
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'a', payload: 'new' }] });
    const again = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a?autoAck=true`);
    assert.equal(again.body.messages[0].data, 'new');
    assert.equal(again.body.messages[0].offset, 5);
  });

  test('retentionSeconds and maxWaitTimeSeconds remove unconsumed messages, counted as unconsumed', async () => {
    const q1 = uniqueName();
    const q2 = uniqueName();
    const q3 = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q1, options: { retentionEnabled: true, retentionSeconds: 1 } });
    await call(b.url, 'POST', '/api/v1/configure', { queue: q2, options: { maxWaitTimeSeconds: 1 } });
    await call(b.url, 'POST', '/api/v1/configure', { queue: q3, options: { retentionEnabled: false, retentionSeconds: 1 } });
    for (const q of [q1, q2, q3]) await call(b.url, 'POST', '/api/v1/push', { items: [1, 2, 3].map((payload) => ({ queue: q, payload })) });
    await waitFor(async () => (await partitions(q1)).Default!.total === 0 && (await partitions(q2)).Default!.total === 0, { what: 'q1 (retentionSeconds) and q2 (maxWaitTimeSeconds) to be emptied' });
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q1, payload: 'fresh' }] });
    await sleep(400); // the subject: about two sweeps run while 'fresh' is younger than retentionSeconds
    assert.deepEqual((await partitions(q1)).Default, { total: 1, firstOffset: 3 });
    assert.deepEqual((await partitions(q2)).Default, { total: 0, firstOffset: 3 });
    assert.deepEqual((await partitions(q3)).Default, { total: 3, firstOffset: 0 }, 'retentionEnabled:false ⇒ kept');
    assert.equal(await removedMetric(q1, 'false'), 3);
    assert.equal(await removedMetric(q2, 'false'), 3);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q1}?batch=10`);
    assert.deepEqual(p.body.messages.map((m: any) => m.data), ['fresh']);
    // the log line travels on the broker's stdout pipe, which may deliver it after an HTTP answer
    await waitFor(() => /retention removed unconsumed messages/.test(b.output()), { what: 'the retention log line' });
  });
});
