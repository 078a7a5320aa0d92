/**
 * PostgreSQL rows for `npm run bench` (docs/storage.md#postgresql-backend), next to the SQLite
 * rows of the same run: push 1 and 100 per request, pop+ack in batches of 100 and 1, the wake-up
 * latency across two nodes (push on A, a pop parked on B), and the same load on 1 node and split across
 * 2 nodes of one database (the partition-count rows are bench/pg-partitions.ts). Each broker set gets a fresh database on the local server
 * (`QUEEN_TEST_PG_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`); when the server
 * does not answer, one row says so and the rest is skipped.
 */
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { request } from './http.js';
import type { Row } from './row.js';

const ADMIN_URL = process.env.QUEEN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The `p`th percentile of ascending `sorted` (0 when empty). */
export function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `fn` on a connection to the admin database (`QUEEN_TEST_PG_URL`). */
export async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database and `nodes` brokers on it (`env` added to theirs); `stop` stops them and drops it; `url` is the database's. */
export async function cluster(nodes: number, env: Record<string, string> = {}): Promise<{ brokers: BrokerHandle[]; url: string; stop(): Promise<void> }> {
  const name = `queen_bench_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  const brokers: BrokerHandle[] = [];
  const stop = async () => {
    await Promise.all(brokers.map((b) => b.stop()));
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  };
  try {
    for (let i = 0; i < nodes; i++) {
      brokers.push(await startBroker({ env: { LOG_LEVEL: 'info', QUEEN_STORAGE: 'postgres', DATABASE_URL: u.toString(), QUEEN_SERVER_ID: `bench-${name}-${i}`, ...env } }));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { brokers, url: u.toString(), stop };
}

function body(queue: string, n: number, partitions: number, payload: unknown) {
  return { items: Array.from({ length: n }, (_, i) => ({ queue, partition: `p${i % partitions}`, payload })) };
}

/** autocannon push on every broker at once (`connections` each); msg/s summed. */
async function push(brokers: BrokerHandle[], shape: string, batch: number, connections: number, seconds: number, payload: unknown): Promise<Row> {
  const queue = `bench-pg-push-${batch}`;
  const run = (b: BrokerHandle, duration: number) => autocannon({
    url: b.url + '/api/v1/push', method: 'POST', connections, duration, body: JSON.stringify(body(queue, batch, 16, payload)),
    headers: { 'content-type': 'application/json' },
  });
  await Promise.all(brokers.map((b) => run(b, 1))); // warm-up
  const rs = await Promise.all(brokers.map((b) => run(b, seconds)));
  const non2xx = rs.reduce((n, r) => n + r.non2xx, 0);
  if (non2xx > 0) throw new Error(`${shape}: ${non2xx} non-2xx answers`);
  const reqs = rs.reduce((n, r) => n + r.requests.average, 0);
  return {
    shape, messages: rs.reduce((n, r) => n + r.requests.total, 0) * batch, batch, concurrency: connections * brokers.length, msgPerSec: reqs * batch, reqPerSec: reqs,
    p50: Math.max(...rs.map((r) => r.latency.p50)), p99: Math.max(...rs.map((r) => r.latency.p99)),
  };
}

/** Fills `queue` on the first broker, then `workers` (spread over the brokers) pop and ack until it is empty. */
async function popAck(brokers: BrokerHandle[], shape: string, queue: string, total: number, batch: number, workers: number, payload: unknown, partitions = 16): Promise<Row> {
  for (let sent = 0; sent < total; sent += 1000) {
    const r = await request(brokers[0]!.url, 'POST', '/api/v1/push', body(queue, Math.min(1000, total - sent), partitions, payload));
    if (r.status !== 201) throw new Error(`fill failed: ${r.status}`);
  }
  const lat: number[] = [];
  let consumed = 0;
  let requests = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, async (_, w) => {
    const url = brokers[w % brokers.length]!.url;
    for (;;) {
      const t0 = performance.now();
      const p = await request(url, 'GET', `/api/v1/pop/queue/${queue}?batch=${batch}`);
      if (p.status === 204) return;
      const msgs = p.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const last = msgs[msgs.length - 1]!;
      const a = await request(url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId, consumerGroup: null });
      if (a.status !== 200 || !a.body[0].success) throw new Error(`ack failed: ${JSON.stringify(a.body)}`);
      lat.push(performance.now() - t0);
      consumed += msgs.length;
      requests += 2;
    }
  }));
  const secs = (performance.now() - started) / 1000;
  if (consumed !== total) throw new Error(`${shape}: consumed ${consumed} of ${total}`);
  lat.sort((x, y) => x - y);
  return { shape, messages: consumed, batch, concurrency: workers, msgPerSec: consumed / secs, reqPerSec: requests / secs, p50: pct(lat, 50), p99: pct(lat, 99), note: 'latency = pop + ack round trip' };
}

/** A pop parked on `b` (long poll), woken by a push on `a`: time from the push leaving to the delivery. */
async function wakeAcross(a: BrokerHandle, b: BrokerHandle, rounds: number, payload: unknown): Promise<Row> {
  const queue = 'bench-pg-wake';
  await request(a.url, 'POST', '/api/v1/configure', { queue, options: {} });
  const lat: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const waiting = request(b.url, 'GET', `/api/v1/pop/queue/${queue}?wait=true&timeout=10000&autoAck=true`);
    await new Promise((r) => setTimeout(r, 25)); // the pop parks (its first claim finds nothing)
    const t0 = performance.now();
    void request(a.url, 'POST', '/api/v1/push', { items: [{ queue, payload }] });
    const got = await waiting;
    if (got.status !== 200) throw new Error(`wake-up round ${i}: ${got.status}`);
    lat.push(performance.now() - t0);
  }
  lat.sort((x, y) => x - y);
  return { shape: 'PostgreSQL wake-up across nodes (push on A → pop parked on B)', messages: rounds, batch: 1, concurrency: 1, msgPerSec: 0, reqPerSec: 0, p50: pct(lat, 50), p99: pct(lat, 99), note: 'LISTEN/NOTIFY; target p99 ≤ 50 ms' };
}

/**
 * The PostgreSQL rows (see the module comment); `sqlite` are the rows already measured in this run,
 * to which the notes compare.
 */
export async function benchPostgres(sqlite: Row[], payload: unknown, seconds: number): Promise<Row[]> {
  try {
    await admin((c) => c.query('SELECT 1'));
  } catch (e) {
    const why = `PostgreSQL rows skipped: no server at ${new URL(ADMIN_URL).host} (${(e as Error).message}); set QUEEN_TEST_PG_URL`;
    console.log(why);
    return [{ shape: 'PostgreSQL', messages: 0, batch: 0, concurrency: 0, msgPerSec: 0, reqPerSec: 0, p50: 0, p99: 0, note: why }];
  }
  const rows: Row[] = [];
  const vs = (row: Row, shape: string) => {
    const base = sqlite.find((r) => r.shape === shape);
    if (base) row.note = `${row.note ? `${row.note}; ` : ''}${(row.msgPerSec / base.msgPerSec).toFixed(2)}× SQLite ${shape}`;
    return row;
  };
  const two = await cluster(2);
  try {
    const [a, b] = two.brokers as [BrokerHandle, BrokerHandle];
    rows.push(vs(await push([a], 'PostgreSQL push 1/request', 1, 32, seconds, payload), 'push 1/request'));
    rows.push(vs(await push([a], 'PostgreSQL push 100/request', 100, 8, seconds, payload), 'push 100/request'));
    const one = vs(await popAck([a], 'PostgreSQL pop+ack (batch 100)', 'bench-pg-popack', 30_000, 100, 8, payload), 'pop+ack (batch 100)');
    one.note += `; ${(one.msgPerSec / 1100).toFixed(1)}× the reference's 1,100 msg/s (target ≥ 10×)`;
    rows.push(one);
    rows.push(vs(await popAck([a], 'PostgreSQL pop+ack (batch 1)', 'bench-pg-popack1', 5_000, 1, 16, payload), 'pop+ack (batch 1)'));
    rows.push(await wakeAcross(a, b, 300, payload));
    const pushBoth = await push([a, b], 'PostgreSQL 2 nodes: push 100/request', 100, 4, seconds, payload);
    const pushOne = rows.find((r) => r.shape === 'PostgreSQL push 100/request')!;
    pushBoth.note = `4 connections per node; ${(pushBoth.msgPerSec / pushOne.msgPerSec).toFixed(2)}× 1 node with 8`;
    rows.push(pushBoth);
    const both = await popAck([a, b], 'PostgreSQL 2 nodes: pop+ack (batch 100)', 'bench-pg-popack2', 30_000, 100, 8, payload);
    both.note = `4 workers per node; ${(both.msgPerSec / one.msgPerSec).toFixed(2)}× 1 node with 8`;
    rows.push(both);
  } finally {
    await two.stop();
  }
  return rows;
}
