/**
 * Streams over HTTP (docs/streams.md#tests): registration, the atomic cycle (full, replayed, gate,
 * nack, idle-flush, refused), state reads with ripeness, encryption of an encrypted sink, limits,
 * and what a SIGKILL leaves: each against a real broker process.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

const post = (url: string, p: string, body: unknown) => call(url, 'POST', p, body);

async function register(url: string, name: string, source: string, sink: string, hash = 'h1', reset?: boolean) {
  return post(url, '/streams/v1/queries', { name, source_queue: source, sink_queue: sink, config_hash: hash, ...(reset === undefined ? {} : { reset }) });
}

async function pushN(url: string, queue: string, n: number, partition = 'p') {
  const r = await post(url, '/api/v1/push', { items: Array.from({ length: n }, (_, i) => ({ queue, partition, payload: { n: i } })) });
  assert.equal(r.status, 201, r.text);
}

/** One leased pop for the stream's group; the batch's partition id, lease id and messages. */
async function popBatch(url: string, queue: string, group: string, batch = 10) {
  const r = await call(url, 'GET', `/api/v1/pop/queue/${queue}?batch=${batch}&consumerGroup=${group}`);
  return r.status === 204 ? undefined : r.body as { partitionId: string; leaseId: string; messages: { transactionId: string; id: string; data: any }[] };
}

async function drain(url: string, queue: string, group = 'reader'): Promise<{ id: string; data: any; partition: string }[]> {
  const out: { id: string; data: any; partition: string }[] = [];
  for (;;) {
    const r = await call(url, 'GET', `/api/v1/pop/queue/${queue}?batch=100&consumerGroup=${group}&autoAck=true`);
    if (r.status === 204) return out;
    out.push(...r.body.messages);
  }
}

const state = (url: string, queryId: string, partitionId: string, extra: object = {}) =>
  post(url, '/streams/v1/state/get', { query_id: queryId, partition_id: partitionId, ...extra });

const STALE = 'state changed since it was read: flush again';

/** What the SDK's idle flush does: read the partition's state, then commit; again while deferred because the state changed since the read. */
async function flushCycle(url: string, body: { query_id: string; partition_id: string; [field: string]: unknown }) {
  return waitFor(async () => {
    await state(url, body.query_id, body.partition_id, { ripe_at_or_before: Number.MAX_SAFE_INTEGER });
    const r = await post(url, '/streams/v1/cycle', body);
    return r.body.deferred === STALE ? undefined : r;
  }, { timeoutMs: 10_000, what: 'an idle flush that is not deferred' });
}

