/**
 * With `QUEEN_SYNC=full` the store fsyncs the WAL itself after each group commit
 * (docs/storage.md#durability), inline on the event loop or on the thread pool as its sync-cost
 * estimate decides: SQLite itself runs `synchronous=NORMAL`, and a unit's promise resolves (its
 * after-commit hooks run) only after an fsync of the WAL that started once the unit was committed,
 * whichever way the sync was made. `close()` answers the units still waiting for that fsync, and
 * their rows are there when the store is opened again.
 *
 * The real `fs.fdatasync` / `fs.fdatasyncSync` run; the test only records when each call starts and ends.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { INLINE_SYNC_MAX_MS, SyncCost } from '../../src/storage/sqlite/wal-sync.js';
import { DEFAULT_TENANT } from '../../src/storage/contract.js';
import { QUEUE_DEFAULTS } from '../../src/model/options.js';
import { loadConfig } from '../../src/config/index.js';
import { tempDir } from '../helpers/broker.js';

type Event = { kind: 'work' | 'resolved' | 'hook'; unit: number } | { kind: 'fsync-start' | 'fsync-end'; fd: number; inline: boolean };

/**
 * Records fs.fdatasync (thread pool) and fs.fdatasyncSync (inline) calls, the store's WAL syncs,
 * into `events` while `fn` runs (the real call still does the work).
 */
async function recordingFsync<T>(events: Event[], fn: () => Promise<T>): Promise<T> {
  const real = fs.fdatasync;
  const realSync = fs.fdatasyncSync;
  (fs as { fdatasync: unknown }).fdatasync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
    events.push({ kind: 'fsync-start', fd, inline: false });
    real(fd, (e) => {
      events.push({ kind: 'fsync-end', fd, inline: false });
      cb(e);
    });
  };
  (fs as { fdatasyncSync: unknown }).fdatasyncSync = (fd: number) => {
    events.push({ kind: 'fsync-start', fd, inline: true });
    realSync(fd);
    events.push({ kind: 'fsync-end', fd, inline: true });
  };
  try {
    return await fn();
  } finally {
    (fs as { fdatasync: unknown }).fdatasync = real;
    (fs as { fdatasyncSync: unknown }).fdatasyncSync = realSync;
  }
}

/** A sync-cost estimate pinned to one answer, so a test runs one path whatever the disk's speed. */
class PinnedCost extends SyncCost {
  constructor(private readonly pinned: boolean) {
    super();
  }
  override inline(): boolean {
    return this.pinned;
  }
}

const queueRow = (i: number) => ({ id: `q-${i}`, tenant: DEFAULT_TENANT, name: `q${i}`, namespace: '', task: '', options: { ...QUEUE_DEFAULTS }, createdAt: i });

for (const inline of [false, true]) {
test(`QUEEN_SYNC=full, ${inline ? 'inline' : 'thread-pool'} sync: every unit resolves after a WAL fsync that started once it was committed, hooks after it`, async () => {
  const dataDir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir, sync: 'full', syncCost: new PinnedCost(inline) });
  const events: Event[] = [];
  try {
    assert.equal(await store.runOnDb((db) => db.pragma('synchronous', { simple: true })), 1, 'SQLite runs NORMAL; the store syncs the WAL itself');
    await recordingFsync(events, async () => {
      // Three waves of 20 units: each wave is one group commit, the later ones made while an fsync runs.
      const all: Promise<void>[] = [];
      for (let wave = 0; wave < 3; wave++) {
        for (let k = 0; k < 20; k++) {
          const unit = wave * 20 + k;
          all.push(store.run((tx) => {
            events.push({ kind: 'work', unit });
            tx.insertQueue(queueRow(unit));
            tx.afterCommit(() => events.push({ kind: 'hook', unit }));
          }).then(() => void events.push({ kind: 'resolved', unit })));
        }
        await new Promise((r) => setImmediate(r));
      }
      await Promise.all(all);
    });
    const starts = events.flatMap((e, i) => (e.kind === 'fsync-start' ? [i] : []));
    assert.ok(starts.length >= 1, 'no WAL fsync was made');
    assert.deepEqual(new Set(events.flatMap((e) => (e.kind === 'fsync-start' ? [e.inline] : []))), new Set([inline]), 'the sync ran where the estimate said');
    for (let unit = 0; unit < 60; unit++) {
      const worked = events.findIndex((e) => e.kind === 'work' && e.unit === unit);
      const resolved = events.findIndex((e) => e.kind === 'resolved' && e.unit === unit);
      const hook = events.findIndex((e) => e.kind === 'hook' && e.unit === unit);
      const start = starts.find((i) => i > worked);
      assert.ok(start !== undefined, `unit ${unit}: no fsync started after it was committed`);
      const end = events.findIndex((e, i) => i > start && e.kind === 'fsync-end');
      assert.ok(end > start && end < resolved, `unit ${unit} resolved at event ${resolved} before its fsync ended (${end})`);
      assert.ok(end < hook, `unit ${unit}'s after-commit hook ran at event ${hook} before its fsync ended (${end})`);
    }
  } finally {
    await store.close();
  }
});
}

