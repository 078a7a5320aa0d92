/**
 * Claims cost O(recent activity), not O(partitions) (docs/storage.md#postgresql-backend): with
 * 100,000 idle partitions and one hot one, once a group's empty scan has set its watermark
 * (`queen.consumer_watermarks.last_empty_scan_at`) the candidate query reads only recently active
 * partitions, shown by the executed plan's row counts; and the watermark never hides work: a
 * push, a nack and an expired lease are all found again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { DEFAULT_TENANT, type ClaimRequest } from '../../src/storage/contract.js';
import { PgBackend } from '../../src/storage/postgres/backend.js';
import { candidateSql, WATERMARK_MARGIN_MS } from '../../src/storage/postgres/log-ops.js';
import { freshDatabase } from './postgres-backend.js';

const Q = { tenant: DEFAULT_TENANT, queue: 'wide' };
const HOT = { ...Q, partition: 'hot' };
const item = (txn: string) => ({ messageId: `m-${txn}`, transactionId: txn, payload: '1', encrypted: false, traceId: null, producerSub: null });

interface PlanNode { 'Relation Name'?: string; 'Actual Rows'?: number; 'Actual Loops'?: number; Plans?: PlanNode[] }

/** Rows the plan read from `relation` (every scan node on it, rows × loops). */
function rowsRead(n: PlanNode, relation: string): number {
  const own = n['Relation Name'] === relation ? (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1) : 0;
  return own + (n.Plans ?? []).reduce((s, c) => s + rowsRead(c, relation), 0);
}

test('100,000 idle partitions: after an empty scan a claim reads only recent activity; pushes, nacks and expired leases are still found', async () => {
  const db = await freshDatabase();
  const b = await PgBackend.open({ pool: { connectionString: db.url, max: 2 }, listen: false });
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const T0 = 1_700_000_000_000;
    const claim = (over: Partial<ClaimRequest>) => b.claim({ queue: Q, group: 'g', maxPartitions: 1, batch: 10, leaseId: 'L', leaseMs: 30_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now: T0, ...over });
    await b.append({ key: HOT, items: [item('a')], dedupWindowMs: 0, now: T0 });
    const { id: queueId } = (await c.query('SELECT id FROM queen.queues')).rows[0] as { id: string };
    await c.query(`INSERT INTO queen.partitions (id, queue_id, name, next_offset, last_message_at_ms, last_activity_ms)
                   SELECT gen_random_uuid(), $1, 'idle-' || i, 0, NULL, 0 FROM generate_series(1, 100000) AS i`, [queueId]);
    await c.query('ANALYZE queen.partitions');
    const [got] = await claim({ leaseId: null, now: T0 + 1 });
    assert.deepEqual(got?.messages.map((m) => m.offset), [0], 'the first scan (no watermark) finds the hot partition');
    assert.deepEqual(await claim({ now: T0 + 2 }), [], 'nothing left: an empty scan');
    const wm = (await c.query(`SELECT queue_name, consumer_group, (extract(epoch from last_empty_scan_at) * 1000)::bigint AS at FROM queen.consumer_watermarks`)).rows;
    assert.deepEqual(wm, [{ queue_name: 'wide', consumer_group: 'g', at: String(T0 + 2) }]);

    await b.append({ key: HOT, items: [item('b')], dedupWindowMs: 0, now: T0 + 3 });
    const plan = (await c.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${candidateSql(false)}`,
      [queueId, 'g', T0 + 4, null, 17, T0 + 2 - WATERMARK_MARGIN_MS])).rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] };
    const read = rowsRead(plan['QUERY PLAN'][0].Plan, 'partitions');
    assert.ok(read < 100, `the candidate query read ${read} partition rows of 100,001`);
    const [pushed] = await claim({ now: T0 + 4 });
    assert.deepEqual(pushed?.messages.map((m) => m.offset), [1], 'a push is found');
    await b.commitCursor({ key: { ...HOT, group: 'g' }, leaseId: 'L', committedOffset: 1, retryCount: 1, release: true, now: T0 + 5 });
    assert.deepEqual(await claim({ now: T0 + 200_000 }).then((r) => r[0]?.messages.map((m) => m.offset)), [1], 'a nack long after the watermark is found');
    assert.deepEqual(await claim({ leaseId: 'L2', now: T0 + 200_001 }), [], 'leased: an empty scan moves the watermark past every activity');
    assert.deepEqual(await claim({ leaseId: 'L3', now: T0 + 400_000 }).then((r) => r[0]?.messages.map((m) => m.offset)), [1], 'an expired lease is found');
  } finally {
    await c.end();
    await b.close();
    await db.drop();
  }
});
