/**
 * The timer store: the firing loop's reads are due-index ranges (never a scan of the pending
 * timers), and the rows round-trip.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import type { TimerRow } from '../../src/storage/timers.js';
import { tempDir } from '../helpers/broker.js';

function row(timerKey: string, deliverAt: number, queue = 'q'): TimerRow {
  return {
    queue, timerKey, partition: 'Default', deliverAt, txn: `t-${timerKey}`, messageId: `m-${timerKey}`, payload: '{"a":1}',
    encrypted: false, producerSub: null, attempts: 0, lastError: null, createdAt: 1, updatedAt: 1,
  };
}

test('due timers and the next due time come from the timers_by_due index', async () => {
  const dir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir: dir, sync: 'normal' });
  await store.close();
  const db = new Database(path.join(dir, 'queen.db'), { readonly: true });
  try {
    for (const sql of [
      'SELECT queue, timer_key FROM timers INDEXED BY timers_by_due WHERE deliver_at <= ? ORDER BY deliver_at LIMIT ?',
      'SELECT deliver_at FROM timers INDEXED BY timers_by_due ORDER BY deliver_at LIMIT 1',
    ]) {
      const args = sql.includes('<=') ? [5, 10] : [];
      const detail = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join(' | ');
      assert.match(detail, /USING (COVERING )?INDEX timers_by_due/, detail);
      assert.doesNotMatch(detail, /TEMP B-TREE/, detail);
    }
    const list = (db.prepare('EXPLAIN QUERY PLAN SELECT * FROM timers WHERE queue = ? AND timer_key > ? ORDER BY timer_key LIMIT ?')
      .all('q', 'a', 10) as { detail: string }[]).map((r) => r.detail).join(' | ');
    assert.match(list, /USING PRIMARY KEY \(queue=\? AND timer_key>\?\)/, list);
  } finally {
    db.close();
  }
});

test('timer rows: put, replace, due order, next due, failure bookkeeping, delete', async () => {
  const store = SqliteStore.open({ dataDir: path.join(tempDir(), 'data'), sync: 'normal' });
  try {
    const t = store.timers;
    assert.equal(t.nextDueAt(), undefined);
    await store.run(() => {
      t.putTimer(row('c', 300));
      t.putTimer(row('a', 100));
      t.putTimer(row('b', 200, 'other'));
    });
    assert.equal(t.nextDueAt(), 100);
    assert.deepEqual(t.dueTimers(250, 10), [{ queue: 'q', timerKey: 'a' }, { queue: 'other', timerKey: 'b' }]);
    assert.deepEqual(t.dueTimers(1000, 1), [{ queue: 'q', timerKey: 'a' }]);
    await store.run(() => t.putTimer({ ...row('a', 500), txn: 'replaced' }));
    assert.equal(t.getTimer('q', 'a')?.txn, 'replaced');
    assert.equal(t.nextDueAt(), 200);
    await store.run(() => t.timerFailed('q', 'c', 'boom', 900, 50));
    assert.deepEqual([t.getTimer('q', 'c')?.attempts, t.getTimer('q', 'c')?.lastError, t.getTimer('q', 'c')?.deliverAt], [1, 'boom', 900]);
    assert.deepEqual(t.listTimers('q', undefined, 10).map((r) => r.timerKey), ['a', 'c']);
    assert.deepEqual(t.listTimers('q', 'a', 10).map((r) => r.timerKey), ['c']);
    assert.equal(await store.run(() => t.deleteTimer('q', 'a')), true);
    assert.equal(await store.run(() => t.deleteTimer('q', 'a')), false);
    assert.equal(t.getTimer('q', 'a'), undefined);
  } finally {
    await store.close();
  }
});
