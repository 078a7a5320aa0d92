/**
 * `npm run bench`: throughput and latency of the broker on loopback, printed as a Markdown table
 * with the shape of each run (messages, batch size, concurrency) and, where it helps, the ratio
 * to a bare Node HTTP server answering the same requests (the ceiling of HTTP on this machine).
 *
 * Shapes: push 1/request and 100/request (autocannon), `queenctl push` of 100,000 NDJSON lines
 * (the CLI as a subprocess, its default batch of 100, 8 requests in flight; compared with push
 * 100/request of the same run), pop+ack (workers popping batches and
 * acking them), fan-out (one push stream, N consumer groups), long-poll wake-up latency (push →
 * delivery), and the same push and pop+ack with JWT (HS256, RS256) and on an encrypted queue as
 * ratios to the plain run; Kafka port rows (kafkajs produce in batches of 100, a kafkajs consumer
 * group) against the same broker, as ratios to HTTP push 100/request and pop+ack.
 * Ephemeral (RAM-only) push and pop+ack next to their durable rows, as
 * multiples of them and of a bare node:http server (docs/ephemeral.md#benchmarks); the durable and
 * ephemeral pop+ack (batch 100) rows drain for BENCH_SECONDS from fills sized to last that long;
 * push and pop+ack through the embedded proxy with an API key,
 * TLS off and on, as ratios to the same broker's PORT measured in the same run (docs/proxy.md).
 *
 * Reference rows (`reference`): RabbitMQ persistent publish with confirms per 100 and consume with
 * manual ack, BullMQ addBulk and worker on the local Redis (bench/reference-mq.ts), each with the
 * multiple Queen-TS reaches over it in the same run. Partition rows (`partitions`): a queue of
 * 100,000 partitions against one of 10 on fresh brokers, with RSS per idle partition
 * (bench/partitions.ts).
 *
 * PostgreSQL rows (`postgres`, bench/pg-rows.ts): the same push and pop+ack shapes on the
 * PostgreSQL backend next to the SQLite rows, the wake-up latency across two nodes, 1 node against
 * 2 on one database; skipped with a line when no server answers. PostgreSQL partition rows
 * (`pgpartitions`, also run with `postgres`; bench/pg-partitions.ts): the same busy work on a queue
 * of 100 partitions and on one of 100,000 whose other partitions are idle.
 *
 * Idle row (`rss`): the RSS of a freshly booted SQLite broker with nothing to do (several boots of
 * one build or more, alternating: bench/idle-rss.ts). Broker CPU per
 * message (load-independent, for before/after comparisons on a shared machine): bench/cpu.ts.
 *
 * Env: BENCH_SECONDS (default 5) per autocannon run; BENCH_ONLY=name,name to pick shapes.
 */
import autocannon from 'autocannon';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import os from 'node:os';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT, importPKCS8 } from 'jose';
import { startBroker, tempDir, type BrokerHandle } from '../test/helpers/broker.js';
import { CLI } from '../test/cli/run.js';
import { startKafkaBroker } from '../test/kafka/helpers.js';
import { benchAgent, benchTlsAgent, field, request, requestText } from './http.js';
import { benchProxy } from './proxy.js';
import { benchKafkaConsume, benchKafkaProduce } from './kafka.js';
import { benchPartitions } from './partitions.js';
import { cpuSeconds, rssBytes } from './proc.js';
import { benchBullMQ, benchRabbitConsume, benchRabbitPublish } from './reference-mq.js';
import { benchPostgres } from './pg-rows.js';
import { benchPgPartitions } from './pg-partitions.js';
import type { Row } from './row.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
const PAYLOAD = { orderId: 12345, customer: 'c-0042', amount: 99.95, items: ['a', 'b', 'c'], note: 'x'.repeat(120) };
const PAYLOAD_BYTES = Buffer.byteLength(JSON.stringify(PAYLOAD));

