/**
 * Pops cost O(recent activity), not O(partitions), on PostgreSQL (docs/storage.md#postgresql-backend),
 * through a real broker over one real database: a queue of 100 partitions against one of 100,000,
 * the same pops and acks on each must touch about the same number of rows. Two shapes: every
 * partition holding one message (all pending); and 100 busy partitions next to 99,900 idle ones
 * whose one message was consumed an hour ago, in a queue that has not run empty since (no
 * watermark: the claim floor alone keeps the idle ones out of the walk). The work is read from
 * PostgreSQL's own per-table counters (`pg_stat_user_tables`: rows read by sequential and index
 * scans, scans started) of the `queen` schema; a broker's counters reach them when its connections
 * close, so each measured phase is one broker lifetime, and the work of a lifetime without pops
 * (boot and stop) is taken off. Speed is the bench's (`npm run bench`), never asserted here.
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
    signal: AbortSignal.timeout(300_000), // a pop that claims 1,000 of 100,000 partitions on a loaded machine (a full run at load 18 passed 60 s)
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

/** A fresh database, an admin connection to it and broker lifetimes whose work is counted (see the module comment). */
async function harness() {
  const db = await freshDatabase();
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  // Pops of up to 20,000 partitions: the idle-partition drain below takes 5 walks instead of 100.
  const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, DB_POOL_SIZE: '4', QUEEN_MAX_POP_PARTITIONS: '20000', QUEEN_MAX_POP_BATCH: '20000' };
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
  /** `text` on a connection of its own, closed after: its reads reach the counters before the next lifetime's start. */
  const sql = async (text: string, values: unknown[] = []) => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      return await c.query(text, values);
    } finally {
      await c.end();
    }
  };
  const close = async () => {
    await admin.end();
    await db.drop();
  };
  return { admin, sql, lifetime, minus, close };
}

/** `pops` pops (batch 1) of `queue`, each acked. */
const popAck = (queue: string, pops = POPS) => async (b: BrokerHandle) => {
  for (let i = 0; i < pops; i++) {
    const p = await json(`${b.url}/api/v1/pop/queue/${queue}?batch=1`, 'GET');
    assert.equal(p.status, 200, `pop ${i} on ${queue}`);
    const [m] = p.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
    const a = await json(`${b.url}/api/v1/ack`, 'POST', { transactionId: m!.transactionId, partitionId: m!.partitionId, leaseId: m!.leaseId, consumerGroup: null });
    assert.equal(a.status, 200);
    assert.equal(a.body[0].success, true, JSON.stringify(a.body));
  }
};

