/**
 * With `QUEEN_SYNC=full` the store fsyncs the WAL on the thread pool after each group commit
 * (docs/storage.md#durability): SQLite itself runs `synchronous=NORMAL`, and a unit's promise
 * resolves (its after-commit hooks run) only after an fsync of the WAL that started once the unit
 * was committed. `close()` answers the units still waiting for that fsync, and their rows are there
 * when the store is opened again.
 *
 * The real `fs.fdatasync` runs; the test only records when each call starts and ends.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { DEFAULT_TENANT } from '../../src/storage/contract.js';
import { QUEUE_DEFAULTS } from '../../src/model/options.js';
import { loadConfig } from '../../src/config/index.js';
import { tempDir } from '../helpers/broker.js';

type Event = { kind: 'work' | 'resolved' | 'hook'; unit: number } | { kind: 'fsync-start' | 'fsync-end'; fd: number };

/** Records fs.fdatasync calls (the store's WAL sync) into `events` while `fn` runs (the real call still does the work). */
async function recordingFsync<T>(events: Event[], fn: () => Promise<T>): Promise<T> {
  const real = fs.fdatasync;
  (fs as { fdatasync: unknown }).fdatasync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
    events.push({ kind: 'fsync-start', fd });
    real(fd, (e) => {
      events.push({ kind: 'fsync-end', fd });
      cb(e);
    });
  };
  try {
    return await fn();
  } finally {
    (fs as { fdatasync: unknown }).fdatasync = real;
  }
}

const queueRow = (i: number) => ({ id: `q-${i}`, tenant: DEFAULT_TENANT, name: `q${i}`, namespace: '', task: '', options: { ...QUEUE_DEFAULTS }, createdAt: i });

test('QUEEN_SYNC=full: every unit resolves after a WAL fsync that started once it was committed, hooks after it', async () => {
  const dataDir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir, sync: 'full' });
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
  assert.equal(loadConfig({ QUEEN_DATA_DIR: tempDir() }).syncThread, true);
  assert.equal(loadConfig({ QUEEN_DATA_DIR: tempDir(), QUEEN_SYNC_THREAD: 'false' }).syncThread, false);
  assert.throws(() => loadConfig({ QUEEN_DATA_DIR: tempDir(), QUEEN_SYNC_THREAD: 'sometimes' }), /QUEEN_SYNC_THREAD/);
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
