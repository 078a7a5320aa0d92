/**
 * Kafka port shapes for `npm run bench` (docs/kafka.md): kafkajs producers sending batches of 100
 * records (acks=all: each answer after the durable group commit) and a kafkajs consumer group
 * reading a filled topic with auto-commit, run against the same broker as the HTTP rows.
 */
import kafkajs from 'kafkajs';
import type { Row } from './row.js';


const { Kafka, logLevel } = kafkajs;

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function client(bootstrap: string) {
  process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
  return new Kafka({ clientId: 'bench', brokers: [bootstrap], logLevel: logLevel.NOTHING });
}

async function createTopic(bootstrap: string, topic: string, partitions: number): Promise<void> {
  const admin = client(bootstrap).admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] });
  await admin.disconnect();
}

/** `producers` kafkajs producers each sending batches of `batch` records for `seconds`. */
export async function benchKafkaProduce(bootstrap: string, payload: unknown, batch: number, producers: number, seconds: number): Promise<Row> {
  const topic = `bench-kafka-produce-${batch}`;
  await createTopic(bootstrap, topic, 16);
  const value = JSON.stringify(payload);
  const kafka = client(bootstrap);
  const ps = await Promise.all(Array.from({ length: producers }, async () => {
    const p = kafka.producer();
    await p.connect();
    return p;
  }));
  // Explicit partitions, as the HTTP rows name theirs (no key hashing in the client).
  const messages = (i: number) => Array.from({ length: batch }, (_, j) => ({ partition: (i + j) % 16, value }));
  const lat: number[] = [];
  let sent = 0;
  let requests = 0;
  // Warm-up (JIT, metadata).
  await Promise.all(ps.map((p, i) => p.send({ topic, messages: messages(i) })));
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(ps.map(async (p, i) => {
    while (performance.now() < until) {
      const t0 = performance.now();
      await p.send({ topic, messages: messages(i + requests) });
      lat.push(performance.now() - t0);
      sent += batch;
      requests++;
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(ps.map((p) => p.disconnect()));
  lat.sort((a, b) => a - b);
  return { shape: `Kafka produce (kafkajs, ${batch}/request)`, messages: sent, batch, concurrency: producers, msgPerSec: sent / elapsed, reqPerSec: requests / elapsed, p50: pct(lat, 50), p99: pct(lat, 99) };
}

/** Fills a topic with `total` records, then `consumers` kafkajs consumers of one group read it all (auto-commit). */
export async function benchKafkaConsume(bootstrap: string, payload: unknown, total: number, consumers: number): Promise<Row> {
  const topic = 'bench-kafka-consume';
  await createTopic(bootstrap, topic, consumers * 4);
  const kafka = client(bootstrap);
  const p = kafka.producer();
  await p.connect();
  const value = JSON.stringify(payload);
  for (let sent = 0; sent < total; sent += 1000) {
    await p.send({ topic, messages: Array.from({ length: Math.min(1000, total - sent) }, (_, j) => ({ key: `k${(sent + j) % 1000}`, value })) });
  }
  await p.disconnect();
  let seen = 0;
  let batches = 0;
  let started = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const cs = await Promise.all(Array.from({ length: consumers }, async () => {
    const c = kafka.consumer({ groupId: 'bench-kafka', maxWaitTimeInMs: 100 });
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    return c;
  }));
  await Promise.all(cs.map((c) => c.run({
    eachBatch: async ({ batch }) => {
      if (started === 0) started = performance.now();
      seen += batch.messages.length;
      batches++;
      if (seen >= total) done();
    },
  })));
  await finished;
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(cs.map((c) => c.disconnect()));
  return {
    shape: 'Kafka consume (kafkajs group, auto-commit)', messages: seen, batch: Math.round(seen / Math.max(1, batches)), concurrency: consumers,
    msgPerSec: seen / elapsed, reqPerSec: batches / elapsed, p50: 0, p99: 0, note: 'clock starts at the first batch (after the group formed)',
  };
}
