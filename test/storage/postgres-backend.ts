/**
 * The PostgreSQL backend of the operation contract (src/storage/postgres/backend.ts) on a fresh
 * database of the local server, for the conformance suite and the multi-process tests. The server
 * is the one `.ci/run` starts (127.0.0.1:5432, user postgres, trust auth), overridable with
 * `QUEEN_TEST_PG_URL` (a URL whose database is the admin database new ones are created from).
 * Each call creates its own database with a unique name and drops it on close, so test files run
 * side by side.
 */
import pg from 'pg';
import type { PoolClient, QueryResult } from 'pg';
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

/**
 * Hooks the statements that transactions send on `b` (PgDb.tx checks a connection out of the pool;
 * pool.query, which passes a callback, is left alone): `after` runs once a statement answered, with
 * its SQL text and result, and what it throws or awaits is what the transaction sees (a lost reply,
 * a pause between two statements).
 * @returns a function that ends the hook (clients already handed out pass statements through again)
 */
export function afterTxStatements(b: PgBackend, after: (sql: unknown, result: QueryResult) => Promise<void> | void): () => void {
  type Connect = (cb?: (...a: unknown[]) => void) => Promise<PoolClient> | undefined;
  const pool = b.db.pool as unknown as { connect: Connect };
  const connect = pool.connect.bind(pool);
  let active = true;
  const hooked = async (): Promise<PoolClient> => {
    const client = (await connect())!;
    const query = client.query.bind(client) as (...a: unknown[]) => Promise<QueryResult>;
    (client as unknown as { query: (...a: unknown[]) => Promise<QueryResult> }).query = async (...args: unknown[]) => {
      const r = await query(...args);
      if (active) await after(args[0], r);
      return r;
    };
    return client;
  };
  pool.connect = (cb) => (cb ? connect(cb) : hooked());
  return () => {
    active = false;
    pool.connect = connect;
  };
}
