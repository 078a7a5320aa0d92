/**
 * Partition-count rows for `npm run bench`: what a queue of many partitions costs against one of
 * few, in the same broker and run.
 *
 * For a queue of `count` partitions (`p0` … `p<count-1>`, each loaded with one message first):
 * - push of 100 messages per request, each message to a different partition, the requests walking
 *   through all partitions in turn (autocannon, `setupRequest` per request);
 * - push of 1 message per request to a rotating partition;
 * - pop+ack in batches of 100 of 30,000 messages pushed into 10 of the partitions, by a consumer
 *   group that subscribed (`subscriptionMode=new`) after the load, so the other partitions are idle.
 * The broker's RSS (kB, from `/proc/<pid>/status`) is read after loading.
 */
import autocannon from 'autocannon';
import type { BrokerHandle } from '../test/helpers/broker.js';
import { request } from './http.js';
import { rssBytes } from './proc.js';
import type { Row } from './row.js';

/** Pushes one message into each of `count` partitions of `queue`, 1,000 per request. */
async function load(b: BrokerHandle, queue: string, count: number, payload: unknown): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const items = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({ queue, partition: `p${start + i}`, payload }));
    const r = await request(b.url, 'POST', '/api/v1/push', { items });
    if (r.status !== 201) throw new Error(`partition load failed: ${r.status}`);
  }
}

/** autocannon push with a body made per request: `batch` items to consecutive partitions mod `count`. */
async function rotatingPush(b: BrokerHandle, queue: string, count: number, batch: number, connections: number, seconds: number, payload: unknown): Promise<autocannon.Result> {
  let next = 0;
  const r = await autocannon({
    url: b.url, connections, duration: seconds,
    requests: [{
      method: 'POST', path: '/api/v1/push', headers: { 'content-type': 'application/json' },
      setupRequest: (req) => {
        const items = Array.from({ length: batch }, () => ({ queue, partition: `p${next++ % count}`, payload }));
        return { ...req, body: JSON.stringify({ items }) };
      },
    }],
  });
  if (r.non2xx > 0) throw new Error(`partition push: ${r.non2xx} non-2xx answers`);
  return r;
}

/** The three rows for a queue of `count` partitions, and the broker's RSS (bytes) after the load. */
export async function benchPartitions(b: BrokerHandle, count: number, payload: unknown, seconds: number): Promise<{ rows: Row[]; rss: number }> {
  const queue = `bench-parts-${count}`;
  await load(b, queue, count, payload);
  const rss = rssBytes(b.proc.pid);
  // pop+ack of 30,000 messages in 10 partitions by a group that subscribed after the load, so the
  // other partitions are idle for it: what they cost a consumer.
  const group = `bench-${count}`;
  const sub = await request(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=1&consumerGroup=${group}&subscriptionMode=new`);
  if (sub.status !== 204) throw new Error(`partition subscribe: ${sub.status}`);
  const target = 30_000;
  for (let sent = 0; sent < target; sent += 1000) {
    const items = Array.from({ length: 1000 }, (_, i) => ({ queue, partition: `p${i % 10}`, payload }));
    const r = await request(b.url, 'POST', '/api/v1/push', { items });
    if (r.status !== 201) throw new Error(`partition fill failed: ${r.status}`);
  }
  const lat: number[] = [];
  let consumed = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (;;) {
      const t0 = performance.now();
      const p = await request(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=100&consumerGroup=${group}&subscriptionMode=new`);
      if (p.status === 204) return;
      const msgs = p.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const last = msgs[msgs.length - 1]!;
      const a = await request(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId, consumerGroup: group });
      if (a.status !== 200) throw new Error(`partition ack failed: ${a.status}`);
      lat.push(performance.now() - t0);
      consumed += msgs.length;
    }
  }));
  const secs = (performance.now() - started) / 1000;
  if (consumed !== target) throw new Error(`partition pop+ack consumed ${consumed} of ${target}`);
  lat.sort((x, y) => x - y);
  const pick = (p: number) => lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]! : 0;
  const rows: Row[] = [];
  rows.push({ shape: `pop+ack (batch 100), queue of ${count} partitions`, messages: consumed, batch: 100, concurrency: 8, msgPerSec: consumed / secs, reqPerSec: 0, p50: pick(50), p99: pick(99), note: '10 busy partitions, the rest idle' });

  const p100 = await rotatingPush(b, queue, count, 100, 8, seconds, payload);
  rows.push({ shape: `push 100/request over 100 partitions, queue of ${count} partitions`, messages: p100.requests.total * 100, batch: 100, concurrency: 8, msgPerSec: p100.requests.average * 100, reqPerSec: p100.requests.average, p50: p100.latency.p50, p99: p100.latency.p99 });
  const p1 = await rotatingPush(b, queue, count, 1, 32, seconds, payload);
  rows.push({ shape: `push 1/request, queue of ${count} partitions`, messages: p1.requests.total, batch: 1, concurrency: 32, msgPerSec: p1.requests.average, reqPerSec: p1.requests.average, p50: p1.latency.p50, p99: p1.latency.p99 });
  return { rows, rss };
}
