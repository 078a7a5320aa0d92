/**
 * Upgrade to the cursors' delivery counts (docs/storage.md#delivery-counts; SQLite migration 11,
 * PostgreSQL migration 11): a SQLite data directory and a PostgreSQL database written by the
 * release before (e33a0b5; test/fixtures/make-attempt-fixtures.ts says how and what they hold)
 * boot with this build, and the deliveries the old cursors remembered still count: a group whose
 * 6-message lease expired gets them back as their second delivery, also when it takes them in
 * smaller batches; one that had them twice, as the third.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import pg from 'pg';
import { sqliteOnly, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { migrate } from '../../src/storage/postgres/migrate.js';
import { MIGRATIONS } from '../../src/storage/postgres/schema.js';
import { freshDatabase } from './postgres-backend.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURES = path.resolve(here, '../../../test/fixtures');
const REV = 'e33a0b5';
/** The newest PostgreSQL migration of that release. */
const PG_VERSION_THEN = 10;

type Msg = { data: { n: number }; transactionId: string; partitionId: string; leaseId: string; deliveryAttempt: number };

async function pop(b: BrokerHandle, group: string, batch: number): Promise<Msg[]> {
  const r = await call(b.url, 'GET', `/api/v1/pop/queue/redeliver/partition/p?batch=${batch}&consumerGroup=${group}`);
  assert.ok(r.status === 200 || r.status === 204, r.text);
  return r.status === 204 ? [] : r.body.messages;
}

async function ack(b: BrokerHandle, group: string, msgs: Msg[]): Promise<void> {
  const r = await call(b.url, 'POST', '/api/v1/ack/batch', {
    acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed', consumerGroup: group })),
  });
  assert.equal(r.status, 200, r.text);
  assert.ok((r.body as { success: boolean }[]).every((x) => x.success), r.text);
}

const seen = (msgs: Msg[]) => msgs.map((m) => [m.data.n, m.deliveryAttempt]);

/** What the fixture's cursors must give after the upgrade (see the module comment). */
async function checkUpgraded(b: BrokerHandle): Promise<void> {
  const two = await pop(b, 'once', 2);
  assert.deepEqual(seen(two), [[0, 2], [1, 2]], 'once: its 6-message lease expired before the upgrade');
  await ack(b, 'once', two);
  assert.deepEqual(seen(await pop(b, 'once', 10)), [[2, 2], [3, 2], [4, 2], [5, 2]], 'once: delivered once, in the batch of 6 before the upgrade');
  assert.deepEqual(seen(await pop(b, 'twice', 10)), [[0, 3], [1, 3], [2, 3], [3, 3], [4, 3], [5, 3]], 'twice: delivered twice before the upgrade');
  assert.deepEqual(seen(await pop(b, 'half', 10)), [[3, 1], [4, 1], [5, 1]], 'half: 0–2 acked, 3–5 never delivered');
}

describe(`data written by ${REV} (before the delivery counts) boots after the upgrade`, () => {
  test('SQLite: the data directory', sqliteOnly('a SQLite data directory'), async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `queen-upgrade-${REV}-`));
    fs.cpSync(path.join(FIXTURES, `datadir-${REV}`), dataDir, { recursive: true });
    const b = await startBroker({ dataDir, env: { QUEEN_STORAGE: 'sqlite' } });
    try {
      await checkUpgraded(b);
    } finally {
      await b.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL: a database at migration 10 with the release\'s rows', async () => {
    const db = await freshDatabase();
    try {
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      try {
        assert.deepEqual(await migrate(pool, MIGRATIONS.filter((m) => m.version <= PG_VERSION_THEN)), Array.from({ length: PG_VERSION_THEN }, (_, i) => i + 1));
        // the dump holds every row the release had, the migrations' own (schema_migrations, initial rows) included
        const tables = (await pool.query("SELECT tablename FROM pg_tables WHERE schemaname = 'queen'")).rows.map((r: { tablename: string }) => `queen.${r.tablename}`);
        await pool.query(`TRUNCATE ${tables.join(', ')}`);
        await pool.query(fs.readFileSync(path.join(FIXTURES, `pg-${REV}.sql`), 'utf8'));
        assert.equal((await pool.query('SELECT count(*)::int AS n FROM queen.consumers')).rows[0].n, 3);
      } finally {
        await pool.end();
      }
      const b = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url } });
      try {
        await checkUpgraded(b);
      } finally {
        await b.stop();
      }
    } finally {
      await db.drop();
    }
  });
});
