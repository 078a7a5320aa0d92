/**
 * A tumbling-window count worker (the shape of the SDKs' Streams runner: pop under
 * `streams.<query>`, read state, commit one cycle per batch, idle-flush ripe windows when the
 * source is quiet) against a real broker that is SIGKILLed halfway and restarted on the same
 * port. Every request is retried on network errors, as the SDKs' HTTP client does, so cycles
 * whose answer was lost are replayed. The sink must hold every window exactly once with the
 * count computed from the source messages' `createdAt` (docs/streams.md#cycle, docs/streams.md#idle-flush).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName, type Answer } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

const WINDOW_MS = 1000;
const TOTAL = 240;

test('a tumbling-window count survives a SIGKILL of the broker: no window emitted twice, none lost, every count right', { timeout: 120_000 }, async () => {
  let broker: BrokerHandle = await startBroker();
  const url = broker.url;
  let down = false;
  /** Retries network errors (the broker is down) until it answers, like the SDKs' HTTP client with a long budget. */
  const req = async (method: string, path: string, body?: unknown): Promise<Answer> =>
    waitFor(async () => {
      try {
        return await call(url, method, path, body);
      } catch {
        return undefined;
      }
    }, { timeoutMs: 30_000, intervalMs: 50, what: `${method} ${path} to be answered` });

  const src = uniqueName('src');
  const sink = uniqueName('sink');
  const group = 'streams.count';
  assert.equal((await req('POST', '/api/v1/configure', { queue: src, options: { leaseTime: 2 } })).status, 200);
  const queryId = (await req('POST', '/streams/v1/queries', { name: 'count', source_queue: src, sink_queue: sink, config_hash: 'tumbling-count-1s' })).body.query_id as string;

  let pushed = 0;
  const producer = (async () => {
    for (let i = 0; i < TOTAL; i++) {
      if (i === TOTAL / 4 || i === (3 * TOTAL) / 4) {
        // The messages must span several windows whatever the push rate, so that some batches close
        // a window (emitting cycles) besides the idle flushes: wait for the next window to begin.
        const now = Math.floor(Date.now() / WINDOW_MS);
        await waitFor(() => Math.floor(Date.now() / WINDOW_MS) > now, { timeoutMs: 5_000, intervalMs: 10, what: 'the next window to begin' });
      }
      const r = await req('POST', '/api/v1/push', { items: [{ queue: src, partition: `p${i % 2}`, transactionId: `m-${i}`, payload: { i } }] });
      assert.equal(r.status, 201, r.text);
      pushed++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();

  const windowOf = (createdAt: string) => Math.floor(Date.parse(createdAt) / WINDOW_MS) * WINDOW_MS;
  const closeRows = (rows: { key: string; value: { count: number; windowStart: number } }[]) => ({
    state_ops: rows.map((r) => ({ type: 'delete', key: r.key })),
    push_items: rows.map((r) => ({ queue: sink, payload: { windowStart: r.value.windowStart, partition: r.key.split('\u001f')[1], count: r.value.count } })),
  });

  /** The last committed cycles that emitted: replayed after the restart as if their answers had been lost. */
  let lastEmitting: unknown;
  let lastFlush: unknown;
  let replayAfterRestart = false;
  const replays: { success: boolean; error?: string }[] = [];

  const worker = (async () => {
    let quiet = 0;
    const partitions = new Set<string>();
    for (;;) {
      if (replayAfterRestart && lastEmitting) {
        replayAfterRestart = false;
        replays.push((await req('POST', '/streams/v1/cycle', lastEmitting)).body);
      }
      const pop = await req('GET', `/api/v1/pop/queue/${src}?batch=25&consumerGroup=${group}&wait=true&timeout=300`);
      if (pop.status === 204) {
        // idle flush of every partition seen: windows whose end has passed
        let flushed = 0;
        for (const partitionId of partitions) {
          const rows = (await req('POST', '/streams/v1/state/get', { query_id: queryId, partition_id: partitionId, ripe_at_or_before: Date.now() })).body.rows;
          if (rows.length === 0) continue;
          const body = { query_id: queryId, partition_id: partitionId, consumer_group: group, ...closeRows(rows), ack: null, release_lease: true };
          const r = await req('POST', '/streams/v1/cycle', body);
          if (r.body.success && !r.body.deferred) {
            flushed += rows.length;
            lastFlush = body;
          }
        }
        if (pushed === TOTAL && !down && flushed === 0 && ++quiet >= 3) return;
        continue;
      }
      quiet = 0;
      const batch = pop.body as { partitionId: string; partition: string; leaseId: string; messages: { createdAt: string }[] };
      partitions.add(batch.partitionId);
      const rows = new Map<string, { count: number; windowStart: number; windowEnd: number }>();
      for (const r of (await req('POST', '/streams/v1/state/get', { query_id: queryId, partition_id: batch.partitionId })).body.rows) rows.set(r.key, r.value);
      const touched = new Set<string>();
      let streamTime = 0;
      for (const m of batch.messages) {
        const ws = windowOf(m.createdAt);
        streamTime = Math.max(streamTime, Date.parse(m.createdAt));
        const key = `tumb\u001f${batch.partition}\u001f${ws}`;
        const v = rows.get(key) ?? { count: 0, windowStart: ws, windowEnd: ws + WINDOW_MS };
        v.count++;
        rows.set(key, v);
        touched.add(key);
      }
      const closed = [...rows].filter(([, v]) => v.windowEnd <= streamTime).map(([key, value]) => ({ key, value }));
      const open = [...touched].filter((k) => rows.get(k)!.windowEnd > streamTime);
      const { state_ops, push_items } = closeRows(closed);
      // a window opened and closed in this batch has no row to delete: the SDK deletes only rows it read
      const stored = new Set((await req('POST', '/streams/v1/state/get', { query_id: queryId, partition_id: batch.partitionId, keys: closed.map((c) => c.key) })).body.rows.map((r: { key: string }) => r.key));
      const body = {
        query_id: queryId, partition_id: batch.partitionId, consumer_group: group,
        state_ops: [...state_ops.filter((o) => stored.has(o.key)), ...open.map((key) => ({ type: 'upsert', key, value: rows.get(key) }))],
        push_items, ack: { leaseId: batch.leaseId, count: batch.messages.length, status: 'completed' }, release_lease: true,
      };
      const r = await req('POST', '/streams/v1/cycle', body);
      if (r.body.success && push_items.length > 0) lastEmitting = body;
    }
  })();

  await waitFor(() => pushed >= TOTAL / 2, { timeoutMs: 60_000, what: 'half of the messages pushed' });
  down = true;
  await broker.kill();
  broker = await startBroker({ dataDir: broker.dataDir, port: broker.port });
  down = false;
  replayAfterRestart = true;
  await producer;
  await worker;
  assert.ok(lastEmitting && lastFlush, 'the run had emitting cycles and idle flushes');
  for (const r of replays) assert.deepEqual([r.success, r.error], [false, 'Invalid or expired lease'], 'a replayed cycle commits nothing');
  const flushAgain = await req('POST', '/streams/v1/cycle', lastFlush);
  assert.equal(flushAgain.body.success, false, 'a replayed idle flush commits nothing');

  try {
    const readAll = async (queue: string) => {
      const out: { createdAt: string; partition: string; data: any }[] = [];
      const g = uniqueName('verify');
      for (;;) {
        const r = await call(url, 'GET', `/api/v1/pop/queue/${queue}?batch=1000&consumerGroup=${g}&autoAck=true&partitions=10`);
        if (r.status === 204) return out;
        out.push(...r.body.messages);
      }
    };
    const expected = new Map<string, number>();
    const source = await readAll(src);
    assert.equal(source.length, TOTAL, 'every pushed message stored once');
    for (const m of source) {
      const k = `${m.partition}@${windowOf(m.createdAt)}`;
      expected.set(k, (expected.get(k) ?? 0) + 1);
    }
    const emitted = new Map<string, number>();
    for (const m of await readAll(sink)) {
      const k = `${m.data.partition}@${m.data.windowStart}`;
      assert.equal(emitted.has(k), false, `window ${k} emitted twice`);
      emitted.set(k, m.data.count);
    }
    assert.deepEqual([...emitted].sort(), [...expected].sort(), 'each window once, with the count of its messages');
  } finally {
    await broker.stop();
  }
});
