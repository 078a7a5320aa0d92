/**
 * The idle WAL checkpoint (docs/storage.md#durability) is one entry in the due-time scheduler the
 * store is given, so a test clock drives it: nothing is checkpointed while commits keep coming
 * within `walIdleMs`, the WAL is truncated to 0 bytes once that much commit-free time has passed,
 * and a closed store leaves nothing scheduled.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { TestClock } from '../../src/util/clock.js';
import { Scheduler } from '../../src/util/scheduler.js';
import { tempDir } from '../helpers/broker.js';

function walBytes(dataDir: string): number {
  try {
    return fs.statSync(path.join(dataDir, 'queen.db-wal')).size;
  } catch {
    return 0;
  }
}

test('the idle WAL checkpoint runs on the scheduler\'s clock: after walIdleMs without a commit, not before', async () => {
  const dataDir = path.join(tempDir(), 'data');
  const clock = new TestClock(1_700_000_000_000);
  const scheduler = new Scheduler(clock);
  const store = SqliteStore.open({ dataDir, sync: 'normal', walIdleMs: 1_000 });
  store.useScheduler(scheduler);
  try {
    const put = (k: string) => store.run((tx) => tx.setSetting(k, 'x'.repeat(10_000)));
    await put('a');
    assert.ok(walBytes(dataDir) > 0, 'the commit went through the WAL');
    assert.equal(scheduler.lane('wal-checkpoint').size, 1, 'one entry, no timer of its own');
    clock.advance(600);
    await put('b'); // a commit inside the idle window moves the checkpoint on
    clock.advance(600);
    assert.ok(walBytes(dataDir) > 0, 'not idle long enough since the last commit');
    clock.advance(400);
    assert.equal(walBytes(dataDir), 0, 'truncated once idle for walIdleMs');
    assert.equal(scheduler.size, 0, 'nothing left to do');
  } finally {
    await store.close();
  }
  assert.equal(scheduler.size, 0);
});
