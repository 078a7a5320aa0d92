/**
 * Failure containment (docs/storage.md#in-memory-indexes): a unit of work rolled back after it
 * wrote restores only the in-memory index entries it touched (head offsets, cursors, leases, ready
 * sets, new queues and groups), the other units of its group commit stand, and nothing is
 * reloaded from the store.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { Broker, QUEUE_MODE } from '../../../src/broker/broker.js';
import type { PopRequest } from '../../../src/broker/messaging/pop.js';
import { planPush, pushAppends } from '../../../src/broker/messaging/push.js';
import { DEFAULT_TENANT, type ClaimRequest } from '../../../src/storage/contract.js';
import type { Engine } from '../../../src/storage/sqlite/engine.js';
import { appendOn, claimOn } from '../../../src/storage/sqlite/engine-backend.js';
import { loadConfig } from '../../../src/config/index.js';
import { QueenError } from '../../../src/errors.js';
import { plainCodec } from '../../../src/model/codec.js';
import { SqliteStore } from '../../../src/storage/sqlite/store.js';
import { SqliteRuntime } from '../../../src/storage/sqlite/runtime.js';
import { TestClock } from '../../../src/util/clock.js';
import { tempDir } from '../../helpers/broker.js';

let broker: Broker;
let rt: SqliteRuntime;
let store: SqliteStore;
let loads = 0;
const clock = new TestClock(1_700_000_000_000);

before(() => {
  const dataDir = path.join(tempDir(), 'data');
  store = SqliteStore.open({ dataDir, sync: 'off' });
  const load = store.loadSnapshot.bind(store);
  store.loadSnapshot = () => { loads++; return load(); };
  const cfg = loadConfig({ QUEEN_DATA_DIR: dataDir });
  const log = pino({ level: 'silent' });
  rt = new SqliteRuntime(store, cfg, plainCodec, log, clock);
  broker = new Broker(rt, cfg, plainCodec, log, clock);
  broker.start();
});
after(async () => { await broker.shutdown(1000); });

function pop(queue: string, over: Partial<PopRequest> = {}): PopRequest {
  return { queue, partition: undefined, namespace: undefined, task: undefined, group: QUEUE_MODE, batch: 10, partitions: 1, wait: false, timeoutMs: 0, autoAck: false, leaseSeconds: undefined, subscription: {}, ...over };
}

/** A leasing claim of one partition of `queue` for `group` through the contract's in-unit claim. */
function claimReq(queue: string, group: string, now: number): ClaimRequest {
  return {
    queue: { tenant: DEFAULT_TENANT, queue }, group, partition: undefined, maxPartitions: 1, batch: 10, leaseId: `lease-${group}`,
    leaseMs: 120_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now,
  };
}

/** Every in-memory index entry, as plain data. */
function dump(engine: Engine): unknown {
  const queues = [...engine.queues.values()].map((q) => ({
    name: q.name, pk: q.pk, options: q.options, namespace: q.namespace, task: q.task,
    partitions: [...q.partitions.values()].map((p) => ({ name: p.name, head: p.headOffset, first: p.firstOffset, last: p.lastMessageAt })),
    groups: [...q.groups.values()].map((g) => ({
      name: g.name, subscription: g.subscription,
      cursors: [...g.cursors.entries()].map(([pk, c]) => ({ pk, ...c })).sort((a, b) => a.pk - b.pk),
      ready: [...g.ready].map((p) => p.name).sort(),
    })),
  }));
  const leases = [...engine.leases.entries()].map(([id, set]) => [id, [...set].map((e) => `${e.group.queue.name}/${e.group.name}/${e.partition.name}`).sort()]);
  return {
    queues, leases, expiries: engine.leaseExpiry.size,
    byPk: [...engine.queuesByPk.keys()].sort(), partitionsById: engine.partitionsById.size, partitionsByPk: engine.partitionsByPk.size,
  };
}

