/**
 * `node dist/bench/pg-backend.js`: the PostgreSQL backend of the operation contract on its own
 * (no HTTP), on a fresh database of the local server (test/storage/postgres-backend.ts): appends
 * of 1 message with 64 in flight (group commit gathers them), appends of 100 per call, and
 * claim + ack commit of batches of 100 on one partition, and the wake-up latency from an append on
 * one backend to the hint at another's listener (LISTEN/NOTIFY). Prints msg/s per shape and p50/p99.
 *
 * Env: BENCH_SECONDS (default 3) per shape.
 */
import { DEFAULT_TENANT, type AppendItem } from '../src/storage/contract.js';
import { freshDatabase } from '../test/storage/postgres-backend.js';
import { PgBackend } from '../src/storage/postgres/backend.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const PAYLOAD = JSON.stringify({ orderId: 12345, customer: 'c-0042', amount: 99.95, note: 'x'.repeat(120) });
let seq = 0;
const item = (): AppendItem => ({ messageId: `m-${++seq}`, transactionId: `t-${seq}`, payload: PAYLOAD, encrypted: false, traceId: null, producerSub: null });

async function timed(concurrency: number, op: () => Promise<number>): Promise<number> {
  const end = Date.now() + SECONDS * 1000;
  let n = 0;
  const start = Date.now();
  await Promise.all(Array.from({ length: concurrency }, async () => { while (Date.now() < end) { const k = await op(); n += k; } }));
  return Math.round(n / ((Date.now() - start) / 1000));
}

const db = await freshDatabase();
const b = await PgBackend.open({ pool: { connectionString: db.url, max: 10 } });
try {
  const Q = { tenant: DEFAULT_TENANT, queue: 'bench' };
  const rows: [string, number][] = [];
  rows.push(['append 1/call, 64 in flight', await timed(64, async () => { await b.append({ key: { ...Q, partition: `p${seq % 8}` }, items: [item()], dedupWindowMs: 0, now: Date.now() }); return 1; })]);
  const before = { ...b.groupStats };
  rows.push(['append 100/call, 8 in flight', await timed(8, async () => {
    await b.append({ key: { ...Q, partition: 'big' }, items: Array.from({ length: 100 }, item), dedupWindowMs: 0, now: Date.now() });
    return 100;
  })]);
  let lease = 0;
  rows.push(['claim+ack 100/batch, one partition', await timed(4, async () => {
    const leaseId = `L${++lease}`;
    const now = Date.now();
    const [got] = await b.claim({ queue: Q, group: 'g', partition: 'big', maxPartitions: 1, batch: 100, leaseId, leaseMs: 30_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now });
    if (!got) return 0;
    const last = got.messages[got.messages.length - 1]!.offset;
    const r = await b.commitCursor({ key: { ...Q, partition: 'big', group: 'g' }, leaseId, committedOffset: last + 1, retryCount: 0, release: true, now });
    return r.applied ? got.messages.length : 0;
  })]);
  // Wake-up latency across processes: append on one backend, the hint arrives at another's listener (LISTEN/NOTIFY).
  const other = await PgBackend.open({ pool: { connectionString: db.url, max: 2 } });
  const lat: number[] = [];
  try {
    let pending: { at: number; done: () => void } | undefined;
    other.onPartitionsReady((q) => { if (q.queue === 'wake' && pending) { lat.push(performance.now() - pending.at); pending.done(); pending = undefined; } });
    for (let i = 0; i < 200; i++) {
      await new Promise<void>((done) => {
        pending = { at: performance.now(), done };
        void b.append({ key: { ...Q, queue: 'wake', partition: 'p' }, items: [item()], dedupWindowMs: 0, now: Date.now() });
      });
    }
  } finally {
    await other.close();
  }
  lat.sort((x, y) => x - y);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(1);
  console.log('| shape | msg/s |\n|---|---:|');
  for (const [shape, v] of rows) console.log(`| ${shape} | ${v} |`);
  console.log(`\ncross-process wake (append call → hint at another backend's listener), 200 samples: p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`);
  console.log(`group commit: ${before.appends} single appends in ${before.batches} transactions`);
} finally {
  await b.close();
  await db.drop();
}