/** Pushes one message to each partition `<prefix><i>` of `queue`, i in [0, count), `each` times over, 1,000 per request. */
async function fill(b: BrokerHandle, queue: string, prefix: string, count: number, each = 1): Promise<void> {
  const total = count * each;
  for (let start = 0; start < total; start += 1000) {
    const items = Array.from({ length: Math.min(1000, total - start) }, (_, i) => ({ queue, partition: `${prefix}${(start + i) % count}`, payload: { i: start + i } }));
    const r = await json(`${b.url}/api/v1/push`, 'POST', { items });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
}

const show = (w: Work) => Object.entries(w).filter(([, v]) => v.scans !== 0).map(([t, v]) => `${t} ${v.rowsRead} rows/${v.scans} scans`).join(', ');

/** The bounds both shapes assert: rows of the per-partition tables and scans started, 100,000 against 100 partitions. */
function assertSameWork(few: Work, many: Work, shape: string): void {
  console.log(`# ${shape}, ${POPS} pops+acks on 100 partitions: ${show(few)}`);
  console.log(`# ${shape}, ${POPS} pops+acks on 100,000 partitions: ${show(many)}`);
  const rowsFew = sum(few, PER_PARTITION, 'rowsRead');
  const rowsMany = sum(many, PER_PARTITION, 'rowsRead');
  assert.ok(rowsFew >= POPS, `the counters saw the pops (${rowsFew} rows of ${PER_PARTITION.join(', ')})`);
  assert.ok(rowsMany <= rowsFew * 1.3, `${shape}, 100,000 partitions: ${rowsMany} rows of ${PER_PARTITION.join(', ')} read for ${POPS} pops+acks, against ${rowsFew} for 100 (bound 1.3×)`);
  assert.ok(sum(many, undefined, 'scans') <= sum(few, undefined, 'scans') * 1.3,
    `${shape}: scans started: ${sum(many, undefined, 'scans')} against ${sum(few, undefined, 'scans')} (bound 1.3×)`);
}

test('100,000 partitions: pops and acks touch no more rows than on 100 partitions (pg_stat_user_tables)', { timeout: 900_000 }, async () => {
  const h = await harness();
  try {
    await h.lifetime(async (b) => {
      for (const count of [100, 100_000]) await fill(b, `wide-${count}`, 'p', count);
    });
    const idle = await h.lifetime(async () => undefined); // boot and stop: what every lifetime costs besides the pops
    const few = h.minus(await h.lifetime(popAck('wide-100')), idle);
    const many = h.minus(await h.lifetime(popAck('wide-100000')), idle);
    assertSameWork(few, many, 'one message in each partition');
    const parts = (await h.admin.query(`SELECT q.name, count(*)::int AS n, sum(p.next_offset)::int AS m FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id GROUP BY q.name ORDER BY q.name`)).rows;
    assert.deepEqual(parts, [{ name: 'wide-100', n: 100, m: 100 }, { name: 'wide-100000', n: 100_000, m: 100_000 }], 'one message in each partition');
  } finally {
    await h.close();
  }
});

test('99,900 idle partitions in a queue that never runs empty: pops read as many rows as without them (claim floor)', { timeout: 900_000 }, async () => {
  const h = await harness();
  try {
    await h.lifetime(async (b) => {
      // The idle partitions: one message each, consumed (queue mode) through the broker.
      await fill(b, 'busy-100000', 'idle-', 99_900);
      let consumed = 0;
      for (;;) {
        const p = await json(`${b.url}/api/v1/pop/queue/busy-100000?batch=20000&partitions=20000&autoAck=true`, 'GET');
        if (p.status === 204) break;
        assert.equal(p.status, 200);
        consumed += (p.body.messages as unknown[]).length;
      }
      assert.equal(consumed, 99_900);
    });
    // They went quiet an hour ago and the queue has not run empty since: times moved back an hour,
    // and no watermark (the drain's last, empty pop set one; a queue that never runs empty has none).
    const ids = `SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'busy-100000'`;
    await h.sql(`UPDATE queen.partitions SET last_activity_ms = last_activity_ms - 3600000, last_message_at_ms = last_message_at_ms - 3600000 WHERE id IN (${ids})`);
    await h.sql(`UPDATE queen.messages SET created_at = created_at - interval '1 hour' WHERE partition_id IN (${ids})`);
    assert.equal((await h.sql('DELETE FROM queen.consumer_watermarks')).rowCount, 1);
    await h.sql('VACUUM ANALYZE queen.partitions');
    await h.lifetime(async (b) => {
      // The same busy work on both queues: 100 partitions, 2 messages each (more than the pops: never empty).
      for (const queue of ['busy-100', 'busy-100000']) await fill(b, queue, 'busy-', 100, 2);
      // A first pop on each: the first walk of the 100,000 (from the lowest floor) passes the idle
      // partitions once and sets the claim floor above them.
      for (const queue of ['busy-100', 'busy-100000']) await popAck(queue, 1)(b);
    });
    const floors = (await h.sql(`SELECT q.name, f.floor_ms::bigint > max(p.last_activity_ms) FILTER (WHERE p.name LIKE 'idle-%') AS above_idle
                                           FROM queen.claim_floors f JOIN queen.queues q ON q.id = f.queue_id JOIN queen.partitions p ON p.queue_id = q.id
                                          WHERE q.name = 'busy-100000' GROUP BY q.name, f.floor_ms`)).rows;
    assert.deepEqual(floors, [{ name: 'busy-100000', above_idle: true }], 'the claim floor is above the idle partitions');
    const quiet = await h.lifetime(async () => undefined);
    const few = h.minus(await h.lifetime(popAck('busy-100')), quiet);
    const many = h.minus(await h.lifetime(popAck('busy-100000')), quiet);
    assertSameWork(few, many, '100 busy partitions, the rest idle');
    const left = (await h.admin.query(`SELECT q.name, sum(p.next_offset - COALESCE(c.next_offset, p.first_offset))::int AS n FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
                                         LEFT JOIN queen.consumers c ON c.partition_id = p.id GROUP BY q.name ORDER BY q.name`)).rows;
    assert.deepEqual(left, [{ name: 'busy-100', n: 200 - POPS - 1 }, { name: 'busy-100000', n: 200 - POPS - 1 }], 'the pops took busy messages only, in both queues');
  } finally {
    await h.close();
  }
});
