/**
 * Pops cost O(recent activity), not O(partitions), on PostgreSQL (docs/storage.md#postgresql-backend),
 * through a real broker over one real database: two queues, one of 100 partitions and one of
 * 100,000, each partition holding one message pushed over HTTP. The same number of pops and acks
 * on each queue must touch about the same number of rows. The work is read from PostgreSQL's own
 * per-table counters (`pg_stat_user_tables`: rows read by sequential and index scans, scans
 * started) of the `queen` schema; a broker's counters reach them when its connections close, so
 * each measured phase is one broker lifetime, and the work of a lifetime without pops (boot and
 * stop) is taken off. Speed is the bench's (`npm run bench`), never asserted here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { waitFor } from '../helpers/wait.js';
import { freshDatabase } from './postgres-backend.js';

const POPS = 60;

/** Per table of the `queen` schema: rows read by sequential and index scans, and scans started. */
type Work = Record<string, { rowsRead: number; scans: number }>;

/** The tables whose rows are one per partition (or per message): what grows with the partition count. */
const PER_PARTITION = ['partitions', 'messages'];

const sum = (w: Work, tables: string[] | undefined, k: 'rowsRead' | 'scans') =>
  Object.entries(w).filter(([t]) => !tables || tables.includes(t)).reduce((n, [, v]) => n + v[k], 0);

async function json(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(url, {
    method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

test('100,000 partitions: pops and acks touch no more rows than on 100 partitions (pg_stat_user_tables)', { timeout: 900_000 }, async () => {
  const db = await freshDatabase();
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, DB_POOL_SIZE: '4' };
  /** The counters once every broker connection is gone (a backend's counters are flushed when it exits). */
  const counters = async (): Promise<Work> => {
    await waitFor(async () => (await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name])).rows[0].n === 0,
      { what: 'the broker connections to close', timeoutMs: 30_000 });
    await admin.query('SELECT pg_stat_clear_snapshot()');
    const rows = (await admin.query(`SELECT relname, seq_tup_read + COALESCE(idx_tup_fetch, 0) AS rows_read, seq_scan + COALESCE(idx_scan, 0) AS scans
                                       FROM pg_stat_user_tables WHERE schemaname = 'queen'`)).rows as { relname: string; rows_read: string; scans: string }[];
    return Object.fromEntries(rows.map((r) => [r.relname, { rowsRead: Number(r.rows_read), scans: Number(r.scans) }]));
  };
  const minus = (a: Work, b: Work): Work => Object.fromEntries(Object.entries(a).map(([t, v]) =>
    [t, { rowsRead: v.rowsRead - (b[t]?.rowsRead ?? 0), scans: v.scans - (b[t]?.scans ?? 0) }]));
  /** One broker lifetime running `fn`; the counters it added. */
  const lifetime = async (fn: (b: BrokerHandle) => Promise<void>): Promise<Work> => {
    const before = await counters();
    const b = await startBroker({ env });
    try {
      await fn(b);
    } finally {
      await b.stop();
    }
    return minus(await counters(), before);
  };
  const popAck = (queue: string) => async (b: BrokerHandle) => {
    for (let i = 0; i < POPS; i++) {
      const p = await json(`${b.url}/api/v1/pop/queue/${queue}?batch=1`, 'GET');
      assert.equal(p.status, 200, `pop ${i} on ${queue}`);
      const [m] = p.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const a = await json(`${b.url}/api/v1/ack`, 'POST', { transactionId: m!.transactionId, partitionId: m!.partitionId, leaseId: m!.leaseId, consumerGroup: null });
      assert.equal(a.status, 200);
      assert.equal(a.body[0].success, true, JSON.stringify(a.body));
    }
  };
  try {
    await lifetime(async (b) => {
      for (const count of [100, 100_000]) {
        for (let start = 0; start < count; start += 1000) {
          const items = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({ queue: `wide-${count}`, partition: `p${start + i}`, payload: { i: start + i } }));
          const r = await json(`${b.url}/api/v1/push`, 'POST', { items });
          assert.equal(r.status, 201, JSON.stringify(r.body));
        }
      }
    });
    const idle = await lifetime(async () => undefined); // boot and stop: what every lifetime costs besides the pops
    const few = minus(await lifetime(popAck('wide-100')), idle);
    const many = minus(await lifetime(popAck('wide-100000')), idle);
    const show = (w: Work) => Object.entries(w).filter(([, v]) => v.scans !== 0).map(([t, v]) => `${t} ${v.rowsRead} rows/${v.scans} scans`).join(', ');
    console.log(`# ${POPS} pops+acks on 100 partitions: ${show(few)}`);
    console.log(`# ${POPS} pops+acks on 100,000 partitions: ${show(many)}`);
    const rowsFew = sum(few, PER_PARTITION, 'rowsRead');
    const rowsMany = sum(many, PER_PARTITION, 'rowsRead');
    assert.ok(rowsFew >= POPS, `the counters saw the pops (${rowsFew} rows of ${PER_PARTITION.join(', ')})`);
    assert.ok(rowsMany <= rowsFew * 1.3, `100,000 partitions: ${rowsMany} rows of ${PER_PARTITION.join(', ')} read for ${POPS} pops+acks, against ${rowsFew} for 100 (bound 1.3×)`);
    assert.ok(sum(many, undefined, 'scans') <= sum(few, undefined, 'scans') * 1.3,
      `scans started: ${sum(many, undefined, 'scans')} against ${sum(few, undefined, 'scans')} (bound 1.3×)`);
    const parts = (await admin.query(`SELECT q.name, count(*)::int AS n, sum(p.next_offset)::int AS m FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id GROUP BY q.name ORDER BY q.name`)).rows;
    assert.deepEqual(parts, [{ name: 'wide-100', n: 100, m: 100 }, { name: 'wide-100000', n: 100_000, m: 100_000 }], 'one message in each partition');
  } finally {
    await admin.end();
    await db.drop();
  }
});
