/**
 * Maintenance modes (push spool replayed in order, also across a restart; pop 204) and the
 * Prometheus exposition parsed with a Prometheus text-format parser.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { startBroker } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { parkWitness, waitFor, waitForParked } from '../../helpers/wait.js';

const require = createRequire(import.meta.url);
const parsePrometheus = require('parse-prometheus-text-format') as (text: string) => { name: string; type: string; metrics: { value?: string; labels?: Record<string, string> }[] }[];

async function drainAll(url: string, queue: string): Promise<number[]> {
  const out: number[] = [];
  for (;;) {
    const r = await call(url, 'GET', `/api/v1/pop/queue/${queue}?batch=1000&autoAck=true`);
    if (r.status === 204) return out;
    for (const m of r.body.messages) out.push(m.data.n);
  }
}

describe('maintenance', () => {
  test('pushes during push maintenance are buffered, survive a restart, and replay in order', async () => {
    const b1 = await startBroker();
    const q = uniqueName();
    try {
      await call(b1.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 0 } }] });
      const on = await call(b1.url, 'POST', '/api/v1/system/maintenance', { enabled: true });
      assert.equal(on.status, 200);
      assert.equal(on.body.maintenanceMode, true);
      let n = 1;
      for (let batch = 0; batch < 5; batch++) {
        const items = Array.from({ length: 20 }, () => ({ queue: q, payload: { n: n++ } }));
        const r = await call(b1.url, 'POST', '/api/v1/push', { items });
        assert.equal(r.status, 201);
        assert.ok(r.body.every((x: any) => x.status === 'buffered'), r.text);
      }
      assert.deepEqual(await drainAll(b1.url, q), [0], 'buffered pushes are not visible yet');
      const st = await call(b1.url, 'GET', '/api/v1/system/maintenance');
      assert.equal(st.body.bufferedMessages, 100);
      assert.equal(st.body.maintenanceMode, true);
      assert.equal((await call(b1.url, 'POST', '/api/v1/system/maintenance', {})).status, 400);
      // A transaction that pushes is declined while maintenance is on: an answer, not an error in
      // the log (outside check: every such request logged a level-50 line).
      const tx = await call(b1.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: q, payload: { n: -1 } }] });
      assert.equal(tx.status, 503, tx.text);
      assert.equal(tx.body.code, 'maintenance_mode');
      const errorLines = b1.output().split('\n').filter((l) => l.includes('"level":50'));
      assert.deepEqual(errorLines, [], 'no error-level line');
    } finally {
      await b1.kill(); // crash: the spool and the flag must survive
    }
    const b2 = await startBroker({ dataDir: b1.dataDir });
    try {
      const st = await call(b2.url, 'GET', '/api/v1/system/maintenance');
      assert.equal(st.body.maintenanceMode, true, 'flag persisted');
      assert.equal(st.body.bufferedMessages, 100, 'spool persisted');
      // more pushes while still in maintenance, then off: all replay in push order
      await call(b2.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 101 } }] });
      const off = await call(b2.url, 'POST', '/api/v1/system/maintenance', { enabled: false });
      assert.equal(off.body.maintenanceMode, false);
      // a push right after turning it off queues behind the spool (order holds)
      await call(b2.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 102 } }] });
      await waitFor(async () => (await call(b2.url, 'GET', '/api/v1/system/maintenance')).body.bufferedMessages === 0, { what: 'the spool to replay' });
      const got = await drainAll(b2.url, q);
      assert.deepEqual(got, Array.from({ length: 102 }, (_, i) => i + 1));
    } finally {
      await b2.stop();
    }
  });

  // The reference's spool replay wrote the messages without waking the consumers parked on their
  // queue, so they saw them only at the next periodic re-check (queen-mq/queen: CHANGELOG.md,
  // 1.5.1: "the same announce now covers messages the spool drain replays").
  test('turning push maintenance off wakes a consumer parked on a queue with buffered pushes', async () => {
    const b1 = await startBroker();
    const q = uniqueName();
    try {
      await call(b1.url, 'POST', '/api/v1/system/maintenance', { enabled: true });
      const buffered = await call(b1.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }, { queue: q, payload: { n: 2 }, transactionId: 'named' }] });
      assert.deepEqual(buffered.body.map((x: any) => x.status), ['buffered', 'buffered']);
      // the reference's buffered answer names the queue, and the transactionId the caller gave
      assert.deepEqual(buffered.body.map((x: any) => [x.queue, x.transactionId]), [[q, undefined], [q, 'named']]);
      const witness = await parkWitness(b1.url, 20_000);
      const parked = call(b1.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000&batch=10&autoAck=true`);
      await waitForParked(b1.url, 2);
      await call(b1.url, 'POST', '/api/v1/system/maintenance', { enabled: false });
      const r = await parked;
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.messages.map((m: any) => m.data.n), [1, 2].slice(0, r.body.messages.length));
      assert.ok(witness.parked(), 'the replay woke the parked pop, not its timeout');
      await witness.release();
    } finally {
      await b1.stop();
    }
  });

  test('pop maintenance answers 204 at once, persists, and parked pops are released', async () => {
    const b1 = await startBroker();
    const q = uniqueName();
    try {
      await call(b1.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] });
      // Long-poll timeouts of 60 s: a pop that answers within waitFor's 10 s was answered by the
      // maintenance mode, not by its own timeout.
      const parked = call(b1.url, 'GET', `/api/v1/pop/queue/${q}-other?wait=true&timeout=60000`);
      await waitForParked(b1.url, 1);
      const on = await call(b1.url, 'POST', '/api/v1/system/maintenance/pop', { enabled: true });
      assert.deepEqual(on.body.popMaintenanceMode, true);
      await waitForParked(b1.url, 0);
      assert.equal((await parked).status, 204);
      let answered = false;
      const pending = call(b1.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=60000`).finally(() => (answered = true));
      await waitFor(() => answered, { what: 'a long-poll during pop maintenance to answer without parking' });
      const r = await pending;
      assert.equal(r.status, 204);
      assert.equal(r.text, '');
      assert.equal((await call(b1.url, 'GET', '/api/v1/system/maintenance/pop')).body.popMaintenanceMode, true);
    } finally {
      await b1.stop();
    }
    const b2 = await startBroker({ dataDir: b1.dataDir });
    try {
      assert.equal((await call(b2.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204, 'still on after restart');
      await call(b2.url, 'POST', '/api/v1/system/maintenance/pop', { enabled: false });
      assert.equal((await call(b2.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 200);
      const shared = await call(b2.url, 'GET', '/api/v1/system/shared-state');
      assert.equal(shared.body.pop_maintenance_mode, false);
    } finally {
      await b2.stop();
    }
  });
});

describe('prometheus', () => {
  test('/metrics/prometheus parses and carries the queen_* families', async () => {
    const b = await startBroker({ env: { QUEEN_METRICS_MAX_QUEUES: '2' } });
    try {
      const queues = [uniqueName(), uniqueName(), uniqueName()];
      for (const q of queues) await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }, { queue: q, payload: 2 }] });
      const p = await call(b.url, 'GET', `/api/v1/pop/queue/${queues[0]}?batch=1`);
      const m = p.body.messages[0];
      await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq' });
      const r = await fetch(`${b.url}/metrics/prometheus`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.equal(r.headers.get('cache-control'), 'no-cache');
      const families = parsePrometheus(await r.text());
      const byName = new Map(families.map((f) => [f.name, f]));
      const value = (name: string, labels: Record<string, string> = {}) =>
        Number(byName.get(name)?.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v))?.value);
      for (const name of [
        'queen_uptime_seconds', 'queen_process_resident_memory_bytes', 'queen_cluster_push_requests_total', 'queen_cluster_pop_requests_total',
        'queen_cluster_ack_requests_total', 'queen_cluster_push_messages_total', 'queen_dlq_depth', 'queen_dlq_depth_by_queue',
        'queen_queue_parked_consumers', 'queen_queue_pop_lag_milliseconds', 'queen_queue_push_messages_per_minute', 'queen_maintenance_mode_enabled',
        'queen_event_loop_lag_seconds', 'nodejs_eventloop_lag_seconds', 'queen_retention_last_sweep_seconds',
      ]) assert.ok(byName.has(name), name);
      assert.equal(value('queen_cluster_push_messages_total'), 6);
      assert.equal(value('queen_dlq_depth', { scope: 'cluster' }), 1);
      assert.equal(byName.get('queen_cluster_push_messages_total')!.type, 'COUNTER');
      // per-queue labels are capped at 2 + __other__
      const labels = new Set(byName.get('queen_dlq_depth_by_queue')!.metrics.map((x) => x.labels!.queue));
      assert.equal(labels.size, 3);
      assert.ok(labels.has('__other__'));
      assert.equal(value('queen_dlq_depth_by_queue', { queue: queues[0]! }), 1);
    } finally {
      await b.stop();
    }
  });
});

describe('push maintenance keeps announced ids', () => {
  test('the message_id answered with `buffered` is the id the replayed message carries', async () => {
    const b = await startBroker();
    try {
      const q = uniqueName('ids');
      await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: true });
      const r = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }, { queue: q, payload: 2, transactionId: 'own' }] });
      assert.deepEqual(r.body.map((x: any) => x.status), ['buffered', 'buffered']);
      await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: false });
      const popped = await waitFor(async () => {
        const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
        return p.status === 200 ? p.body : undefined;
      }, { what: 'the replayed messages to be poppable' });
      assert.deepEqual(popped.messages.map((m: any) => m.id), r.body.map((x: any) => x.message_id));
      assert.equal(popped.messages[0].transactionId, r.body[0].message_id, 'no transactionId: it defaults to the announced id');
    } finally {
      await b.stop();
    }
  });

  test('a transactionId repeated inside one spooled push is answered duplicate, as outside maintenance, and every id announced buffered is delivered', async () => {
    const b = await startBroker();
    try {
      const q = uniqueName('spool-dup');
      const off = uniqueName('spool-nodedup');
      await call(b.url, 'POST', '/api/v1/configure', { queue: off, options: { dedupWindowSeconds: 0 } });
      await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: true });
      const r = await call(b.url, 'POST', '/api/v1/push', { items: [
        { queue: q, payload: 1, transactionId: 'T1' }, { queue: q, payload: 2, transactionId: 'T1' }, { queue: q, partition: 'other', payload: 3, transactionId: 'T1' },
        { queue: off, payload: 4, transactionId: 'T1' }, { queue: off, payload: 5, transactionId: 'T1' },
      ] });
      assert.equal(r.status, 201);
      assert.deepEqual(r.body.map((x: any) => x.status), ['buffered', 'duplicate', 'buffered', 'buffered', 'buffered']);
      assert.equal(r.body[1].message_id, r.body[0].message_id, 'a duplicate names the first occurrence');
      await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: false });
      await waitFor(async () => (await call(b.url, 'GET', '/api/v1/system/maintenance')).body.bufferedMessages === 0, { what: 'the spool to replay' });
      const ids = async (queue: string, partition = 'Default') => {
        const p = await call(b.url, 'GET', `/api/v1/pop/queue/${queue}/partition/${partition}?batch=10&autoAck=true`);
        return p.status === 200 ? p.body.messages.map((m: any) => [m.id, m.data]) : [];
      };
      assert.deepEqual(await ids(q), [[r.body[0].message_id, 1]]);
      assert.deepEqual(await ids(q, 'other'), [[r.body[2].message_id, 3]]);
      assert.deepEqual(await ids(off), [[r.body[3].message_id, 4], [r.body[4].message_id, 5]], 'dedup off: both kept');
    } finally {
      await b.stop();
    }
  });
});
