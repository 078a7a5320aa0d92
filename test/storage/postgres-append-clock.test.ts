/**
 * Appends on the PostgreSQL backend that follows the database clock (`clock: 'database'`, as the
 * broker opens it: src/storage/open.ts): a message's time is the database's whatever `now` the
 * caller passed, on the group-commit path (src/storage/postgres/append-batch.ts) as on the
 * single-append one (docs/storage.md#postgresql-backend). Before, the group-commit path stamped the
 * caller's time, so a node whose clock had jumped stamped messages in the future (hidden from
 * delayed-processing queues, and carried onto every later message of the partition).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgBackend } from '../../src/storage/postgres/backend.js';
import { DEFAULT_TENANT } from '../../src/storage/contract.js';
import { freshDatabase } from './postgres-backend.js';

const Q = { tenant: DEFAULT_TENANT, queue: 'append-clock' };
const item = (txn: string) => ({ messageId: `m-${txn}`, transactionId: txn, payload: `"${txn}"`, encrypted: false, traceId: null, producerSub: null });
const HOUR = 3_600_000;

let db: Awaited<ReturnType<typeof freshDatabase>>;
let b: PgBackend;
before(async () => {
  db = await freshDatabase();
  b = await PgBackend.open({ pool: { connectionString: db.url, max: 4 }, clock: 'database' });
});
after(async () => { await b.close(); await db.drop(); });

test('messages take the database\'s time, not a caller clock an hour ahead', async () => {
  const dbNow = Number((await b.db.rows('SELECT (extract(epoch from now()) * 1000)::bigint AS now'))[0]!.now);
  const ahead = dbNow + HOUR;
  await Promise.all(['a', 'b', 'c'].map((t) => b.append({ key: { ...Q, partition: 'p' }, items: [item(t)], dedupWindowMs: 0, now: ahead })));
  const rows = await b.db.rows(`SELECT (extract(epoch from created_at) * 1000)::bigint AS at FROM queen.messages ORDER BY "offset"`);
  assert.equal(rows.length, 3);
  for (const r of rows) assert.ok(Number(r.at) < dbNow + HOUR / 2, `created_at ${r.at} follows the caller's clock (${ahead}), not the database's (${dbNow})`);
});
