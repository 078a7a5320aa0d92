/**
 * A group commit of appends whose COMMIT fails on the PostgreSQL backend
 * (src/storage/postgres/backend.ts, src/storage/postgres/db.ts `commitOutcomeUnknown`): the
 * transaction may have committed (the reply was lost with the connection), so its requests get the
 * error and are not appended again; before, each was re-run in a transaction of its own and its
 * messages were stored twice behind a success.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PgBackend } from '../../src/storage/postgres/backend.js';
import { DEFAULT_TENANT } from '../../src/storage/contract.js';
import { afterTxStatements, openPostgresBackend } from './postgres-backend.js';

const T0 = 1_700_000_000_000;
const P = { tenant: DEFAULT_TENANT, queue: 'lost-commit', partition: 'p' };
const item = (txn: string) => ({ messageId: `m-${txn}`, transactionId: txn, payload: `"${txn}"`, encrypted: false, traceId: null, producerSub: null });

let b: PgBackend;
before(async () => { b = await openPostgresBackend(); });
after(async () => { await b.close(); });

test('a COMMIT that fails after the server committed: the batch\'s requests get the error and none is stored twice', async () => {
  // The partition exists first, so each append below is one transaction with one COMMIT.
  await b.append({ key: P, items: [item('seed')], dedupWindowMs: 0, now: T0 });
  // From here on the second COMMIT the pool's clients send commits, then throws as if the reply had been lost.
  let commits = 0;
  const restore = afterTxStatements(b, (sql) => {
    if (sql === 'COMMIT' && ++commits === 2) throw new Error('Connection terminated unexpectedly');
  });
  // a commits alone; b and c wait for it and go into the second transaction together (one group commit).
  const settled = await Promise.allSettled(['a', 'b', 'c'].map((t) => b.append({ key: P, items: [item(t)], dedupWindowMs: 0, now: T0 + 1 })));
  restore();
  assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'rejected']);
  assert.equal(((settled[1] as PromiseRejectedResult).reason as { code?: string }).code, 'db_unavailable', 'a lost connection is db_unavailable (503)');
  const view = await b.readPartition(P);
  assert.equal(view?.headOffset, 4, 'seed, a, b and c, each once: b and c were committed by the COMMIT whose reply was lost, and not appended again');
});