test('a unit that throws after writing leaves memory exactly as before; the rest of its group commit stands; no reload', async () => {
  const engine = rt.engine;
  await broker.push([{ queue: 'u', partition: 'a', payload: 1 }, { queue: 'u', partition: 'b', payload: 2 }], null);
  const leased = await broker.pop(pop('u', { group: 'g' }));
  assert.ok(leased && 'messages' in leased && leased.messages.length === 1, 'group g holds a lease on one partition');
  await broker.configure({ queue: 'u', options: { leaseTime: 120 }, mode: 'merge' });
  const before = dump(engine);
  const readyBefore = [...engine.queues.get('u')!.groups.get('g')!.ready].map((p) => p.name);
  assert.equal(readyBefore.length, 1, 'the other partition is ready for g');
  loads = 0;

  // Queued in the same turn: one group commit holding both units.
  const bad = rt.units.run((tx) => {
    const now = clock.now();
    const items = [{ queue: 'u', partition: 'a', payload: 3 }, { queue: 'u', partition: 'b', payload: 4 }, { queue: 'new-q', payload: 5 }];
    for (const o of pushAppends(planPush(broker, new Map(), items, null), now).ops) appendOn(engine, tx, o.request);
    const got = claimOn(engine, tx, claimReq('u', 'g', now));
    assert.equal(got.length, 1, 'the failing unit did claim (so it changed a cursor, a lease and the ready set)');
    assert.equal(claimOn(engine, tx, claimReq('u', 'fresh', now)).length, 1, 'and registered a new group that claimed');
    engine.noteQueue(engine.queues.get('u')!);
    engine.queues.get('u')!.options = { ...engine.queues.get('u')!.options, leaseTime: 5 };
    throw new QueenError('invalid_request', 'refused after writing');
  });
  const good = broker.push([{ queue: 'other', payload: 6 }], null);
  await assert.rejects(bad, (e: unknown) => e instanceof QueenError && e.code === 'invalid_request');
  const [pushed] = await good;
  assert.equal(pushed?.status, 'queued');

  const other = engine.queues.get('other');
  assert.equal(other?.partitions.get('Default')?.headOffset, 1, 'the other unit of the batch committed');
  engine.queues.delete('other');
  engine.queuesByPk.delete(other.pk);
  for (const p of other.partitions.values()) { engine.partitionsById.delete(p.id); engine.partitionsByPk.delete(p.pk); }
  assert.deepEqual(dump(engine), before, 'memory is exactly as before the failed unit');
  engine.queues.set('other', other);
  engine.queuesByPk.set(other.pk, other);
  for (const p of other.partitions.values()) { engine.partitionsById.set(p.id, p); engine.partitionsByPk.set(p.pk, p); }
  assert.equal(loads, 0, 'no snapshot was loaded: nothing was rebuilt from the store');

  // Memory agrees with the store: the restored ready partition is claimable, the pushes never happened.
  const next = await broker.pop(pop('u', { group: 'g' }));
  assert.ok(next && 'messages' in next);
  assert.equal(next.messages.length, 1);
  assert.equal(next.messages[0]!.partition, readyBefore[0]);
  assert.equal(await broker.pop(pop('new-q')), null, 'the failed unit created no queue');
});

test('a failed group commit undoes every unit of the batch, newest first, without a reload', async () => {
  const engine = rt.engine;
  await broker.push([{ queue: 'c', partition: 'x', payload: 1 }], null);
  const before = dump(engine);
  loads = 0;
  const commit = (store as unknown as { s: Record<string, { run: () => unknown }> }).s;
  const real = commit.commit!;
  commit.commit = { run: () => { throw new Error('disk full'); } };
  try {
    const first = broker.push([{ queue: 'c', partition: 'x', payload: 2 }], null);
    const second = broker.pop(pop('c', { group: 'g2' }));
    await assert.rejects(first, (e: unknown) => e instanceof QueenError && e.code === 'storage_error');
    await assert.rejects(second, (e: unknown) => e instanceof QueenError && e.code === 'storage_error');
  } finally {
    commit.commit = real;
  }
  assert.deepEqual(dump(engine), before);
  assert.equal(loads, 0);
  const got = await broker.pop(pop('c', { group: 'g2' }));
  assert.ok(got && 'messages' in got);
  assert.deepEqual(got.messages.map((m) => String((m.data as { text: string }).text)), ['1'], 'only the committed push is there');
});