describe('streams', () => {
  let b: BrokerHandle;
  before(async () => { b = await startBroker(); });
  after(async () => { await b.stop(); });

  test('register twice with the same hash: one query_id, fresh true then false; another hash is 409; reset:true wipes the state', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const r1 = await register(b.url, name, src, 'sink');
    assert.equal(r1.status, 200, r1.text);
    assert.equal(r1.body.fresh, true);
    const r2 = await register(b.url, name, src, 'sink');
    assert.deepEqual([r2.body.query_id, r2.body.fresh, r2.body.reset], [r1.body.query_id, false, false]);
    // some state to wipe
    await pushN(b.url, src, 1);
    const batch = (await popBatch(b.url, src, `streams.${name}`))!;
    const c = await post(b.url, '/streams/v1/cycle', {
      query_id: r1.body.query_id, partition_id: batch.partitionId, consumer_group: `streams.${name}`,
      state_ops: [{ type: 'upsert', key: 'k', value: { acc: 1 } }], push_items: [], ack: { leaseId: batch.leaseId, count: 1 }, release_lease: true,
    });
    assert.equal(c.body.success, true, c.text);
    const r3 = await register(b.url, name, src, 'sink', 'h2');
    assert.equal(r3.status, 409);
    assert.deepEqual(r3.body, {
      success: false, query_id: r1.body.query_id, name, code: 'streams_config_hash_mismatch',
      error: `config_hash mismatch: operator chain changed for queryId '${name}'. Pass reset:true to wipe existing state, or use a new queryId.`,
    });
    assert.equal((await state(b.url, r1.body.query_id, batch.partitionId)).body.rows.length, 1, 'a refused registration keeps the state');
    const r4 = await register(b.url, name, src, '', 'h2', true);
    assert.deepEqual([r4.status, r4.body.query_id, r4.body.reset, r4.body.config_hash], [200, r1.body.query_id, true, 'h2']);
    assert.deepEqual((await state(b.url, r1.body.query_id, batch.partitionId)).body.rows, []);
    const listed = (await call(b.url, 'GET', '/api/v1/streams/queries')).body.queries.find((q: any) => q.name === name);
    assert.equal(listed.sink_queue, null, '"" is stored as no sink');
  });

  test('concurrent registrations of one name resolve to one id', async () => {
    const name = uniqueName('q');
    const all = await Promise.all(Array.from({ length: 8 }, () => register(b.url, name, 'src', 'sink')));
    assert.equal(new Set(all.map((r) => r.body.query_id)).size, 1);
    assert.equal(all.filter((r) => r.body.fresh).length, 1);
  });

  test('a full cycle commits state, sink messages and the ack; replaying the same body emits nothing and changes nothing', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, sink)).body.query_id;
    await pushN(b.url, src, 5);
    const batch = (await popBatch(b.url, src, group))!;
    assert.equal(batch.messages.length, 5);
    const body = {
      query_id: q, partition_id: batch.partitionId, consumer_group: group,
      state_ops: [{ type: 'upsert', key: 'tumb\u001fw1\u001fk', value: { acc: 5, windowEnd: 1000, big: 'BIG' } }, { type: 'upsert', key: 'other' }],
      push_items: [{ queue: sink, payload: { count: 5 } }, { queue: sink, partition: '', data: { count: 6 } }],
      ack: { transactionId: batch.messages[4]!.transactionId, leaseId: batch.leaseId, status: 'completed', count: 5 }, release_lease: true,
    };
    const r = await post(b.url, '/streams/v1/cycle', JSON.stringify(body).replace('"big":"BIG"', '"big":12345678901234567890'));
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      success: true, query_id: q, partition_id: batch.partitionId, queueName: src, state_ops_applied: 2,
      push_results: [{ queue: sink, partition: 'Default', status: 'queued', baseOffset: 0 }],
      ack_result: { success: true, count: 5, lease_released: true, dlq: false },
    });
    assert.equal(await popBatch(b.url, src, group), undefined, 'cursor at the batch end and lease gone: nothing left to pop');
    await pushN(b.url, src, 1);
    assert.deepEqual((await popBatch(b.url, src, group))!.messages.map((m) => m.data), [{ n: 0 }], 'the next pop starts after the batch');
    const rows = (await state(b.url, q, batch.partitionId)).body.rows;
    assert.deepEqual(rows.map((x: any) => x.key), ['other', 'tumb\u001fw1\u001fk']);
    assert.ok((await state(b.url, q, batch.partitionId)).text.includes('"big":12345678901234567890'), 'state values returned digit for digit');

    const replay = await post(b.url, '/streams/v1/cycle', { ...body, state_ops: [{ type: 'upsert', key: 'other', value: { changed: true } }] });
    assert.equal(replay.status, 200);
    assert.equal(replay.body.success, false);
    assert.equal(replay.body.error, 'Invalid or expired lease');
    const sinkMsgs = await drain(b.url, sink);
    assert.deepEqual(sinkMsgs.map((m) => m.data), [{ count: 5 }, { count: 6 }], 'each sink message once');
    const after = await state(b.url, q, batch.partitionId);
    assert.deepEqual(after.body.rows.map((x: any) => x.value.acc), [undefined, 5], 'state unchanged by the replay');
    assert.ok(after.text.includes('"value":{}'), 'the other row is still the default {}');
  });

  test('gate cycle (release_lease:false, count 3 of 10): cursor +3, lease kept; after expiry the re-pop starts at the 4th message; a replay is refused', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const group = `streams.${name}`;
    assert.equal((await post(b.url, '/api/v1/configure', { queue: src, options: { leaseTime: 1 } })).status, 200);
    const q = (await register(b.url, name, src, '')).body.query_id;
    await pushN(b.url, src, 10);
    const batch = (await popBatch(b.url, src, group))!;
    assert.equal(batch.messages.length, 10);
    const body = {
      query_id: q, partition_id: batch.partitionId, consumer_group: group, state_ops: [], push_items: [],
      ack: { transactionId: batch.messages[2]!.transactionId, leaseId: batch.leaseId, status: 'completed', count: 3 }, release_lease: false,
    };
    const r = await post(b.url, '/streams/v1/cycle', body);
    assert.equal(r.body.success, true, r.text);
    assert.deepEqual(r.body.ack_result, { success: true, count: 3, lease_released: false, dlq: false });
    const replay = await post(b.url, '/streams/v1/cycle', body);
    assert.equal(replay.body.success, false, 'a replayed gate cycle does not advance again');
    const again = await waitFor(async () => popBatch(b.url, src, group), { timeoutMs: 10_000, what: 're-pop after lease expiry' });
    assert.deepEqual(again.messages.map((m) => m.data.n), [3, 4, 5, 6, 7, 8, 9]);
  });

  test('nack cycle: lease released, cursor unchanged, retry budget not charged', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const group = `streams.${name}`;
    assert.equal((await post(b.url, '/api/v1/configure', { queue: src, options: { retryLimit: 0, dlqAfterMaxRetries: true } })).status, 200);
    const q = (await register(b.url, name, src, '')).body.query_id;
    await pushN(b.url, src, 2);
    for (let i = 0; i < 3; i++) {
      const batch = (await popBatch(b.url, src, group))!;
      assert.deepEqual(batch.messages.map((m) => m.data.n), [0, 1], `delivery ${i + 1} starts at the same place`);
      const r = await post(b.url, '/streams/v1/cycle', {
        query_id: q, partition_id: batch.partitionId, consumer_group: group, state_ops: [{ type: 'upsert', key: 'k', value: i }], push_items: [],
        ack: { leaseId: batch.leaseId, status: 'failed', count: 2 }, release_lease: true,
      });
      assert.deepEqual(r.body.ack_result, { success: true, count: 0, lease_released: true, dlq: false });
    }
    const dlq = await call(b.url, 'GET', `/api/v1/dlq?queue=${src}`);
    assert.equal(dlq.body.total, 0, 'nothing dead-lettered: the retry budget was not charged');
  });

  test('an unknown state_op type rolls the whole cycle back: no state, no sink message, no ack', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, sink)).body.query_id;
    await pushN(b.url, src, 2);
    const batch = (await popBatch(b.url, src, group))!;
    const body = {
      query_id: q, partition_id: batch.partitionId, consumer_group: group,
      state_ops: [{ type: 'upsert', key: 'a', value: 1 }, { type: 'merge', key: 'b', value: 2 }],
      push_items: [{ queue: sink, payload: { x: 1 } }], ack: { leaseId: batch.leaseId, count: 2 }, release_lease: true,
    };
    const r = await post(b.url, '/streams/v1/cycle', body);
    assert.equal(r.status, 200);
    assert.deepEqual([r.body.success, r.body.error, r.body.state_ops_applied, r.body.push_results, r.body.ack_result], [false, 'Unknown state_op type: merge', 1, [], null]);
    assert.deepEqual((await state(b.url, q, batch.partitionId)).body.rows, []);
    assert.deepEqual(await drain(b.url, sink), []);
    const ok = await post(b.url, '/streams/v1/cycle', { ...body, state_ops: [{ type: 'upsert', key: 'a', value: 1 }] });
    assert.equal(ok.body.success, true, 'the lease is still held: the corrected cycle commits');
  });

  test('state/get: keys, a literal prefix and ripe_at_or_before (windowEnd a number at most the bound) are ANDed', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, '')).body.query_id;
    await pushN(b.url, src, 1);
    const batch = (await popBatch(b.url, src, group))!;
    const r = await post(b.url, '/streams/v1/cycle', {
      query_id: q, partition_id: batch.partitionId, consumer_group: group, push_items: [],
      state_ops: [
        { type: 'upsert', key: 'w\u001fa', value: { windowEnd: 100 } },
        { type: 'upsert', key: 'w\u001fb', value: { windowEnd: 200.5 } },
        { type: 'upsert', key: 'w\u001fc', value: { windowEnd: '100' } },
        { type: 'upsert', key: 'w\u001fd', value: { acc: 1 } },
        { type: 'upsert', key: 'w%x', value: { windowEnd: 1 } },
        { type: 'upsert', key: 'v\u001fa', value: { windowEnd: 1 } },
      ],
      ack: { leaseId: batch.leaseId, count: 1 },
    });
    assert.equal(r.body.success, true, r.text);
    const keys = async (extra: object) => (await state(b.url, q, batch.partitionId, extra)).body.rows.map((x: any) => x.key);
    assert.deepEqual(await keys({ ripe_at_or_before: 150 }), ['v\u001fa', 'w\u001fa', 'w%x'], 'by key, byte order');
    assert.deepEqual(await keys({ ripe_at_or_before: 300, key_prefix: 'w\u001f' }), ['w\u001fa', 'w\u001fb']);
    assert.deepEqual(await keys({ ripe_at_or_before: '300', key_prefix: 'w%' }), ['w%x'], 'a non-number bound is no filter; % is literal');
    assert.deepEqual(await keys({ key_prefix: 'w_' }), [], '_ is literal');
    assert.deepEqual(await keys({ keys: ['w\u001fd', 'nope', 'v\u001fa'] }), ['v\u001fa', 'w\u001fd'], 'by key; missing keys absent');
    assert.deepEqual(await keys({ keys: [] }), ['v\u001fa', 'w\u001fa', 'w\u001fb', 'w\u001fc', 'w\u001fd', 'w%x']);
    assert.deepEqual((await state(b.url, '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', batch.partitionId)).body, { success: true, rows: [] }, 'unknown query reads empty');
  });

  test('an idle-flush cycle emits a window once: a replay is refused, and a sink message of the same window is deduplicated', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, sink)).body.query_id;
    await pushN(b.url, src, 3);
    const batch = (await popBatch(b.url, src, group))!;
    const key = 'tumb:2\u001f2026-01-01T00:00:00.000Z\u001fk';
    const upsert = async (leaseId: string, partitionId: string) => post(b.url, '/streams/v1/cycle', {
      query_id: q, partition_id: partitionId, consumer_group: group, state_ops: [{ type: 'upsert', key, value: { acc: 3, windowEnd: 2 } }],
      push_items: [], ack: { leaseId, count: 3 }, release_lease: true,
    });
    assert.equal((await upsert(batch.leaseId, batch.partitionId)).body.success, true);
    const flush = {
      query_id: q, partition_id: batch.partitionId, consumer_group: group, state_ops: [{ type: 'delete', key }],
      push_items: [{ queue: sink, partition: 'p', payload: { count: 3 } }], ack: null, release_lease: true,
    };
    const f1 = await flushCycle(b.url, flush);
    assert.deepEqual([f1.body.success, f1.body.ack_result, f1.body.push_results[0].status], [true, null, 'queued'], f1.text);
    const f2 = await flushCycle(b.url, flush);
    assert.equal(f2.body.success, false, 'the replay finds the window already emitted');
    // the same window's row written again (a late cycle), then flushed again: the sink's dedup window drops it
    await pushN(b.url, src, 1);
    const b2 = (await popBatch(b.url, src, group))!;
    assert.equal((await upsert(b2.leaseId, b2.partitionId)).body.success, true);
    const f3 = await flushCycle(b.url, flush);
    assert.deepEqual([f3.body.success, f3.body.push_results[0].status], [true, 'duplicate']);
    assert.deepEqual((await drain(b.url, sink)).map((m) => m.data), [{ count: 3 }], 'the window was emitted once');
  });

  test('an idle flush is deferred while the main loop has messages in flight; the main loop closes the window with every message; a late flush emits nothing', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, sink)).body.query_id;
    await pushN(b.url, src, 1);
    const first = (await popBatch(b.url, src, group))!;
    const key = 'tumb:2\u001f2026-01-01T00:00:00.000Z\u001fk';
    const open = await post(b.url, '/streams/v1/cycle', {
      query_id: q, partition_id: first.partitionId, consumer_group: group, state_ops: [{ type: 'upsert', key, value: { acc: 1, windowStart: 0, windowEnd: 2 } }],
      push_items: [], ack: { leaseId: first.leaseId, count: 1 },
    });
    assert.equal(open.body.success, true);
    await pushN(b.url, src, 1);
    const flush = {
      query_id: q, partition_id: first.partitionId, consumer_group: group, state_ops: [{ type: 'delete', key }],
      push_items: [{ queue: sink, payload: { count: 1 } }], ack: null,
    };
    const pending = await flushCycle(b.url, flush);
    assert.deepEqual([pending.body.success, pending.body.deferred, pending.body.push_results], [true, `partition not idle: 1 message(s) not yet committed by ${group}`, []]);
    const second = (await popBatch(b.url, src, group))!;
    const leased = await flushCycle(b.url, flush);
    assert.equal(leased.body.deferred, `partition not idle: 1 message(s) not yet committed by ${group}`, 'deferred while the batch is leased');
    const close = await post(b.url, '/streams/v1/cycle', {
      query_id: q, partition_id: first.partitionId, consumer_group: group, state_ops: [{ type: 'delete', key }],
      push_items: [{ queue: sink, payload: { count: 2 } }], ack: { leaseId: second.leaseId, count: 1 },
    });
    assert.equal(close.body.success, true, close.text);
    const late = await flushCycle(b.url, flush);
    assert.deepEqual([late.body.success, late.body.error], [false, 'window already emitted: a state row this cycle deletes no longer exists']);
    assert.deepEqual((await drain(b.url, sink)).map((m) => m.data), [{ count: 2 }], 'the window was emitted once, with both messages');
  });

  test('an idle flush that read the state before a cycle changed a row it closes is deferred (it would emit a stale count)', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, sink)).body.query_id;
    const key = 'tumb:2\u001f2026-01-01T00:00:00.000Z\u001fk';
    const cycle = async (acc: number) => {
      await pushN(b.url, src, 1);
      const batch = (await popBatch(b.url, src, group))!;
      const r = await post(b.url, '/streams/v1/cycle', {
        query_id: q, partition_id: batch.partitionId, consumer_group: group, state_ops: [{ type: 'upsert', key, value: { acc, windowStart: 0, windowEnd: 2 } }],
        push_items: [], ack: { leaseId: batch.leaseId, count: 1 },
      });
      assert.equal(r.body.success, true);
      return batch.partitionId;
    };
    const partitionId = await cycle(1);
    const read = await waitFor(async () => {
      const r = await state(b.url, q, partitionId, { ripe_at_or_before: 2 }); // the flush reads acc 1 ...
      return r.body.rows[0]?.value.acc === 1 ? r : undefined;
    }, { timeoutMs: 5_000, what: 'the first state' });
    assert.equal(read.status, 200);
    await cycle(2); // ... the main loop adds a message of the same window ...
    const flush = { query_id: q, partition_id: partitionId, consumer_group: group, state_ops: [{ type: 'delete', key }], push_items: [{ queue: sink, payload: { count: 1 } }], ack: null };
    const stale = await post(b.url, '/streams/v1/cycle', flush); // ... and the flush commits what it read
    assert.deepEqual([stale.body.success, stale.body.deferred], [true, STALE]);
    assert.deepEqual(await drain(b.url, sink), [], 'the stale count was not emitted');
    const fresh = await flushCycle(b.url, { ...flush, push_items: [{ queue: sink, payload: { count: 2 } }] });
    assert.equal(fresh.body.deferred, undefined);
    assert.deepEqual((await drain(b.url, sink)).map((m) => m.data), [{ count: 2 }]);
  });

  test('a main-loop cycle closing a window another cycle already closed is refused whole (no second emission, no ack)', async () => {
    const name = uniqueName('q');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    const q = (await register(b.url, name, src, sink)).body.query_id;
    await pushN(b.url, src, 1);
    const first = (await popBatch(b.url, src, group))!;
    const close = { query_id: q, partition_id: first.partitionId, consumer_group: group, push_items: [{ queue: sink, payload: { count: 1 } }] };
    await post(b.url, '/streams/v1/cycle', { ...close, push_items: [], state_ops: [{ type: 'upsert', key: 'w', value: { acc: 1 } }], ack: { leaseId: first.leaseId, count: 1 } });
    assert.equal((await flushCycle(b.url, { ...close, state_ops: [{ type: 'delete', key: 'w' }], ack: null })).body.success, true, 'the idle flush closes w');
    await pushN(b.url, src, 2);
    const other = (await popBatch(b.url, src, group))!; // a main loop that read w before the flush committed
    const late = await post(b.url, '/streams/v1/cycle', { ...close, partition_id: first.partitionId, state_ops: [{ type: 'delete', key: 'w' }, { type: 'upsert', key: 'x', value: 1 }], ack: { leaseId: other.leaseId, count: 2 } });
    assert.deepEqual([late.body.success, late.body.error], [false, 'window already emitted: a state row this cycle deletes no longer exists']);
    assert.deepEqual((await drain(b.url, sink)).map((m) => m.data), [{ count: 1 }], 'the window was emitted once');
    assert.deepEqual((await state(b.url, q, first.partitionId)).body.rows, [], 'nothing of the refused cycle was written');
  });

  test('bad input answers 400 streams_bad_request (limits included) and never runs a cycle', async () => {
    const cases: [string, unknown, string][] = [
      ['/streams/v1/queries', { source_queue: 's', config_hash: 'h' }, 'name is required'],
      ['/streams/v1/queries', { name: 'n', config_hash: 'h' }, 'source_queue is required'],
      ['/streams/v1/queries', { name: 'n', source_queue: 's', config_hash: '' }, 'config_hash is required'],
      ['/streams/v1/queries', [1], 'request body must be a JSON object'],
      ['/streams/v1/cycle', { partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9' }, 'query_id is required'],
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '' }, 'partition_id is required'],
      ['/streams/v1/cycle', { query_id: 'x', partition_id: 'y' }, 'query_id must be a UUID'],
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', state_ops: Array.from({ length: 10_001 }, () => ({ type: 'delete', key: 'k' })) }, 'state_ops has 10001 entries; at most 10000 per request'],
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', state_ops: [{ type: 'delete', key: 'k'.repeat(1025) }] }, 'state_ops[0].key is longer than 1024 bytes'],
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', ack: { count: -1 } }, 'ack.count must be a non-negative integer'],
      ['/streams/v1/state/get', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9' }, 'query_id and partition_id are required'],
      ['/streams/v1/state/get', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: 'nope' }, 'partition_id must be a UUID'],
      // A bad element names itself, not the whole body (docs/streams.md#limits).
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', state_ops: [null] }, 'state_ops[0] must be a JSON object'],
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', push_items: [5] }, 'push_items[0] must be a JSON object'],
      ['/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', ack: 5 }, 'ack must be a JSON object'],
      ['/streams/v1/state/get', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', keys: ['k', 1] }, 'keys[1] must be a string'],
      ['/streams/v1/queries', { name: '名前-ü-🎉', source_queue: 's', config_hash: 'h', sink_queue: 5 }, 'sink_queue must be a string'],
    ];
    for (const [p, body, error] of cases) {
      const r = await post(b.url, p, body);
      assert.equal(r.status, 400, `${p} ${r.text}`);
      assert.deepEqual([r.body.code, r.body.error], ['streams_bad_request', error]);
      if (p === '/streams/v1/state/get') assert.deepEqual(r.body.rows, [], `${error}: rows [] as on every state/get refusal`);
    }
    const malformed = await call(b.url, 'POST', '/streams/v1/cycle', '{"query_id":');
    assert.equal(malformed.status, 400);
    const unknownPartition = await post(b.url, '/streams/v1/cycle', { query_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9', partition_id: '01a22f2a-4a9c-73d8-aa83-9e2ba053bca9' });
    assert.deepEqual([unknownPartition.status, unknownPartition.body.success, unknownPartition.body.error], [200, false, 'partition not found']);
  });
});

