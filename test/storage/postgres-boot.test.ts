/**
 * Booting with `QUEEN_STORAGE=postgres` (src/main.ts, docs/storage.md#postgresql-backend): an
 * unreachable database is fatal with the driver's reason; a reachable one gets the `queen` schema,
 * and the broker then stops with a fatal message, since its domain does not serve on PostgreSQL yet.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { runBrokerExpectingExit } from '../helpers/broker.js';
import { MIGRATIONS } from '../../src/storage/postgres/schema.js';
import { freshDatabase } from './postgres-backend.js';

test('QUEEN_STORAGE=postgres with nothing listening on PG_PORT: fatal, names the address, not the password', async () => {
  const { code, output } = await runBrokerExpectingExit({ QUEEN_STORAGE: 'postgres', PG_HOST: '127.0.0.1', PG_PORT: '7599', PG_PASSWORD: 'pw-not-shown' });
  assert.equal(code, 1);
  assert.match(output, /fatal: cannot reach PostgreSQL at 127\.0\.0\.1:7599\/postgres: .*ECONNREFUSED/);
  assert.ok(!output.includes('pw-not-shown'));
});

test('QUEEN_STORAGE=postgres with DATABASE_URL: the schema migrations are applied, then a clear fatal message', async () => {
  const db = await freshDatabase();
  try {
    const { code, output } = await runBrokerExpectingExit({ QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url });
    assert.equal(code, 1);
    assert.match(output, /fatal: QUEEN_STORAGE=postgres: the queen schema is in place at DATABASE_URL, but this build's broker does not serve on PostgreSQL yet/);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      assert.deepEqual((await c.query('SELECT version FROM queen.schema_migrations ORDER BY version')).rows, MIGRATIONS.map((m) => ({ version: m.version })));
    } finally {
      await c.end();
    }
  } finally {
    await db.drop();
  }
});
