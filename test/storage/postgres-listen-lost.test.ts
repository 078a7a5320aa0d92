/**
 * The LISTEN connection of a node terminated by the server (`pg_terminate_backend`), docs/cluster.md#what-the-tests-prove: a pop parked afterwards on that node still completes soon
 * after a push on another node, through the reconnected LISTEN or the bounded back-off re-check, and
 * the node listens again. Real broker processes over one real PostgreSQL database.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startBroker } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitFor, waitForParked } from '../helpers/wait.js';
import { freshDatabase } from './postgres-backend.js';

/** The backends of `database` that LISTEN (the wake-up connections of the brokers on it). */
async function listeners(admin: pg.Client, database: string): Promise<number[]> {
  const r = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN%'", [database]);
  return r.rows.map((x) => x.pid);
}

test('a terminated LISTEN connection: a pop parked afterwards completes within seconds of a push on another node', async () => {
  const db = await freshDatabase();
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url };
    const a = await startBroker({ env });
    const b = await startBroker({ env });
    try {
      assert.equal((await call(a.url, 'POST', '/api/v1/configure', { queue: 'lost-listen', options: {} })).status, 200);
      const before = await waitFor(async () => { const p = await listeners(admin, db.name); return p.length === 2 ? p : undefined; }, { what: 'two LISTEN connections' });
      const killed = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend(pid) AS ok FROM unnest($1::int[]) AS pid', [before]);
      assert.ok(killed.rows.every((r) => r.ok), 'both LISTEN backends terminated');
      // Park on B after the loss, push on A, and time the answer.
      const parked = call(b.url, 'GET', '/api/v1/pop/queue/lost-listen?wait=true&timeout=30000&autoAck=true');
      await waitForParked(b.url, 1);
      const pushedAt = Date.now();
      assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'lost-listen', payload: { n: 1 } }] })).status, 201);
      const got = await parked;
      const tookMs = Date.now() - pushedAt;
      assert.equal(got.status, 200, 'the parked pop got the message, not its timeout');
      assert.deepEqual(got.body.messages.map((m: { data: unknown }) => m.data), [{ n: 1 }]);
      assert.ok(tookMs < 5_000, `the pop completed ${tookMs} ms after the push (bound 5 s)`);
      // Both nodes listen again, on new backends.
      await waitFor(async () => { const p = await listeners(admin, db.name); return p.length === 2 && p.every((x) => !before.includes(x)); }, { what: 'two new LISTEN connections' });
      // A second round on the new connections (both pops auto-ack, so the partition is free again).
      const parked2 = call(b.url, 'GET', '/api/v1/pop/queue/lost-listen?wait=true&timeout=30000&autoAck=true');
      await waitForParked(b.url, 1);
      const pushed2 = Date.now();
      assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'lost-listen', payload: { n: 2 } }] })).status, 201);
      const got2 = await parked2;
      assert.equal(got2.status, 200);
      assert.deepEqual(got2.body.messages.map((m: { data: unknown }) => m.data), [{ n: 2 }]);
      assert.ok(Date.now() - pushed2 < 5_000);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  } finally {
    await admin.end();
    await db.drop();
  }
});
