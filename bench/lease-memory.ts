/**
 * Lease memory soak: a steady pop+ack load under the default 300 s lease, to show that the
 * broker's memory follows the live leases, not the leases granted over the lease length.
 *
 * Shape: 5 queues × 40 partitions, 3 consumer groups per queue; producers push 5 messages per
 * request at BENCH_PUSH_RPS requests/s (default 200); per (queue, group) two consumers long-poll
 * (batch 50) and ack each batch at once. Runs BENCH_LEASE_SECONDS (default 60) after a 5 s
 * warm-up. The broker process is instrumented by bench/probe.ts (full GC before each reading).
 *
 * Prints heap and RSS after warm-up and at the end, their difference, and the worst event-loop
 * delay (monitorEventLoopDelay) over the run. BENCH_MAIN points at another build's main.js to
 * compare (e.g. before a change).
 *
 * Run: `npm run build && node dist/bench/lease-memory.js`
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAIN, startBroker } from '../test/helpers/broker.js';
import { benchAgent, request } from './http.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.BENCH_LEASE_SECONDS ?? 60);
const PUSH_RPS = Number(process.env.BENCH_PUSH_RPS ?? 200);
const QUEUES = 5;
const PARTITIONS = 40;
const GROUPS = ['g1', 'g2', 'g3'];


interface Probe { heapUsed: number; rss: number; loopMaxMs: number; loopP99Ms: number }

const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

async function main(): Promise<void> {
  const main = process.env.BENCH_MAIN ?? MAIN;
  const b = await startBroker({ main, env: { LOG_LEVEL: 'info', NODE_OPTIONS: `--import=${path.join(here, 'probe.js')}` } });
  const proc = b.proc;
  let err = '';
  const probes: Probe[] = [];
  const waiting: ((p: Probe) => void)[] = [];
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    let i;
    while ((i = err.indexOf('\n')) >= 0) {
      const line = err.slice(0, i);
      err = err.slice(i + 1);
      if (line.startsWith('PROBE ')) {
        const p = JSON.parse(line.slice(6)) as Probe;
        probes.push(p);
        waiting.shift()?.(p);
      } else if (/TimeoutOverflowWarning/.test(line)) {
        overflowWarnings++;
      }
    }
  });
  let overflowWarnings = 0;
  const probe = () => new Promise<Probe>((resolve) => { waiting.push(resolve); proc.kill('SIGUSR2'); });
  const base = b.url; // startBroker returned after /health answered

  let running = true;
  let pushed = 0;
  let acked = 0;
  const queues = Array.from({ length: QUEUES }, (_, i) => `lease-mem-${i}`);
  for (const q of queues) await request(base, 'POST', '/api/v1/configure', { queue: q, options: {} });

  const producer = async () => {
    const every = 1000 / PUSH_RPS;
    let next = performance.now();
    let n = 0;
    const inflight = new Set<Promise<unknown>>();
    while (running) {
      const q = queues[n % QUEUES]!;
      const items = Array.from({ length: 5 }, (_, k) => ({ queue: q, partition: `p${(n * 5 + k) % PARTITIONS}`, payload: { n, k, pad: 'x'.repeat(100) } }));
      n++;
      const p = request(base, 'POST', '/api/v1/push', { items }).then((r) => { if (r.status === 201) pushed += 5; });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
      if (inflight.size > 64) await Promise.race(inflight);
      next += every;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    await Promise.allSettled(inflight);
  };
  const consumer = async (q: string, g: string) => {
    while (running) {
      const r = await request(base, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=${g}&batch=50&wait=true&timeout=1000&subscriptionMode=all`);
      if (r.status !== 200 || !r.body?.messages?.length) continue;
      const acknowledgments = r.body.messages.map((m: any) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' }));
      const a = await request(base, 'POST', '/api/v1/ack/batch', { consumerGroup: g, acknowledgments });
      if (a.status === 200) acked += acknowledgments.length;
    }
  };
  const workers = [producer(), ...queues.flatMap((q) => GROUPS.flatMap((g) => [consumer(q, g), consumer(q, g)]))];

  await new Promise((r) => setTimeout(r, 5000));
  const before = await probe();
  const pushed0 = pushed;
  const acked0 = acked;
  const t0 = performance.now();
  let worstLoop = 0;
  const samples: string[] = [];
  for (let s = 10; s <= SECONDS; s += 10) {
    await new Promise((r) => setTimeout(r, 10_000));
    const p = await probe();
    worstLoop = Math.max(worstLoop, p.loopMaxMs);
    samples.push(`${s}s:${mb(p.heapUsed)}`);
  }
  const after = await probe();
  worstLoop = Math.max(worstLoop, after.loopMaxMs);
  const secs = (performance.now() - t0) / 1000;
  running = false;
  await Promise.allSettled(workers);
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));

  console.log(`lease-memory soak: ${QUEUES} queues × ${PARTITIONS} partitions, ${GROUPS.length} groups, leaseTime 300 s (default), ${secs.toFixed(0)} s after 5 s warm-up`);
  console.log(`  broker: ${main}`);
  console.log(`  pushed ${((pushed - pushed0) / secs).toFixed(0)} msg/s, acked ${((acked - acked0) / secs).toFixed(0)} msg/s (over all groups)`);
  console.log(`  heap after GC: before ${mb(before.heapUsed)} MB, after ${mb(after.heapUsed)} MB, growth ${mb(after.heapUsed - before.heapUsed)} MB (every 10 s: ${samples.join(' ')})`);
  console.log(`  rss: before ${mb(before.rss)} MB, after ${mb(after.rss)} MB`);
  console.log(`  worst event-loop delay during the run: ${worstLoop.toFixed(1)} ms`);
  console.log(`  TimeoutOverflowWarning lines: ${overflowWarnings}`);
  benchAgent.destroy();
}

main().catch((e: unknown) => { console.error(e); process.exit(1); });
