/**
 * Two builds back to back under one load generator: `before` and `after` brokers (each a built
 * `dist/src/main.js`, e.g. from `git worktree add /tmp/before <commit>` and `npx tsc -p tsconfig.json`
 * there) take the same shapes in alternating order, A B B A A B …, so the machine's drift falls on
 * both alike. Each run starts a fresh broker (its own data directory, started the same way for both
 * builds: SQLite, `LOG_LEVEL=info`, no Kafka port, no proxy). Prints, per shape, each pair's msg/s
 * and after/before ratio, the median ratio, and the broker CPU per message (all its threads, /proc).
 *
 * The `npm run bench` drivers of two builds differ (which brokers they start, with which options,
 * and how heavy the driver process is on the shared cores), so comparing each build's own
 * `npm run bench` also compares the drivers; this script holds the driver fixed.
 *
 * Shapes (`COMPARE_SHAPES`, default all): `push1` (autocannon, 32 connections), `push100` (8
 * connections, 100 items over 16 partitions), `push1jwt` (push 1 with JWT HS256 on), `popack`
 * (fill, then 8 workers pop batches of 100 and ack each batch's last message), `popack1` (16
 * workers, batches of 1). Env: `COMPARE_SECONDS` (default 5) per push run after a
 * `COMPARE_WARMUP`-second warm-up (default 3); `COMPARE_FILL` (default 150,000) for popack.
 *
 * Run: `npx tsc -p tsconfig.json && node dist/bench/compare.js <before/main.js> <after/main.js> [pairs=5]`.
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { field, requestText } from './http.js';
import { cpuSeconds } from './proc.js';

const SECONDS = Number(process.env.COMPARE_SECONDS ?? 5);
const WARMUP = Number(process.env.COMPARE_WARMUP ?? 3);
const FILL = Number(process.env.COMPARE_FILL ?? 150_000);
const SHAPES = (process.env.COMPARE_SHAPES ?? 'push1,push100,push1jwt,popack,popack1').split(',').filter(Boolean);
const PAYLOAD = { orderId: 12345, customer: 'c-0042', amount: 99.95, items: ['a', 'b', 'c'], note: 'x'.repeat(120) };
const JWT_SECRET = randomBytes(32).toString('hex');

interface Broker { url: string; proc: ChildProcess; dir: string }

/**
 * Starts `main` on a kernel-chosen loopback port. The port is read from Fastify's
 * `Server listening at http://127.0.0.1:<port>` line, which every build prints (older builds log
 * the configured `PORT`, 0, in their own listening line).
 */
async function start(main: string, env: Record<string, string> = {}): Promise<Broker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-compare-'));
  fs.chmodSync(dir, 0o700);
  const proc = spawn(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', QUEEN_BIND_ADDR: '127.0.0.1', QUEEN_DATA_DIR: dir, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`${main} exited with ${code} before listening:\n${out}`)));
  });
  proc.stdout!.resume();
  return { url: `http://127.0.0.1:${port}`, proc, dir };
}

