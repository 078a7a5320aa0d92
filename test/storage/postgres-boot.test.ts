/**
 * Booting with `QUEEN_STORAGE=postgres` (src/boot.ts, docs/storage.md#postgresql-backend): an
 * unreachable database is fatal with the driver's reason; a reachable one gets the `queen` schema
 * and the broker serves on it, and a restart finds what was pushed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { runBrokerExpectingExit, startBroker } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { MIGRATIONS } from '../../src/storage/postgres/schema.js';
import { freshDatabase } from './postgres-backend.js';

test('QUEEN_STORAGE=postgres with nothing listening on PG_PORT: fatal, names the address, not the password', async () => {
  const { code, output } = await runBrokerExpectingExit({ QUEEN_STORAGE: 'postgres', PG_HOST: '127.0.0.1', PG_PORT: '7599', PG_PASSWORD: 'pw-not-shown' });
  assert.equal(code, 1);
  assert.match(output, /fatal: cannot reach PostgreSQL at 127\.0\.0\.1:7599\/postgres: .*ECONNREFUSED/);
  assert.ok(!output.includes('pw-not-shown'));
});

test('QUEEN_STORAGE=postgres with DATABASE_URL: the schema migrations are applied and the broker serves; a restart keeps the messages', async () => {
  const db = await freshDatabase();
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url };
    const b = await startBroker({ env });
    try {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        assert.deepEqual((await c.query('SELECT version FROM queen.schema_migrations ORDER BY version')).rows, MIGRATIONS.map((m) => ({ version: m.version })));
      } finally {
        await c.end();
      }
      assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'boot-q', payload: { n: 1 } }] })).status, 201);
      const cfg = await call(b.url, 'POST', '/api/v1/configure', { queue: 'boot-q', options: {} });
      assert.equal(cfg.body.storage, 'postgres');
    } finally {
      assert.equal(await b.stop(), 0);
    }
    const again = await startBroker({ env });
    try {
      const p = await call(again.url, 'GET', '/api/v1/pop/queue/boot-q');
      assert.equal(p.status, 200);
      assert.deepEqual(p.body.messages.map((m: { data: unknown }) => m.data), [{ n: 1 }]);
    } finally {
      await again.stop();
    }
  } finally {
    await db.drop();
  }
});
