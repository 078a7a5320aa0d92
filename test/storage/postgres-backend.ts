/**
 * The PostgreSQL backend of the operation contract (src/storage/postgres/backend.ts) on a fresh
 * database of the local server, for the conformance suite and the multi-process tests. The server
 * is the one `.ci/run` starts (127.0.0.1:5432, user postgres, trust auth), overridable with
 * `QUEEN_TEST_PG_URL` (a URL whose database is the admin database new ones are created from).
 * Each call creates its own database with a unique name and drops it on close, so test files run
 * side by side.
 */
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { PgBackend } from '../../src/storage/postgres/backend.js';

/** The admin connection URL of the test server. */
export const TEST_PG_URL = process.env.QUEEN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh database: its connection URL and a drop function (terminates its connections first). */
export async function freshDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `queen_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(TEST_PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: TEST_PG_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Opens the backend on a fresh database; `close()` closes it and drops the database. */
export async function openPostgresBackend(): Promise<PgBackend> {
  const db = await freshDatabase();
  const b = await PgBackend.open({ pool: { connectionString: db.url, max: 4 } });
  const close = b.close.bind(b);
  b.close = async () => {
    await close();
    await db.drop();
  };
  return b;
}