async function stop(b: Broker): Promise<void> {
  if (b.proc.exitCode === null && b.proc.signalCode === null) {
    const exited = new Promise((r) => b.proc.once('exit', r));
    b.proc.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(b.dir, { recursive: true, force: true });
}

/** One shape's run on a fresh broker of `main`: messages per second and broker CPU µs per message. */
type Measure = (main: string) => Promise<{ msgPerSec: number; cpuUsPerMsg: number }>;

function pushShape(batch: number, connections: number, jwt = false): Measure {
  return async (main) => {
    const b = await start(main, jwt ? { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET } : {});
    try {
      const token = jwt ? await new SignJWT({ role: 'read-write', sub: 'compare' }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(JWT_SECRET)) : undefined;
      const body = JSON.stringify({ items: Array.from({ length: batch }, (_, i) => ({ queue: 'compare', partition: `p${i % 16}`, payload: PAYLOAD })) });
      const opts = { url: `${b.url}/api/v1/push`, method: 'POST' as const, connections, body, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } };
      await autocannon({ ...opts, duration: WARMUP });
      const cpu0 = cpuSeconds(b.proc.pid);
      const r = await autocannon({ ...opts, duration: SECONDS });
      const cpu = cpuSeconds(b.proc.pid) - cpu0;
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`push: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      const messages = r.requests.total * batch;
      return { msgPerSec: messages / SECONDS, cpuUsPerMsg: (cpu * 1e6) / messages };
    } finally {
      await stop(b);
    }
  };
}

function popAckShape(total: number, batch: number, workers: number): Measure {
  return async (main) => {
    const b = await start(main);
    try {
      for (let sent = 0; sent < total; sent += 1000) {
        const items = Array.from({ length: Math.min(1000, total - sent) }, (_, i) => ({ queue: 'compare-pa', partition: `p${i % 16}`, payload: PAYLOAD }));
        const r = await requestText(b.url, 'POST', '/api/v1/push', JSON.stringify({ items }));
        if (r.status !== 201) throw new Error(`fill: ${r.status} ${r.text}`);
      }
      let consumed = 0;
      const cpu0 = cpuSeconds(b.proc.pid);
      const t0 = performance.now();
      await Promise.all(Array.from({ length: workers }, async () => {
        for (;;) {
          const p = await requestText(b.url, 'GET', `/api/v1/pop/queue/compare-pa?batch=${batch}`);
          if (p.status === 204) return;
          if (p.status !== 200) throw new Error(`pop: ${p.status} ${p.text}`);
          const ack = { transactionId: field(p.text, 'transactionId', true), partitionId: field(p.text, 'partitionId'), leaseId: field(p.text, 'leaseId'), consumerGroup: null };
          const a = await requestText(b.url, 'POST', '/api/v1/ack', JSON.stringify(ack));
          if (a.status !== 200) throw new Error(`ack: ${a.status} ${a.text}`);
          consumed += p.text.split('"transactionId":"').length - 1;
        }
      }));
      const secs = (performance.now() - t0) / 1000;
      return { msgPerSec: consumed / secs, cpuUsPerMsg: ((cpuSeconds(b.proc.pid) - cpu0) * 1e6) / consumed };
    } finally {
      await stop(b);
    }
  };
}

const SHAPE_RUNS: Record<string, Measure> = {
  push1: pushShape(1, 32),
  push100: pushShape(100, 8),
  push1jwt: pushShape(1, 32, true),
  popack: popAckShape(FILL, 100, 8),
  popack1: popAckShape(5_000, 1, 16),
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const [before, after, pairsArg] = process.argv.slice(2);
  if (!before || !after) throw new Error('usage: node dist/bench/compare.js <before/main.js> <after/main.js> [pairs]');
  const pairs = Number(pairsArg ?? 5);
  const unknown = SHAPES.filter((s) => !SHAPE_RUNS[s]);
  if (unknown.length > 0) throw new Error(`unknown COMPARE_SHAPES ${unknown.join(', ')}; known: ${Object.keys(SHAPE_RUNS).join(', ')}`);
  console.log(`before ${before}\nafter  ${after}\n${pairs} pairs, order A B B A …, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`);
  const results = new Map<string, { a: number[]; b: number[]; cpuA: number[]; cpuB: number[] }>();
  for (let i = 0; i < pairs; i++) {
    for (const shape of SHAPES) {
      const r = results.get(shape) ?? { a: [], b: [], cpuA: [], cpuB: [] };
      results.set(shape, r);
      for (const which of i % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
        const m = await SHAPE_RUNS[shape]!(which === 'A' ? before : after);
        (which === 'A' ? r.a : r.b).push(m.msgPerSec);
        (which === 'A' ? r.cpuA : r.cpuB).push(m.cpuUsPerMsg);
      }
      console.log(`pair ${i + 1} ${shape}: before ${r.a.at(-1)!.toFixed(0)} msg/s, after ${r.b.at(-1)!.toFixed(0)} msg/s (load ${os.loadavg()[0]!.toFixed(2)})`);
    }
  }
  console.log('\n| shape | pairs | before msg/s (median) | after msg/s (median) | after/before, median of pairs | pair ratios | broker CPU µs/msg before → after (medians) |');
  console.log('|---|---:|---:|---:|---:|---|---|');
  for (const [shape, r] of results) {
    const ratios = r.a.map((x, i) => r.b[i]! / x);
    console.log(`| ${shape} | ${ratios.length} | ${median(r.a).toFixed(0)} | ${median(r.b).toFixed(0)} | ${median(ratios).toFixed(2)} | ${ratios.map((x) => x.toFixed(2)).join(' ')} | ${median(r.cpuA).toFixed(1)} → ${median(r.cpuB).toFixed(1)} |`);
  }
}

main().then(() => process.exit(0), (e: unknown) => {
  console.error(e);
  process.exit(1);
});
