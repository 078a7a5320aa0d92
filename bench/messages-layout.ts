/**
 * `node dist/bench/messages-layout.js`: SQLite's cost per message row for the messages table as it
 * is (a rowid table, its `(partition_pk, offset)` primary key a separate index) against the same
 * table `WITHOUT ROWID` (clustered on the key: one B-tree fewer per insert, a range read without a
 * second lookup per row), and the rowid table filled by one multi-row `INSERT` of 100 rows per push
 * instead of 100 runs of one prepared statement. Each variant is the real schema (src/storage/sqlite/schema.ts `migrate`),
 * the second rebuilt as a migration would; same pragmas as the store (WAL, `synchronous=NORMAL`,
 * 64 MiB cache). Insert: transactions of 100 rows over 16 partitions, server-made UUIDv7 ids, a
 * 184-byte payload, as a push of 100. Read: 100 rows of one partition from an offset (the pop read).
 * Variants alternate for `LAYOUT_ROUNDS` rounds (default 3) of `LAYOUT_TX` transactions (default 1,000).
 * Prints µs per row (wall time, one thread, no fsync).
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { migrate } from '../src/storage/sqlite/schema.js';
import { MESSAGE_COLUMNS } from '../src/storage/sqlite/rows.js';

const ROUNDS = Number(process.env.LAYOUT_ROUNDS ?? 3);
const TX = Number(process.env.LAYOUT_TX ?? 1000);
const PARTITIONS = 16;
const PAYLOAD = Buffer.from(JSON.stringify({ orderId: 12345, customer: 'c-0042', amount: 99.95, items: ['a', 'b', 'c'], note: 'x'.repeat(120) }));

/** The rebuild a `WITHOUT ROWID` migration would run (the columns and indexes of schema version 12). */
const WITHOUT_ROWID = `
  CREATE TABLE messages_new (
    partition_pk INTEGER NOT NULL, offset INTEGER NOT NULL, queue_pk INTEGER NOT NULL, id TEXT NOT NULL,
    transaction_id TEXT NOT NULL, payload BLOB, encrypted INTEGER NOT NULL DEFAULT 0, trace_id TEXT,
    producer_sub TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (partition_pk, offset)
  ) WITHOUT ROWID;
  DROP TABLE messages;
  ALTER TABLE messages_new RENAME TO messages;
  CREATE INDEX messages_by_txn ON messages (transaction_id, partition_pk, offset);
  CREATE INDEX messages_by_queue_time ON messages (queue_pk, created_at);
`;

type Variant = 'rowid' | 'without-rowid' | 'multi-row';
const LABEL: Record<Variant, string> = { 'rowid': 'rowid (as is)           ', 'without-rowid': 'WITHOUT ROWID           ', 'multi-row': 'rowid, 100-row INSERTs  ' };
const COLUMNS = '(partition_pk, offset, queue_pk, id, transaction_id, payload, encrypted, trace_id, producer_sub, created_at)';
const TUPLE = '(?, ?, 1, ?, ?, ?, 0, NULL, NULL, ?)';

function open(dir: string, withoutRowid: boolean): Database.Database {
  const db = new Database(path.join(dir, `${withoutRowid ? 'without' : 'rowid'}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536');
  migrate(db);
  if (withoutRowid) db.exec(WITHOUT_ROWID);
  return db;
}

/** µs per inserted row and per read row for one fresh database. */
function measure(db: Database.Database, multiRow: boolean): { insert: number; read: number } {
  const insert = db.prepare(`INSERT INTO messages ${COLUMNS} VALUES ${TUPLE}`);
  const insert100 = db.prepare(`INSERT INTO messages ${COLUMNS} VALUES ${Array<string>(100).fill(TUPLE).join(', ')}`);
  const heads = new Array<number>(PARTITIONS).fill(0);
  const ids = Array.from({ length: TX * 100 }, () => uuidv7()); // made before timing: the row work alone is measured
  let next = 0;
  const push100 = db.transaction(() => {
    const now = Date.now();
    const args: unknown[] = [];
    for (let i = 0; i < 100; i++) {
      const p = i % PARTITIONS;
      const id = ids[next++]!;
      if (multiRow) args.push(p, heads[p]!++, id, id, PAYLOAD, now);
      else insert.run(p, heads[p]!++, id, id, PAYLOAD, now);
    }
    if (multiRow) insert100.run(args);
  });
  let t0 = performance.now();
  for (let t = 0; t < TX; t++) push100();
  const insertUs = ((performance.now() - t0) * 1000) / (TX * 100);
  const read = db.prepare(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE partition_pk = ? AND offset >= ? ORDER BY offset LIMIT 100`).raw(true);
  let rows = 0;
  t0 = performance.now();
  for (let r = 0; r < 2000; r++) rows += read.all(r % PARTITIONS, (r * 37) % Math.max(1, heads[0]! - 100)).length;
  return { insert: insertUs, read: ((performance.now() - t0) * 1000) / rows };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-layout-'));
try {
  console.log(`${ROUNDS} rounds × ${TX} transactions of 100 rows over ${PARTITIONS} partitions; µs per row`);
  for (let round = 1; round <= ROUNDS; round++) {
    const order: Variant[] = ['rowid', 'without-rowid', 'multi-row'];
    for (const v of round % 2 ? order : order.reverse()) {
      const db = open(dir, v === 'without-rowid');
      const m = measure(db, v === 'multi-row');
      db.close();
      for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f), { force: true });
      console.log(`round ${round} ${LABEL[v]}: insert ${m.insert.toFixed(2)}, read ${m.read.toFixed(2)}`);
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
