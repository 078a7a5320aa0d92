/**
 * PostgreSQL partition-count rows for `npm run bench` (`BENCH_ONLY=pgpartitions`, also run with
 * `postgres`): what idle partitions cost a consumer on the PostgreSQL backend
 * (docs/storage.md#postgresql-backend), the same busy work on a queue of 100 partitions and on
 * one of 100,000, each on a fresh broker and database.
 *
 * Both queues have the same 100 busy partitions holding the same messages (`BENCH_PG_PARTS_MESSAGES`,
 * default 5,000, 50 per partition, pushed again each round), popped in batches of 1 and acked by 8
 * workers until the queue is drained, in rounds that alternate between the two queues. The 100,000-partition queue also has 99,900 idle partitions, each holding one message
 * that the same consumer (queue mode) has already consumed before the busy messages arrive: a
 * long-lived queue keyed by, say, customer, where most keys had work once and went quiet. They are
 * loaded and consumed through the broker (push 1,000 per request, pops of 1,000 partitions with
 * `autoAck`), so their rows are those the broker writes; then their times (activity, last message,
 * message creation) are moved back one hour in the database, as if they had gone quiet an hour
 * ago. The group's watermark is left where the drain's last, empty pop put it: the consumer polled
 * an empty queue just before the busy messages came. (Partitions active within the watermark's
 * two-minute margin are not idle for the claim: it looks at them again.)
 */
import pg from 'pg';
import type { BrokerHandle } from '../test/helpers/broker.js';
import { request } from './http.js';
import { admin, cluster, pct } from './pg-rows.js';
import type { Row } from './row.js';

const BUSY = 100;
const WORKERS = 8;

/**
 * Pushes one message to each of `count` partitions `idle-<i>` of `queue`, consumes them all (queue
 * mode, auto-ack), then moves their times back `ageMs` in the database at `dbUrl`.
 */
export async function loadIdle(b: BrokerHandle, dbUrl: string, queue: string, count: number, ageMs: number, payload: unknown): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const items = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({ queue, partition: `idle-${start + i}`, payload }));
    const r = await request(b.url, 'POST', '/api/v1/push', { items });
    if (r.status !== 201) throw new Error(`idle partition load failed: ${r.status}`);
  }
  let consumed = 0;
  for (;;) {
    const p = await request(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=1000&partitions=1000&autoAck=true`);
    if (p.status === 204) break;
    if (p.status !== 200) throw new Error(`idle partition drain failed: ${p.status}`);
    consumed += (p.body.messages as unknown[]).length;
  }
  if (consumed !== count) throw new Error(`idle partitions: consumed ${consumed} of ${count}`);
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const ids = `SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`;
    const aged = await c.query(`UPDATE queen.partitions SET last_activity_ms = last_activity_ms - $2, last_message_at_ms = last_message_at_ms - $2
                                 WHERE id IN (${ids})`, [queue, ageMs]);
    await c.query(`UPDATE queen.messages SET created_at = created_at - $2 * interval '1 millisecond' WHERE partition_id IN (${ids})`, [queue, ageMs]);
    if (aged.rowCount !== count) throw new Error(`idle partitions: aged ${aged.rowCount} of ${count}`);
    await c.query('VACUUM ANALYZE queen.partitions');
    await c.query('VACUUM ANALYZE queen.messages');
    await c.query('VACUUM ANALYZE queen.consumers');
  } finally {
    await c.end();
  }
}

/** Pushes `messages` over the busy partitions `busy-0` … `busy-99` of `queue`, 1,000 per request. */
export async function fillBusy(b: BrokerHandle, queue: string, messages: number, payload: unknown): Promise<void> {
  for (let sent = 0; sent < messages; sent += 1000) {
    const items = Array.from({ length: Math.min(1000, messages - sent) }, (_, i) => ({ queue, partition: `busy-${(sent + i) % BUSY}`, payload }));
    const r = await request(b.url, 'POST', '/api/v1/push', { items });
    if (r.status !== 201) throw new Error(`busy partition load failed: ${r.status}`);
  }
}

/**
 * Pop (batch 1) + ack by `WORKERS` workers until `queue` answers 204, latencies (ms) added to `lat`;
 * throws unless exactly `messages` came. @returns the seconds it took
 */
export async function drainWide(b: BrokerHandle, queue: string, messages: number, lat: number[]): Promise<number> {
  let consumed = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: WORKERS }, async () => {
    for (;;) {
      const t0 = performance.now();
      const p = await request(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=1`);
      if (p.status === 204) return;
      if (p.status !== 200) throw new Error(`pop failed: ${p.status}`);
      const [m] = p.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const a = await request(b.url, 'POST', '/api/v1/ack', { transactionId: m!.transactionId, partitionId: m!.partitionId, leaseId: m!.leaseId, consumerGroup: null });
      if (a.status !== 200 || !a.body[0].success) throw new Error(`ack failed: ${JSON.stringify(a.body)}`);
      lat.push(performance.now() - t0);
      consumed++;
    }
  }));
  if (consumed !== messages) throw new Error(`${queue}: consumed ${consumed} of ${messages}`);
  return (performance.now() - started) / 1000;
}

