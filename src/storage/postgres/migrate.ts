/**
 * Applies the schema migrations (schema.ts) to a PostgreSQL database: in one transaction that
 * first takes `pg_advisory_xact_lock` on a fixed key, so when several brokers boot on one database
 * one applies and the others wait, then find the versions recorded and apply nothing
 * (docs/storage.md#postgresql-backend, design B2). Works through session poolers too: the lock
 * is transaction-scoped, never held across statements outside the transaction.
 */
import type { Pool } from 'pg';
import { MIGRATIONS, type Migration } from './schema.js';

/** The advisory lock key the migrations run under (any fixed 64-bit number; "queen" in ASCII). */
export const MIGRATION_LOCK_KEY = 0x717565656e;

/**
 * Brings the `queen` schema to the newest version.
 * @param standby the database is a hot standby: nothing is applied, the schema must already be current
 * @returns the versions applied by this call (empty when the database was current)
 * @throws the database error of a failed migration (nothing of it stays applied)
 */
export async function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS, standby = false): Promise<number[]> {
  if (standby) {
    // A hot standby replays its primary's schema and refuses DDL: check it is current, apply nothing.
    const newest = Math.max(...migrations.map((m) => m.version));
    const have = (await pool.query<{ v: number | null }>('SELECT max(version) AS v FROM queen.schema_migrations').catch(() => ({ rows: [{ v: null }] }))).rows[0]!.v;
    if (have === null || have < newest) throw new Error(`the database is a standby whose schema is at version ${have ?? 'none'}, older than this broker's ${newest}: start a broker on the primary first`);
    return [];
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query('CREATE SCHEMA IF NOT EXISTS queen');
    await client.query(`CREATE TABLE IF NOT EXISTS queen.schema_migrations (
      version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM queen.schema_migrations')).rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO queen.schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
