/**
 * Broker CPU per message: a load-independent figure for the push and pop+ack paths, for
 * before/after comparisons on a shared machine where throughput figures move with the load.
 *
 * Starts a fresh broker, warms it up, then sends a fixed number of requests (autocannon
 * `amount`) and reads the broker process's user + system CPU time from `/proc/<pid>/stat`
 * before and after. Prints CPU µs per message and per request for each shape, the idle RSS of the
 * freshly booted broker, and the same CPU figure for a bare `node:http` server (its own process)
 * answering the same push requests.
 *
 * Run: `node dist/bench/cpu.js` (env CPU_REQUESTS, default 20000 requests of 1 and 2000 of 100;
 * CPU_PROF_DIR=dir also writes a `--cpu-prof` profile of each broker into dir; CPU_SHAPES=push1,push100,popack,bare
 * picks shapes; CPU_ENV=K=V,K=V adds broker environment; CPU_MAIN=path runs another build's main.js;
 * CPU_POP_BATCH=n sets the pop batch of popack, default 100, and CPU_POP_MESSAGES its message count, default 30000).
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import os from 'node:os';
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { request } from './http.js';
import { cpuSeconds, rssBytes } from './proc.js';

const PAYLOAD = { orderId: 12345, customer: 'c-0042', amount: 99.95, items: ['a', 'b', 'c'], note: 'x'.repeat(120) };
const REQUESTS = Number(process.env.CPU_REQUESTS ?? 20_000);

/** utime + stime of `pid` in µs. */
const cpuMicros = (pid: number): number => cpuSeconds(pid) * 1e6;

function pushBody(queue: string, n: number) {
  return JSON.stringify({ items: Array.from({ length: n }, (_, i) => ({ queue, partition: `p${i % 16}`, payload: PAYLOAD })) });
}

async function fire(url: string, body: string, amount: number, connections: number): Promise<autocannon.Result> {
  const r = await autocannon({ url: url + '/api/v1/push', method: 'POST', connections, amount, body, headers: { 'content-type': 'application/json' } });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
  return r;
}

/** CPU µs per message of `pid` over `amount` requests of `batch` messages. */
async function measure(pid: number, url: string, batch: number, amount: number, connections: number): Promise<{ us: number; rps: number }> {
  const body = pushBody(`cpu-push-${batch}`, batch);
  await fire(url, body, Math.max(200, amount / 10), connections); // warm-up (JIT)
  const before = cpuMicros(pid);
  const t0 = performance.now();
  await fire(url, body, amount, connections);
  const secs = (performance.now() - t0) / 1000;
  return { us: (cpuMicros(pid) - before) / (amount * batch), rps: amount / secs };
}

/** A bare node:http server in its own process, answering push like bench/run.ts's reference. */
async function bare(): Promise<{ url: string; pid: number; stop: () => void }> {
  const src = `
    const http = require('node:http');
    const s = http.createServer((req, res) => { const c = []; req.on('data', (d) => c.push(d)); req.on('end', () => {
      const b = JSON.parse(Buffer.concat(c).toString() || '{}'); const n = Array.isArray(b.items) ? b.items.length : 1;
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(Array.from({ length: n }, (_, index) => ({ index, message_id: 'x', transaction_id: 'x', queueName: 'q', status: 'queued' }))));
    }); });
    s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', src], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => child.kill() };
}

async function popAckCpu(b: BrokerHandle, pid: number, total: number, batch: number): Promise<number> {
  const queue = 'cpu-popack';
  for (let sent = 0; sent < total; sent += 1000) await request(b.url, 'POST', '/api/v1/push', JSON.parse(pushBody(queue, 1000)));
  const before = cpuMicros(pid);
  let consumed = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (;;) {
      const p = await request(b.url, 'GET', `/api/v1/pop/queue/${queue}?batch=${batch}`);
      if (p.status === 204) return;
      const msgs = p.body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const last = msgs[msgs.length - 1]!;
      await request(b.url, 'POST', '/api/v1/ack', { transactionId: last.transactionId, partitionId: last.partitionId, leaseId: last.leaseId });
      consumed += msgs.length;
    }
  }));
  return (cpuMicros(pid) - before) / consumed;
}

async function main(): Promise<void> {
  const profDir = process.env.CPU_PROF_DIR;
  const env: Record<string, string> = { LOG_LEVEL: 'info' };
  for (const kv of (process.env.CPU_ENV ?? '').split(',').filter(Boolean)) env[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
  const shapes = (process.env.CPU_SHAPES ?? 'push1,push100,popack,bare').split(',');
  const b = await startBroker({ env, main: process.env.CPU_MAIN, nodeArgs: profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [] });
  const pid = b.proc.pid!;
  try {
    await new Promise((r) => setTimeout(r, 1000)); // boot work settles before the idle reading
    const idle = rssBytes(pid);
    console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; idle RSS ${(idle / 2 ** 20).toFixed(1)} MiB`);
    const none = { us: NaN, rps: NaN };
    const p1 = shapes.includes('push1') ? await measure(pid, b.url, 1, REQUESTS, 32) : none;
    const p100 = shapes.includes('push100') ? await measure(pid, b.url, 100, REQUESTS / 10, 8) : none;
    const popBatch = Number(process.env.CPU_POP_BATCH ?? 100);
    const pa = shapes.includes('popack') ? await popAckCpu(b, pid, Number(process.env.CPU_POP_MESSAGES ?? 30_000), popBatch) : NaN;
    let r1 = none, r100 = none;
    if (shapes.includes('bare')) {
      const ref = await bare();
      try {
        r1 = await measure(ref.pid, ref.url, 1, REQUESTS, 32);
        r100 = await measure(ref.pid, ref.url, 100, REQUESTS / 10, 8);
      } finally {
        ref.stop();
      }
    }
    console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
    if (shapes.includes('push1')) console.log(`push 1/request:   broker ${p1.us.toFixed(1)} µs CPU/msg (${p1.rps.toFixed(0)} req/s); bare node:http ${r1.us.toFixed(1)} µs (${r1.rps.toFixed(0)} req/s); CPU ratio ${(r1.us / p1.us).toFixed(2)}`);
    if (shapes.includes('push100')) console.log(`push 100/request: broker ${p100.us.toFixed(2)} µs CPU/msg (${(p100.rps * 100).toFixed(0)} msg/s); bare node:http ${r100.us.toFixed(2)} µs (${(r100.rps * 100).toFixed(0)} msg/s); CPU ratio ${(r100.us / p100.us).toFixed(2)}`);
    if (shapes.includes('popack')) console.log(`pop+ack batch ${popBatch}: broker ${pa.toFixed(2)} µs CPU/msg`);
  } finally {
    await b.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