/**
 * The two rows (100 and 100,000 partitions), the second with its ratio to the first. Both brokers
 * are loaded first; then `BENCH_PG_PARTS_ROUNDS` rounds (default 3) each push the busy messages
 * into one queue and drain it, then the other, so that the load of a shared machine falls on both
 * alike; each row sums its rounds (messages over seconds).
 */
export async function benchPgPartitions(payload: unknown): Promise<Row[]> {
  try {
    await admin((c) => c.query('SELECT 1'));
  } catch (e) {
    const why = `PostgreSQL partition rows skipped: no server (${(e as Error).message}); set QUEEN_TEST_PG_URL`;
    console.log(why);
    return [{ shape: 'PostgreSQL partitions', messages: 0, batch: 0, concurrency: 0, msgPerSec: 0, reqPerSec: 0, p50: 0, p99: 0, note: why }];
  }
  const messages = Number(process.env.BENCH_PG_PARTS_MESSAGES ?? 5000);
  const rounds = Number(process.env.BENCH_PG_PARTS_ROUNDS ?? 3);
  const counts = [BUSY, 100_000];
  const sets: Awaited<ReturnType<typeof cluster>>[] = [];
  try {
    for (const count of counts) {
      const one = await cluster(1);
      sets.push(one);
      if (count > BUSY) await loadIdle(one.brokers[0]!, one.url, `bench-pg-wide-${count}`, count - BUSY, 3_600_000, payload);
    }
    const lat = counts.map((): number[] => []);
    const secs = counts.map(() => 0);
    const perRound: string[] = [];
    for (let r = 0; r < rounds; r++) {
      const took: number[] = [];
      for (const [i, count] of counts.entries()) {
        const b = sets[i]!.brokers[0]!;
        await fillBusy(b, `bench-pg-wide-${count}`, messages, payload);
        took.push(await drainWide(b, `bench-pg-wide-${count}`, messages, lat[i]!));
        secs[i] = secs[i]! + took[i]!;
      }
      perRound.push((took[0]! / took[1]!).toFixed(2));
    }
    const rows = counts.map((count, i): Row => {
      const l = lat[i]!.sort((x, y) => x - y);
      const idle = count - BUSY;
      return {
        shape: `PostgreSQL pop+ack (batch 1), queue of ${count} partitions`, messages: messages * rounds, batch: 1, concurrency: WORKERS,
        msgPerSec: (messages * rounds) / secs[i]!, reqPerSec: (messages * rounds * 2) / secs[i]!, p50: pct(l, 50), p99: pct(l, 99),
        note: `${BUSY} busy partitions, ${messages / BUSY} messages each per round, ${rounds} rounds${idle > 0 ? `; ${idle} idle ones (one message each, consumed, an hour old)` : ''}`,
      };
    });
    rows[1]!.note += `; ${(rows[1]!.msgPerSec / rows[0]!.msgPerSec).toFixed(2)}× ${BUSY} partitions (per round: ${perRound.join(', ')})`;
    return rows;
  } finally {
    for (const one of sets) await one.stop();
  }
}