function foundInFiles(dir: string, needle: string): string | undefined {
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) {
      const hit = foundInFiles(p, needle);
      if (hit) return hit;
    } else if (ent.isFile() && fs.readFileSync(p).includes(needle)) {
      return p;
    }
  }
  return undefined;
}

test('an encrypted sink queue stores cycle pushes encrypted and delivers them in clear', async () => {
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
  const marker = `secret-${randomBytes(8).toString('hex')}`;
  try {
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    assert.equal((await post(b.url, '/api/v1/configure', { queue: sink, options: { encryptionEnabled: true } })).status, 200);
    const q = (await register(b.url, 'enc', src, sink)).body.query_id;
    await pushN(b.url, src, 1);
    const batch = (await popBatch(b.url, src, 'streams.enc'))!;
    const r = await post(b.url, '/streams/v1/cycle', {
      query_id: q, partition_id: batch.partitionId, consumer_group: 'streams.enc', state_ops: [],
      push_items: [{ queue: sink, payload: { marker } }], ack: { leaseId: batch.leaseId, count: 1 }, release_lease: true,
    });
    assert.equal(r.body.success, true, r.text);
    assert.deepEqual((await drain(b.url, sink)).map((m) => m.data), [{ marker }]);
  } finally {
    await b.stop();
  }
  assert.equal(foundInFiles(b.dataDir, marker), undefined, 'sink payload stored in clear');
});