const rows: Row[] = [];
const want = (name: string) => ONLY.length === 0 || ONLY.includes(name);


/** Sets the row's broker CPU per message from two {@link cpuSeconds} readings. */
function withCpu(row: Row, cpu0: number, cpu1: number): Row {
  if (cpu1 > cpu0 && row.messages > 0) {
    row.cpuUsPerMsg = ((cpu1 - cpu0) * 1e6) / row.messages;
    row.note = `${row.note ? `${row.note}; ` : ''}broker CPU ${row.cpuUsPerMsg.toFixed(1)} µs/msg`;
  }
  return row;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function cannon(url: string, path: string, body: unknown, connections: number, headers: Record<string, string> = {}): Promise<autocannon.Result> {
  return autocannon({
    url: url + path, method: 'POST', connections, duration: SECONDS, body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

function pushBody(queue: string, n: number, partitions: number) {
  return { items: Array.from({ length: n }, (_, i) => ({ queue, partition: `p${i % partitions}`, payload: PAYLOAD })) };
}

async function benchPush(b: BrokerHandle, shape: string, batch: number, connections: number, headers: Record<string, string> = {}, queue = `bench-push-${batch}`): Promise<Row> {
  await autocannon({ url: b.url + '/api/v1/push', method: 'POST', connections, duration: 1, body: JSON.stringify(pushBody(queue, batch, 16)), headers: { 'content-type': 'application/json', ...headers } }); // warm-up (JIT, caches)
  const cpu0 = cpuSeconds(b.proc.pid);
  const client0 = process.cpuUsage();
  const r = await cannon(b.url, '/api/v1/push', pushBody(queue, batch, 16), connections, headers);
  const client = process.cpuUsage(client0);
  const cpu1 = cpuSeconds(b.proc.pid);
  if (r.non2xx > 0) throw new Error(`${shape}: ${r.non2xx} non-2xx answers`);
  const reqs = r.requests.average;
  const clientCpuUsPerReq = r.requests.total > 0 ? (client.user + client.system) / r.requests.total : undefined;
  return withCpu({ shape, messages: r.requests.total * batch, batch, concurrency: connections, msgPerSec: reqs * batch, reqPerSec: reqs, p50: r.latency.p50, p99: r.latency.p99, clientCpuUsPerReq }, cpu0, cpu1);
}


/**
 * Fills `queue` with `total` messages, then lets `workers` pop batches and ack them until it is
 * empty or `seconds` have passed; measures consumed msg/s over the drain (the fill is not timed).
 * Like the ephemeral pop+ack client, it reads the ack's fields out of the answer text instead of
 * parsing it: on a 2-core machine the client shares the CPU with the broker.
 */
async function benchPopAck(b: BrokerHandle, shape: string, queue: string, total: number, batch: number, workers: number, headers: Record<string, string> = {}, group?: string, fillBatch = 1000, seconds = Infinity): Promise<Row> {
  const partitions = workers * 2;
  for (let sent = 0; sent < total; sent += fillBatch) {
    const r = await request(b.url, 'POST', '/api/v1/push', pushBody(queue, Math.min(fillBatch, total - sent), partitions), headers);
    if (r.status !== 201) throw new Error(`fill failed: ${r.status}`);
  }
  const lat: number[] = [];
  let consumed = 0;
  let requests = 0;
  const cpu0 = cpuSeconds(b.proc.pid);
  const started = performance.now();
  const until = started + seconds * 1000;
  const g = group ? `&consumerGroup=${group}&subscriptionMode=all` : '';
  await Promise.all(Array.from({ length: workers }, async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      const p = await requestText(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=${batch}${g}`, undefined, headers);
      if (p.status === 204) return;
      if (p.status !== 200) throw new Error(`pop: ${p.status} ${p.text}`);
      // The batch's partition and lease are answered at the top level; the last transactionId in the text is the last message's.
      const count = p.text.split('"transactionId":"').length - 1;
      const a = await request(b.url, 'POST', '/api/v1/ack', { transactionId: field(p.text, 'transactionId', true), partitionId: field(p.text, 'partitionId'), leaseId: field(p.text, 'leaseId'), consumerGroup: group ?? null }, headers);
      if (a.status !== 200 || !a.body[0].success) throw new Error(`ack failed: ${JSON.stringify(a.body)}`);
      lat.push(performance.now() - t0);
      consumed += count;
      requests += 2;
    }
  }));
  const secs = (performance.now() - started) / 1000;
  lat.sort((x, y) => x - y);
  return withCpu({ shape, messages: consumed, batch, concurrency: workers, msgPerSec: consumed / secs, reqPerSec: requests / secs, p50: pct(lat, 50), p99: pct(lat, 99), note: 'latency = pop + ack round trip' }, cpu0, cpuSeconds(b.proc.pid));
}

/** Messages the ephemeral push queue keeps (`dropOldest` evicts the oldest beyond), so memory stays flat however fast it goes. */
const EPH_PUSH_KEEP = 200_000;
/** Ephemeral pop+ack fill per BENCH_SECONDS: enough that the drain runs the whole time at well over 3× the durable rate. */
const EPH_FILL_PER_SECOND = 150_000;
/** Durable pop+ack (batch 100) fill per BENCH_SECONDS, for the same reason. */
const FILL_PER_SECOND = 40_000;

/**
 * Ephemeral push: autocannon for BENCH_SECONDS, `batch` messages per request (RAM only, nothing
 * fsynced), the same body shape and payload as the durable push rows. The queue is declared
 * `dropOldest` with `maxLength` {@link EPH_PUSH_KEEP}, so no consumer competes for the CPU and
 * memory stays bounded; the declaration is removed afterwards.
 */
async function benchEphemeralPush(b: BrokerHandle, batch: number, connections: number): Promise<Row> {
  const queue = `bench-eph-push-${batch}`;
  const cfg = await request(b.url, 'POST', '/api/v1/ephemeral/configure', { queue, options: { maxLength: EPH_PUSH_KEEP, policy: 'dropOldest' } });
  if (cfg.status !== 201) throw new Error(`ephemeral configure: ${cfg.status} ${JSON.stringify(cfg.body)}`);
  const body = { queue, messages: Array.from({ length: batch }, () => ({ payload: PAYLOAD })) };
  try {
    await autocannon({ url: b.url + '/api/v1/ephemeral/push', method: 'POST', connections, duration: 1, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }); // warm-up, as for push
    const cpu0 = cpuSeconds(b.proc.pid);
    const r = await cannon(b.url, '/api/v1/ephemeral/push', body, connections);
    const cpu1 = cpuSeconds(b.proc.pid);
    if (r.non2xx > 0) throw new Error(`ephemeral push: ${r.non2xx} non-2xx answers`);
    const reqs = r.requests.average;
    return withCpu({ shape: `ephemeral push ${batch}/request`, messages: r.requests.total * batch, batch, concurrency: connections, msgPerSec: reqs * batch, reqPerSec: reqs, p50: r.latency.p50, p99: r.latency.p99 }, cpu0, cpu1);
  } finally {
    await request(b.url, 'DELETE', `/api/v1/ephemeral/queue/${queue}`);
  }
}

/**
 * Ephemeral pop+ack: fills BENCH_SECONDS × {@link EPH_FILL_PER_SECOND} messages over 16
 * partitions (not timed), then `workers` pop batches and ack every id until the queue is empty or
 * BENCH_SECONDS have passed. The client reads ids out of the answer text and writes the ack body
 * as text: on a 2-core machine the client shares the CPU with the broker, and parsing each answer
 * would measure the client.
 */
async function benchEphemeralPopAck(b: BrokerHandle, batch: number, workers: number): Promise<Row> {
  const queue = 'bench-eph-popack';
  const total = Math.round(SECONDS * EPH_FILL_PER_SECOND);
  const fill = `{"queue":"${queue}","partition":"P","messages":[${Array.from({ length: 1000 }, () => `{"payload":${JSON.stringify(PAYLOAD)}}`).join(',')}]}`;
  for (let sent = 0; sent < total; sent += 1000) {
    const r = await requestText(b.url, 'POST', '/api/v1/ephemeral/push', fill.replace('"P"', `"p${(sent / 1000) % (workers * 2)}"`));
    if (r.status !== 201) throw new Error(`ephemeral fill failed: ${r.status} ${r.text}`);
  }
  const lat: number[] = [];
  let consumed = 0;
  let requests = 0;
  const cpu0 = cpuSeconds(b.proc.pid);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const ids = /"id":"(e:[^"]+)"/g;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      const p = await requestText(b.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&batch=${batch}`);
      if (p.status !== 200) throw new Error(`ephemeral pop: ${p.status} ${p.text}`);
      let acks = '';
      let n = 0;
      for (const m of p.text.matchAll(ids)) acks += `${n++ === 0 ? '' : ','}{"id":"${m[1]!}","status":"completed"}`;
      if (n === 0) return;
      const a = await requestText(b.url, 'POST', '/api/v1/ephemeral/ack', `{"queue":"${queue}","acks":[${acks}]}`);
      if (a.status !== 200 || a.text.split('"outcome":"acked"').length - 1 !== n) throw new Error(`ephemeral ack failed: ${a.text}`);
      lat.push(performance.now() - t0);
      consumed += n;
      requests += 2;
    }
  }));
  const secs = (performance.now() - started) / 1000;
  const cpu1 = cpuSeconds(b.proc.pid);
  await request(b.url, 'DELETE', `/api/v1/ephemeral/queue/${queue}`);
  lat.sort((x, y) => x - y);
  return withCpu({ shape: `ephemeral pop+ack (batch ${batch})`, messages: consumed, batch, concurrency: workers, msgPerSec: consumed / secs, reqPerSec: requests / secs, p50: pct(lat, 50), p99: pct(lat, 99), note: `latency = pop + ack round trip; drained ${consumed} of ${total} in ${secs.toFixed(1)} s` }, cpu0, cpu1);
}

/** `row`'s throughput as a multiple of the durable row `shape` of the same run. */
function versus(row: Row, shape: string): Row {
  const base = rows.find((r) => r.shape === shape);
  if (!base) return row;
  row.note = `${row.note ? `${row.note}; ` : ''}${(row.msgPerSec / base.msgPerSec).toFixed(1)}× ${shape}`;
  if (row.cpuUsPerMsg && base.cpuUsPerMsg) row.note += ` (${(base.cpuUsPerMsg / row.cpuUsPerMsg).toFixed(1)}× less broker CPU per message)`;
  return row;
}

/** One parked consumer per round; time from the push request leaving to the delivery arriving. */
async function benchWakeup(b: BrokerHandle, rounds: number): Promise<Row> {
  const lat: number[] = [];
  const queue = 'bench-wake';
  for (let i = 0; i < rounds; i++) {
    const waiting = request(b.url, 'GET', `/api/v1/pop/queue/${queue}?wait=true&timeout=10000&autoAck=true`);
    await new Promise((r) => setTimeout(r, 5));
    const t0 = performance.now();
    void request(b.url, 'POST', '/api/v1/push', { items: [{ queue, payload: PAYLOAD }] });
    const got = await waiting;
    if (got.status !== 200) throw new Error(`wake-up round ${i}: ${got.status}`);
    lat.push(performance.now() - t0);
  }
  lat.sort((x, y) => x - y);
  return { shape: 'long-poll wake-up (push → delivery)', messages: rounds, batch: 1, concurrency: 1, msgPerSec: 0, reqPerSec: 0, p50: pct(lat, 50), p99: pct(lat, 99) };
}

/** One producer stream; `groups` consumer groups each drain everything. Deliveries/s across groups. */
async function benchFanout(b: BrokerHandle, groups: number, total: number): Promise<Row> {
  const queue = 'bench-fanout';
  const started = performance.now();
  const lat: number[] = [];
  let delivered = 0;
  const producer = (async () => {
    for (let sent = 0; sent < total; sent += 100) await request(b.url, 'POST', '/api/v1/push', pushBody(queue, 100, 8));
  })();
  await Promise.all(Array.from({ length: groups }, async (_, gi) => {
    let got = 0;
    while (got < total) {
      const t0 = performance.now();
      const p = await request(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=200&partitions=8&wait=true&timeout=2000&consumerGroup=g${gi}&subscriptionMode=all`);
      if (p.status === 204) continue;
      const msgs = p.body.messages as any[];
      const lastPer = new Map<string, any>();
      for (const m of msgs) lastPer.set(m.partitionId, m);
      await request(b.url, 'POST', '/api/v1/ack/batch', { consumerGroup: `g${gi}`, acknowledgments: [...lastPer.values()].map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId })) });
      lat.push(performance.now() - t0);
      got += msgs.length;
      delivered += msgs.length;
    }
  }));
  await producer;
  const secs = (performance.now() - started) / 1000;
  lat.sort((x, y) => x - y);
  return { shape: `fan-out to ${groups} consumer groups`, messages: delivered, batch: 200, concurrency: groups, msgPerSec: delivered / secs, reqPerSec: 0, p50: pct(lat, 50), p99: pct(lat, 99), note: 'deliveries/s summed over groups' };
}

/**
 * `queenctl push` of `lines` NDJSON lines from a file over 16 partitions (`--partition-key`), as
 * an operator would run it: process start to exit, msg/s over the whole run.
 */
async function benchCliPush(b: BrokerHandle, lines: number, concurrency: number): Promise<Row> {
  const file = path.join(tempDir('queenctl-bench-'), 'lines.ndjson');
  fs.writeFileSync(file, Array.from({ length: lines }, (_, i) => JSON.stringify({ ...PAYLOAD, key: `p${i % 16}` })).join('\n'));
  const queue = 'bench-queenctl';
  const t0 = performance.now();
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, '--server', b.url, 'push', queue, '-f', file, '--partition-key', 'key', '--concurrency', String(concurrency)], { env: { PATH: process.env.PATH ?? '', HOME: tempDir('queenctl-home-') } });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`queenctl push exited ${code}: ${text}`))));
  });
  const secs = (performance.now() - t0) / 1000;
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  if (out.trim() !== `queued=${lines} duplicate=0 failed=0`) throw new Error(`queenctl push: ${out}`);
  return { shape: 'queenctl push (NDJSON file)', messages: lines, batch: 100, concurrency, msgPerSec: lines / secs, reqPerSec: lines / 100 / secs, p50: 0, p99: 0 };
}

/** The bare node:http server (bench/bare-http.ts) in a process of its own; resolves once it listens. */
async function bareServer(): Promise<{ url: string; pid: number | undefined; close: () => void }> {
  const child = spawn(process.execPath, [path.join(path.dirname(fileURLToPath(import.meta.url)), 'bare-http.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`bare node:http server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, close: () => child.kill('SIGTERM') };
}

/** Autocannon against the bare server, with its CPU µs per request, as a note fragment. */
async function ceilingOf(bare: { url: string; pid: number | undefined }, path: string, body: unknown, connections: number, ours: Row): Promise<string> {
  const cpu0 = cpuSeconds(bare.pid);
  const r = await cannon(bare.url, path, body, connections);
  const cpu1 = cpuSeconds(bare.pid);
  const us = cpu1 > cpu0 ? ` at ${(((cpu1 - cpu0) * 1e6) / r.requests.total).toFixed(1)} µs CPU/req` : '';
  return `${(ours.reqPerSec / r.requests.average * 100).toFixed(0)}% of bare node:http (${r.requests.average.toFixed(0)} req/s${us})`;
}

async function token(alg: 'HS256' | 'RS256', key: Uint8Array | CryptoKey): Promise<string> {
  return new SignJWT({ role: 'read-write', sub: 'bench' }).setProtectedHeader({ alg }).setIssuedAt().setExpirationTime('1h').sign(key);
}

async function main(): Promise<void> {
  const bare = await bareServer();
  // The Kafka port is on for the plain broker so its rows compare with HTTP on one process.
  // Ephemeral ceilings raised so the ephemeral rows measure the engine, not its bounds or rate limit.
  const plain = await startKafkaBroker({ env: {
    LOG_LEVEL: 'info', QUEEN_EPHEMERAL_RATE: '100000000', QUEEN_EPHEMERAL_BURST: '100000000', QUEEN_EPHEMERAL_QUEUE_MAX_LENGTH: '10000000',
    QUEEN_EPHEMERAL_QUEUE_MAX_BYTES: '1073741824', QUEEN_EPHEMERAL_MAX_BYTES: '1073741824',
  } });
  try {
    if (want('push')) {
      for (const [batch, conns] of [[1, 32], [100, 8]] as const) {
        const ours = await benchPush(plain, `push ${batch}/request`, batch, conns);
        ours.note = `${await ceilingOf(bare, '/api/v1/push', pushBody('q', batch, 16), conns, ours)}${ours.note ? `; ${ours.note}` : ''}`;
        rows.push(ours);
      }
    }
    if (want('cli')) {
      const row = await benchCliPush(plain, 100_000, 8);
      const base = rows.find((r) => r.shape === 'push 100/request');
      row.note = `whole run incl. process start${base ? `; ${(row.msgPerSec / base.msgPerSec * 100).toFixed(0)}% of push 100/request` : ''}`;
      rows.push(row);
    }
    if (want('popack')) {
      const total = Math.round(SECONDS * FILL_PER_SECOND);
      const row = await benchPopAck(plain, 'pop+ack (batch 100)', 'bench-popack', total, 100, 8, {}, undefined, 1000, SECONDS);
      row.note = `${row.note}; drained ${row.messages} of ${total}`;
      rows.push(row);
    }
    if (want('popack1')) rows.push(await benchPopAck(plain, 'pop+ack (batch 1)', 'bench-popack1', 5_000, 1, 16));
    if (want('ephemeral')) {
      for (const [batch, conns] of [[1, 32], [100, 8]] as const) {
        const row = versus(await benchEphemeralPush(plain, batch, conns), `push ${batch}/request`);
        // The HTTP ceiling for the same request count: a bare node:http answering the ephemeral body.
        row.note = `${row.note}; ${await ceilingOf(bare, '/api/v1/ephemeral/push', { queue: 'q', messages: Array.from({ length: batch }, () => ({ payload: PAYLOAD })) }, conns, row)}`;
        rows.push(row);
      }
      rows.push(versus(await benchEphemeralPopAck(plain, 100, 8), 'pop+ack (batch 100)'));
    }
    if (want('fanout')) rows.push(await benchFanout(plain, 4, 20_000));
    if (want('wakeup')) rows.push(await benchWakeup(plain, 300));
    if (want('kafka')) {
      const produce = await benchKafkaProduce(plain.bootstrap, PAYLOAD, 100, 8, SECONDS);
      const httpPush = rows.find((r) => r.shape === 'push 100/request');
      if (httpPush) produce.note = `${(produce.msgPerSec / httpPush.msgPerSec * 100).toFixed(0)}% of HTTP push 100/request`;
      rows.push(produce);
      const consume = await benchKafkaConsume(plain.bootstrap, PAYLOAD, 30_000, 4);
      const httpPop = rows.find((r) => r.shape === 'pop+ack (batch 100)');
      if (httpPop) consume.note = `${(consume.msgPerSec / httpPop.msgPerSec * 100).toFixed(0)}% of HTTP pop+ack (batch 100); ${consume.note}`;
      rows.push(consume);
    }
  } finally {
    await plain.stop();
  }

  if (want('postgres')) rows.push(...await benchPostgres(rows, PAYLOAD, SECONDS));
  if (want('postgres') || want('pgpartitions')) rows.push(...await benchPgPartitions(PAYLOAD));

  if (want('reference')) {
    /** `ours` as a multiple of the reference row, in the reference row's note. */
    const against = (ref: Row, ours: string) => {
      const o = rows.find((r) => r.shape === ours);
      if (o) ref.note = `${ref.note}; ${ours} is ${(o.msgPerSec / ref.msgPerSec).toFixed(1)}× this`;
      return ref;
    };
    try {
      rows.push(against(await benchRabbitPublish(PAYLOAD, 100, 8, SECONDS), 'push 100/request'));
      rows.push(against(await benchRabbitConsume(PAYLOAD, 30_000, 100, 8), 'pop+ack (batch 100)'));
    } catch (e) {
      rows.push({ shape: 'RabbitMQ', messages: 0, batch: 0, concurrency: 0, msgPerSec: 0, reqPerSec: 0, p50: 0, p99: 0, note: `not measured: ${(e as Error).message}` });
    }
    try {
      const [add, proc] = await benchBullMQ(PAYLOAD, 100, 8, 8, SECONDS);
      rows.push(against(add!, 'push 100/request'), against(proc!, 'pop+ack (batch 100)'));
    } catch (e) {
      rows.push({ shape: 'BullMQ', messages: 0, batch: 0, concurrency: 0, msgPerSec: 0, reqPerSec: 0, p50: 0, p99: 0, note: `not measured: ${(e as Error).message}` });
    }
  }

  if (want('rss')) {
    // A freshly booted SQLite broker with nothing to do: RSS once boot work has settled (issue target ≤ 80 MB).
    const b = await startBroker({ env: { LOG_LEVEL: 'info' } });
    try {
      await new Promise((r) => setTimeout(r, 1000));
      const rss = rssBytes(b.proc.pid);
      rows.push({ shape: 'idle RSS (fresh broker, SQLite)', messages: 0, batch: 0, concurrency: 0, msgPerSec: 0, reqPerSec: 0, p50: 0, p99: 0, note: `${(rss / 2 ** 20).toFixed(1)} MiB = ${(rss / 1e6).toFixed(1)} MB (VmRSS)` });
    } finally {
      await b.stop();
    }
  }

  if (want('partitions')) {
    const results: { count: number; rows: Row[]; rss: number; idle: number }[] = [];
    for (const count of [10, 100_000]) {
      const b = await startBroker({ env: { LOG_LEVEL: 'info' } });
      try {
        const idle = rssBytes(b.proc.pid);
        const r = await benchPartitions(b, count, PAYLOAD, SECONDS);
        results.push({ count, idle, ...r });
      } finally {
        await b.stop();
      }
    }
    const [few, many] = results as [typeof results[0], typeof results[0]];
    many.rows.forEach((row, i) => {
      row.note = `${row.note ? `${row.note}; ` : ''}${(row.msgPerSec / few.rows[i]!.msgPerSec).toFixed(2)}× ${few.count} partitions (p99 ${(row.p99 / Math.max(few.rows[i]!.p99, 0.1)).toFixed(1)}×)`;
    });
    const perPartition = ((many.rss - many.idle) - (few.rss - few.idle)) / (many.count - few.count);
    many.rows[0]!.note += `; RSS after loading 1 message per partition ${(many.rss / 2 ** 20).toFixed(0)} MB vs ${(few.rss / 2 ** 20).toFixed(0)} MB (${(many.rss / few.rss).toFixed(1)}×), ≈ ${perPartition.toFixed(0)} B per partition`;
    rows.push(...few.rows, ...many.rows);
  }

  if (want('jwt')) {
    const secret = randomBytes(32).toString('hex');
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const rsKey = await importPKCS8(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 'RS256');
    for (const [alg, env, key] of [
      ['HS256', { JWT_ALGORITHM: 'HS256', JWT_SECRET: secret }, new TextEncoder().encode(secret)],
      ['RS256', { JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: pem }, rsKey],
    ] as const) {
      const b = await startBroker({ env: { LOG_LEVEL: 'info', JWT_ENABLED: 'true', ...env } });
      try {
        const h = { authorization: `Bearer ${await token(alg, key)}` };
        const base = rows.find((r) => r.shape === 'push 1/request');
        const p = await benchPush(b, `push 1/request, JWT ${alg}`, 1, 32, h, 'bench-jwt');
        if (base) p.note = `${(p.msgPerSec / base.msgPerSec * 100).toFixed(0)}% of JWT off`;
        rows.push(p);
        const pa = await benchPopAck(b, `pop+ack (batch 100), JWT ${alg}`, 'bench-jwt-pa', 30_000, 100, 8, h);
        const paBase = rows.find((r) => r.shape === 'pop+ack (batch 100)');
        if (paBase) pa.note = `${(pa.msgPerSec / paBase.msgPerSec * 100).toFixed(0)}% of JWT off`;
        rows.push(pa);
      } finally {
        await b.stop();
      }
    }
  }

  if (want('encryption')) {
    const b = await startBroker({ env: { LOG_LEVEL: 'info', QUEEN_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
    try {
      await request(b.url, 'POST', '/api/v1/configure', { queue: 'bench-enc', options: { encryptionEnabled: true } });
      await request(b.url, 'POST', '/api/v1/configure', { queue: 'bench-enc-pa', options: { encryptionEnabled: true } });
      const p = await benchPush(b, 'push 1/request, encrypted queue', 1, 32, {}, 'bench-enc');
      const base = rows.find((r) => r.shape === 'push 1/request');
      if (base) p.note = `${(p.msgPerSec / base.msgPerSec * 100).toFixed(0)}% of a plain queue`;
      rows.push(p);
      const pa = await benchPopAck(b, 'pop+ack (batch 100), encrypted queue', 'bench-enc-pa', 30_000, 100, 8);
      const paBase = rows.find((r) => r.shape === 'pop+ack (batch 100)');
      if (paBase) pa.note = `${(pa.msgPerSec / paBase.msgPerSec * 100).toFixed(0)}% of a plain queue`;
      rows.push(pa);
    } finally {
      await b.stop();
    }
  }
  if (want('proxy')) rows.push(...await benchProxy((b, shape, headers, queue) => benchPush(b, shape, 1, 32, headers, queue),
    (b, shape, headers, queue) => benchPopAck(b, shape, queue, 30_000, 100, 8, headers)));
  bare.close();
  benchAgent.destroy();
  benchTlsAgent.destroy();

  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`\nQueen-TS bench: ${os.cpus().length} × ${cpu}, Node ${process.version}, payload ${PAYLOAD_BYTES} B JSON, ` +
    `${SECONDS} s per autocannon run, SQLite WAL synchronous=FULL (fsync per group commit), PostgreSQL rows on the local server ` +
    '(synchronous_commit=on), loopback.\n');
  console.log('| shape | messages | batch | concurrency | msg/s | req/s | p50 ms | p99 ms | note |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of rows) {
    console.log(`| ${r.shape} | ${r.messages} | ${r.batch} | ${r.concurrency} | ${r.msgPerSec ? r.msgPerSec.toFixed(0) : '–'} | ${r.reqPerSec ? r.reqPerSec.toFixed(0) : '–'} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.note ?? ''} |`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
