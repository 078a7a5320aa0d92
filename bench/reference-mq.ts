/**
 * Reference rows for `npm run bench`: the brokers a team would pick instead of Queen-TS, measured on
 * the same machine in the same run, with the same JSON payload.
 *
 * - RabbitMQ (`amqp://guest:guest@127.0.0.1:5672`, the machine's own server) through `amqplib`: a
 *   durable queue, persistent messages, publisher confirms awaited once per batch (the durable
 *   equivalent of one push of `batch` messages answered 201), and consume with manual ack
 *   (`prefetch` = batch, one cumulative ack per batch, like a Queen pop+ack of a batch).
 * - BullMQ on the local Redis (`127.0.0.1:6379`): `addBulk` of `batch` jobs, then a `Worker` that
 *   processes them (its default of completing each job in Redis).
 *
 * Each function throws when its server is unreachable; the caller turns that into a row note
 * instead of failing the whole bench (a machine without RabbitMQ still benches Queen-TS).
 */
import amqp from 'amqplib';
import { Queue, Worker } from 'bullmq';
import { randomUUID } from 'node:crypto';
import type { Row } from './row.js';

export const RABBITMQ_URL = process.env.BENCH_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const REDIS = { host: process.env.BENCH_REDIS_HOST ?? '127.0.0.1', port: Number(process.env.BENCH_REDIS_PORT ?? 6379) };

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * RabbitMQ persistent publish for `seconds`: `publishers` confirm channels, each publishing `batch`
 * persistent messages and then awaiting their confirms, in a loop. Latency = one batch's publish +
 * confirm, ms.
 */
export async function benchRabbitPublish(payload: unknown, batch: number, publishers: number, seconds: number): Promise<Row> {
  const conn = await amqp.connect(RABBITMQ_URL);
  const queue = `queen-bench-pub-${randomUUID()}`;
  try {
    const setup = await conn.createChannel();
    await setup.assertQueue(queue, { durable: true });
    const body = Buffer.from(JSON.stringify(payload));
    const lat: number[] = [];
    let sent = 0;
    const deadline = performance.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(Array.from({ length: publishers }, async () => {
      const ch = await conn.createConfirmChannel();
      while (performance.now() < deadline) {
        const t0 = performance.now();
        for (let i = 0; i < batch; i++) ch.sendToQueue(queue, body, { persistent: true, contentType: 'application/json' });
        await ch.waitForConfirms();
        lat.push(performance.now() - t0);
        sent += batch;
      }
      await ch.close();
    }));
    const secs = (performance.now() - started) / 1000;
    await setup.deleteQueue(queue);
    await setup.close();
    lat.sort((x, y) => x - y);
    return { shape: `RabbitMQ publish ${batch}/confirm, persistent`, messages: sent, batch, concurrency: publishers, msgPerSec: sent / secs, reqPerSec: sent / batch / secs, p50: pct(lat, 50), p99: pct(lat, 99), note: 'reference; latency = batch publish + confirms' };
  } finally {
    await conn.close();
  }
}

/**
 * RabbitMQ consume + manual ack: fills a durable queue with `total` persistent messages, then
 * `consumers` channels with `prefetch(batch)` ack cumulatively every `batch` deliveries until the
 * queue is drained. Latency is not measured per message (push delivery has no request).
 */
export async function benchRabbitConsume(payload: unknown, total: number, batch: number, consumers: number): Promise<Row> {
  const conn = await amqp.connect(RABBITMQ_URL);
  const queue = `queen-bench-consume-${randomUUID()}`;
  try {
    const fill = await conn.createConfirmChannel();
    await fill.assertQueue(queue, { durable: true });
    const body = Buffer.from(JSON.stringify(payload));
    for (let sent = 0; sent < total; sent += 1000) {
      for (let i = 0; i < Math.min(1000, total - sent); i++) fill.sendToQueue(queue, body, { persistent: true });
      await fill.waitForConfirms();
    }
    let consumed = 0;
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const finish = () => { if (!done) { done = true; resolve(); } };
      for (let c = 0; c < consumers; c++) {
        void (async () => {
          const ch = await conn.createChannel();
          await ch.prefetch(batch);
          let pending = 0;
          await ch.consume(queue, (msg) => {
            if (!msg) return;
            pending++;
            consumed++;
            if (pending >= batch || consumed >= total) {
              ch.ack(msg, true);
              pending = 0;
            }
            if (consumed >= total) finish();
          }, { noAck: false });
        })().catch(reject);
      }
    });
    const secs = (performance.now() - started) / 1000;
    await fill.deleteQueue(queue);
    await fill.close();
    return { shape: `RabbitMQ consume + manual ack (prefetch ${batch})`, messages: consumed, batch, concurrency: consumers, msgPerSec: consumed / secs, reqPerSec: 0, p50: 0, p99: 0, note: 'reference; one cumulative ack per batch' };
  } finally {
    await conn.close();
  }
}

/**
 * BullMQ on Redis: `addBulk` of `batch` jobs from `producers` loops for `seconds` (add row), then a
 * `Worker` with `concurrency` drains what was added (process row). Returns both rows.
 */
export async function benchBullMQ(payload: unknown, batch: number, producers: number, concurrency: number, seconds: number): Promise<Row[]> {
  const name = `queen-bench-${randomUUID()}`;
  const queue = new Queue(name, { connection: REDIS });
  try {
    await queue.waitUntilReady();
    const lat: number[] = [];
    let added = 0;
    const deadline = performance.now() + seconds * 1000;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: producers }, async () => {
      while (performance.now() < deadline) {
        const s = performance.now();
        await queue.addBulk(Array.from({ length: batch }, () => ({ name: 'job', data: payload, opts: { removeOnComplete: true } })));
        lat.push(performance.now() - s);
        added += batch;
      }
    }));
    const addSecs = (performance.now() - t0) / 1000;
    lat.sort((x, y) => x - y);
    const addRow: Row = { shape: `BullMQ addBulk ${batch}`, messages: added, batch, concurrency: producers, msgPerSec: added / addSecs, reqPerSec: added / batch / addSecs, p50: pct(lat, 50), p99: pct(lat, 99), note: 'reference (Redis, no fsync)' };

    let processed = 0;
    const t1 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const worker = new Worker(name, async () => {
        processed++;
        if (processed === added) void worker.close().then(resolve, reject);
      }, { connection: REDIS, concurrency, autorun: true });
      worker.on('error', reject);
    });
    const procSecs = (performance.now() - t1) / 1000;
    const procRow: Row = { shape: 'BullMQ worker process', messages: processed, batch: 1, concurrency, msgPerSec: processed / procSecs, reqPerSec: 0, p50: 0, p99: 0, note: 'reference (Redis, no fsync)' };
    return [addRow, procRow];
  } finally {
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}
