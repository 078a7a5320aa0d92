/**
 * `queen.count_delivery` (src/storage/postgres/schema.ts, migration 11), the PostgreSQL hot claim's
 * statement of `countDelivery` (src/storage/attempts.ts), gives the same counts as the TypeScript on
 * the states random claims and acks reach, on the local server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { countDelivery, NO_DELIVERIES, type DeliveryCounts } from '../../src/storage/attempts.js';
import { migrate } from '../../src/storage/postgres/migrate.js';
import { freshDatabase } from './postgres-backend.js';

test('queen.count_delivery agrees with countDelivery on 5000 claims', async () => {
  const db = await freshDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  try {
    await migrate(pool);
    let seed = 7;
    const r = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const inputs: { lo: number; e: number; c: DeliveryCounts }[] = [];
    const expected: DeliveryCounts[] = [];
    let c: DeliveryCounts = { ...NO_DELIVERIES };
    let committed = 0;
    for (let i = 0; i < 5000; i++) {
      if (r(20) === 0) {
        c = { ...NO_DELIVERIES }; // a seek
        committed = r(50);
      }
      const lo = committed;
      const e = lo + 1 + r(8);
      inputs.push({ lo, e, c: { ...c } });
      countDelivery(c, lo, e);
      expected.push({ ...c });
      if (r(3) === 0) committed = lo + r(e - lo + 1); // an ack within the batch
    }
    const col = <K extends 'lo' | 'e'>(k: K) => inputs.map((x) => x[k]);
    const cnt = <K extends keyof DeliveryCounts>(k: K) => inputs.map((x) => x.c[k]);
    const got = await pool.query(`
      SELECT (queen.count_delivery(x.lo, x.e, x.a, x.s, x.b, x.h)).*
        FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::int[], $6::bigint[]) WITH ORDINALITY AS x(lo, e, a, s, b, h, n)
       ORDER BY x.n`, [col('lo'), col('e'), cnt('deliveryCount'), cnt('attemptSplit'), cnt('deliveryCountFromSplit'), cnt('deliveredMax')]);
    const rows = got.rows.map((x: Record<string, string | number>) => ({
      deliveryCount: Number(x.delivery_count), attemptSplit: Number(x.attempt_split),
      deliveryCountFromSplit: Number(x.delivery_count_from_split), deliveredMax: Number(x.delivered_max),
    }));
    assert.equal(rows.length, inputs.length);
    for (let i = 0; i < rows.length; i++) assert.deepEqual(rows[i], expected[i], `claim ${i}: ${JSON.stringify(inputs[i])}`);
    assert.ok(new Set(expected.map((x) => x.deliveryCountFromSplit)).size > 2, 'the claims reached two-level states');
  } finally {
    await pool.end();
    await db.drop();
  }
});