test('QUEEN_SYNC_THREAD=true: the store syncs on the thread pool only, never inline', async () => {
  const dataDir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir, sync: 'full', syncThread: true, syncCost: new PinnedCost(true) });
  const events: Event[] = [];
  try {
    await recordingFsync(events, () => Promise.all(Array.from({ length: 5 }, (_, i) => store.run((tx) => tx.insertQueue(queueRow(i))))));
    const kinds = events.flatMap((e) => (e.kind === 'fsync-start' ? [e.inline] : []));
    assert.ok(kinds.length >= 1, 'no WAL fsync was made');
    assert.ok(kinds.every((k) => k === false), `an inline sync was made: ${JSON.stringify(kinds)}`);
  } finally {
    await store.close();
  }
});

test('sync-cost estimate: the thread pool first, inline once syncs prove cheap, off the event loop at once after a slow one', () => {
  const cost = new SyncCost();
  assert.equal(cost.inline(), false, 'before any sample the disk is unknown: thread pool');
  let n = 0;
  while (!cost.inline()) {
    cost.note(0.3);
    assert.ok(++n < 20, 'never inline after 20 fast syncs');
  }
  assert.ok(n >= 2, `inline after only ${n} sample(s)`);
  cost.note(50);
  assert.equal(cost.inline(), false, 'one 50 ms sync must move the next off the event loop');
  assert.equal(cost.ms, 50);
  n = 0;
  while (!cost.inline()) {
    cost.note(0.3);
    assert.ok(++n < 40, 'never back to inline');
  }
  assert.ok(n > 5, `back inline after only ${n} fast sync(s) following a 50 ms one`);
  cost.note(INLINE_SYNC_MAX_MS * 1.5);
  assert.equal(cost.inline(), false, 'a sync over the bound moves the next one off the event loop');
});

test('QUEEN_SYNC=full: close() answers the units still waiting for their WAL fsync, and their rows survive a reopen', async () => {
  const dataDir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir, sync: 'full' });
  const waiting = Array.from({ length: 10 }, (_, i) => store.run((tx) => tx.insertQueue(queueRow(i))));
  await store.close(); // before the turn of the event loop that would commit them
  const pks = await Promise.all(waiting);
  assert.equal(new Set(pks).size, 10);
  const again = SqliteStore.open({ dataDir, sync: 'full' });
  try {
    assert.deepEqual(again.loadSnapshot().queues.map((q) => q.name), Array.from({ length: 10 }, (_, i) => `q${i}`));
  } finally {
    await again.close();
  }
});

test('QUEEN_SYNC=normal: no WAL fsync of the store\'s own', async () => {
  const dataDir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir, sync: 'normal' });
  const events: Event[] = [];
  try {
    await recordingFsync(events, () => Promise.all(Array.from({ length: 5 }, (_, i) => store.run((tx) => tx.insertQueue(queueRow(i))))));
    assert.deepEqual(events, []);
  } finally {
    await store.close();
  }
});

test('QUEEN_SYNC_THREAD=false: SQLite fsyncs inside COMMIT (FULL) and the store makes no fsync of its own', async () => {
  assert.equal(loadConfig({ QUEEN_DATA_DIR: tempDir() }).syncThread, 'auto');
  assert.equal(loadConfig({ QUEEN_DATA_DIR: tempDir(), QUEEN_SYNC_THREAD: 'AUTO' }).syncThread, 'auto');
  assert.equal(loadConfig({ QUEEN_DATA_DIR: tempDir(), QUEEN_SYNC_THREAD: 'true' }).syncThread, true);
  assert.equal(loadConfig({ QUEEN_DATA_DIR: tempDir(), QUEEN_SYNC_THREAD: 'false' }).syncThread, false);
  assert.throws(() => loadConfig({ QUEEN_DATA_DIR: tempDir(), QUEEN_SYNC_THREAD: 'sometimes' }), /QUEEN_SYNC_THREAD="sometimes" is not a boolean \(expected true\/false, 1\/0, yes\/no, on\/off\), nor auto/);
  const dataDir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir, sync: 'full', syncThread: false });
  const events: Event[] = [];
  try {
    assert.equal(await store.runOnDb((db) => db.pragma('synchronous', { simple: true })), 2, 'SQLite runs FULL');
    await recordingFsync(events, () => Promise.all(Array.from({ length: 5 }, (_, i) => store.run((tx) => tx.insertQueue(queueRow(i))))));
    assert.deepEqual(events, []);
  } finally {
    await store.close();
  }
});