test('SIGKILL after a committed cycle: the query, its state, the sink messages and the cursor survive; message ids never repeat', async () => {
  const b = await startBroker();
  let b2: BrokerHandle | undefined;
  try {
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const reg = await register(b.url, 'k', src, sink);
    await pushN(b.url, src, 4);
    const batch = (await popBatch(b.url, src, 'streams.k', 2))!;
    const r = await post(b.url, '/streams/v1/cycle', {
      query_id: reg.body.query_id, partition_id: batch.partitionId, consumer_group: 'streams.k', state_ops: [{ type: 'upsert', key: 'w', value: { acc: 2 } }],
      push_items: [{ queue: sink, payload: { count: 2 } }], ack: { leaseId: batch.leaseId, count: 2 }, release_lease: true,
    });
    assert.equal(r.body.success, true, r.text);
    await b.kill();
    b2 = await startBroker({ dataDir: b.dataDir });
    const again = await register(b2.url, 'k', src, sink);
    assert.deepEqual([again.body.query_id, again.body.fresh], [reg.body.query_id, false]);
    assert.deepEqual((await state(b2.url, reg.body.query_id, batch.partitionId)).body.rows.map((x: any) => x.value), [{ acc: 2 }]);
    const next = (await popBatch(b2.url, src, 'streams.k'))!;
    assert.deepEqual(next.messages.map((m) => m.data.n), [2, 3], 'the cursor kept the committed batch');
    const r2 = await post(b2.url, '/streams/v1/cycle', {
      query_id: reg.body.query_id, partition_id: batch.partitionId, consumer_group: 'streams.k', state_ops: [{ type: 'upsert', key: 'w', value: { acc: 4 } }],
      push_items: [{ queue: sink, payload: { count: 2 } }], ack: { leaseId: next.leaseId, count: 2 }, release_lease: true,
    });
    assert.equal(r2.body.success, true);
    const sinkMsgs = await drain(b2.url, sink);
    assert.equal(sinkMsgs.length, 2);
    assert.equal(new Set(sinkMsgs.map((m) => m.id)).size, 2, 'message ids never repeat across the restart');
  } finally {
    if (b2) await b2.stop();
    else await b.kill().catch(() => undefined);
  }
});
