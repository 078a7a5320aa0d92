/**
 * The store's hot queries must be index seeks, not walks over a partition: a regression here
 * turns push into O(partition size) (found by the JS client's load tests).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/storage/sqlite/store.js';
import { tempDir } from '../helpers/broker.js';

test('the transactionId lookup (push dedup, ack resolution) seeks messages_by_txn', async () => {
  const dir = path.join(tempDir(), 'data');
  const store = SqliteStore.open({ dataDir: dir, sync: 'normal' });
  await store.close();
  const db = new Database(path.join(dir, 'queen.db'), { readonly: true });
  try {
    const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT * FROM messages WHERE partition_pk = ? AND transaction_id = ? AND created_at >= ?
                             ORDER BY offset DESC LIMIT 1`).all(1, 'x', 0) as { detail: string }[];
    const detail = plan.map((r) => r.detail).join(' | ');
    assert.match(detail, /USING INDEX messages_by_txn \(partition_pk=\? AND transaction_id=\?\)/, detail);
    assert.doesNotMatch(detail, /TEMP B-TREE/, detail);
  } finally {
    db.close();
  }
});

test('dedup stays correct: the newest message with a transactionId inside the window is found', async () => {
  const store = SqliteStore.open({ dataDir: path.join(tempDir(), 'data'), sync: 'normal' });
  try {
    await store.run((tx) => {
      for (let o = 0; o < 5; o++) {
        tx.insertMessage(1, { partitionPk: 7, offset: o, id: `m${o}`, transactionId: o % 2 === 0 ? 'even' : 'odd', payload: '1', encrypted: false, traceId: null, producerSub: null, createdAt: 1000 + o });
      }
    });
    assert.equal(store.findByTransactionId(7, 'even', 0)?.offset, 4);
    assert.equal(store.findByTransactionId(7, 'odd', 1004), undefined, 'outside the window');
    assert.equal(store.findByTransactionId(8, 'even', 0), undefined, 'another partition');
  } finally {
    await store.close();
  }
});
