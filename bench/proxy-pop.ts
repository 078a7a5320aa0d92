/**
 * Fixed-work CPU of the pop and the ack of `npm run bench`'s pop+ack rows (batch 100), on the
 * broker's own PORT and through the embedded proxy (API key), in one broker, alternated: per round
 * and target, P partitions of 100 messages each are filled (untimed), then P pops of batch 100
 * (WORKERS at a time; each answer is one partition's 100 messages, leased) and, separately, the P
 * acks; the broker's CPU (user + system, /proc, whole process and main thread) of each phase per
 * message. The order of the targets rotates every round; the medians over the rounds.
 *
 * Targets: `direct` (PORT, default tenant), `direct-tenant` (PORT with `x-queen-tenant` = the
 * proxy's bootstrap tenant: `QUEEN_TENANCY_HEADER=1`, `QUEEN_KV_TRUSTED_PROXY=1`, so the broker
 * does the same work for the same tenant without the proxy), `proxy` (the proxy port, TLS when
 * `POP_TLS=1`).
 *
 * Run: `npx tsc -p tsconfig.json && node dist/bench/proxy-pop.js [rounds]` (default 6), env
 * `POP_PARTITIONS` (default 200), `POP_WORKERS` (default 4), `POP_TLS=1`;
 * `POP_EMPTY=<n>`: n pops of an empty queue per run instead (the proxy's cost per pop request);
 * `POP_DRAIN=<n>`: the bench row's shape instead (n messages, 16 partitions, 8 workers, pop and ack in turn);
 * `POP_BASELINE=<other build>/dist/src/main.js`: a second broker of that build, alternated (`base …`);
 * `POP_THREADS=1`: CPU per thread; `POP_TRACE_GC=1`: GC counts per phase; `POP_STRACE=1`: syscalls per request;
 * `CPU_PROFILE=<dir>` with `CPU_TARGET=<target,…>` and `CPU_PHASE=pop|ack`: the last round's phase of
 * those targets is profiled (bench/cpu-prof-main.ts, one file per profile).
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { makeCert } from '../test/helpers/tls.js';
import { field, request, requestText } from './http.js';
import { mainThreadRunSeconds as mainThreadCpuSeconds, runSeconds as cpuSeconds } from './proc.js';

const ROUNDS = Number(process.argv[2] ?? 6);
const PARTITIONS = Number(process.env.POP_PARTITIONS ?? 200);
const WORKERS = Number(process.env.POP_WORKERS ?? 4);
const BATCH = 100;
/** POP_DRAIN=<messages>: the bench row's shape instead (pop+ack CPU together; 'ack' then reports pops, 'ack main' messages). */
const DRAIN = Number(process.env.POP_DRAIN ?? 0);
/** POP_EMPTY=<n>: n pops of an empty queue per run instead (autocannon, 8 connections): the proxy's cost per pop request alone. */
const EMPTY = Number(process.env.POP_EMPTY ?? 0);
const TLS = process.env.POP_TLS === '1';
const profile = process.env.CPU_PROFILE;
const profTarget = process.env.CPU_TARGET ?? 'proxy';
const profPhase = process.env.CPU_PHASE ?? 'pop';
const PAYLOAD = { orderId: 12345, customer: 'c-0042', amount: 99.95, items: ['a', 'b', 'c'], note: 'x'.repeat(120) };
const apiKey = `qk_bench_${'k'.repeat(43)}`;
const CP_TOKEN = 'c'.repeat(40);

/** POP_THREADS=1: the CPU of each thread name (comm) per message too. */
const THREADS = process.env.POP_THREADS === '1';
const threads = new Map<string, Map<string, number>[]>();
const gcs = new Map<string, string[]>();
/** Run time (ns) of every thread of `p` now, by thread id: [comm, ns]. */
function threadRun(p: number): Map<string, [string, number]> {
  const m = new Map<string, [string, number]>();
  for (const tid of fs.readdirSync(`/proc/${p}/task`)) {
    try {
      m.set(tid, [fs.readFileSync(`/proc/${p}/task/${tid}/comm`, 'utf8').trim(), Number(fs.readFileSync(`/proc/${p}/task/${tid}/schedstat`, 'utf8').split(' ')[0])]);
    } catch {
      // ended meanwhile
    }
  }
  return m;
}
const load = (): string => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};


interface Target { name: string; url: string; headers: Record<string, string>; pid: number; b: BrokerHandle; pop: number[]; ack: number[]; popMain: number[]; ackMain: number[] }

const env: Record<string, string> = {
  LOG_LEVEL: 'info', LOG_FORMAT: 'json', QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PORT: '0', QUEEN_PROXY_BOOTSTRAP_TENANT: 'bench',
  QUEEN_PROXY_BOOTSTRAP_API_KEY: apiKey, QUEEN_EDGE_RATE: '10000000', QUEEN_EDGE_BURST: '10000000',
  QUEEN_TENANCY_HEADER: '1', QUEEN_KV_TRUSTED_PROXY: '1', QUEEN_PROXY_CP_TOKEN: CP_TOKEN,
};
if (TLS) {
  const c = makeCert('queen-pop-tls-');
  env.QUEEN_TLS_CERT = c.cert;
  env.QUEEN_TLS_KEY = c.key;
}
if (profile) env.CPU_PROFILE = profile;
const mainOf = (built: string | undefined): string | undefined => {
  if (profile) return fileURLToPath(new URL(built ? path.join(path.dirname(built), '../bench/cpu-prof-main.js') : './cpu-prof-main.js', built ? `file://${built}` : import.meta.url));
  return built;
};
const brokers: BrokerHandle[] = [];
try {
  const targets: Target[] = [];
  // POP_BASELINE=<another build's dist/src/main.js>: a second broker of that build, its targets named `base …`, alternated with this build's.
  for (const [label, built] of [['', undefined], ...(process.env.POP_BASELINE ? [['base ', process.env.POP_BASELINE]] : [])] as [string, string | undefined][]) {
    const b: BrokerHandle = await startBroker({ env, ...(process.env.POP_TRACE_GC ? { nodeArgs: ['--trace-gc'] } : {}), main: mainOf(built) });
    brokers.push(b);
    const pid = b.proc.pid!;
    const line = b.output().split('\n').find((l) => l.includes('public listener (hardened)'));
    if (!line) throw new Error(`no proxy listener line:\n${b.output()}`);
    const proxyUrl = `${TLS ? 'https' : 'http'}://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`;
    const auth = { authorization: `Bearer ${apiKey}` };
    // The bootstrap cluster's broker tenant, from the control plane.
    const clusters = await request(proxyUrl, 'GET', '/api/cp/clusters', undefined, { 'x-queen-cp-token': CP_TOKEN });
    const list = (clusters.body?.clusters ?? clusters.body) as { broker_tenant_uuid?: string }[] | undefined;
    const tenant = Array.isArray(list) ? list.find((c) => c.broker_tenant_uuid)?.broker_tenant_uuid : undefined;
    if (!tenant) console.log(`no broker tenant from /api/cp/clusters (${clusters.status} ${JSON.stringify(clusters.body).slice(0, 200)}): direct-tenant skipped`);
    const t = (name: string, url: string, headers: Record<string, string>): Target => ({ name: label + name, url, headers, pid, b, pop: [], ack: [], popMain: [], ackMain: [] });
    targets.push(t('direct', b.url, {}), ...(tenant ? [t('direct-tenant', b.url, { 'x-queen-tenant': tenant })] : []), t('proxy', proxyUrl, auth));
  }

  const run = async (t: Target, queue: string, record: boolean, prof: boolean): Promise<void> => {
    if (DRAIN) return drain(t, queue, record, prof);
    const body = { items: [] as { queue: string; partition: string; payload: unknown }[] };
    for (let p = 0; p < PARTITIONS; p++) for (let i = 0; i < BATCH; i++) body.items.push({ queue, partition: `p${p}`, payload: PAYLOAD });
    for (let at = 0; at < body.items.length; at += 1000) {
      const r = await request(t.url, 'POST', '/api/v1/push', { items: body.items.slice(at, at + 1000) }, t.headers);
      if (r.status !== 201) throw new Error(`fill ${t.name}: ${r.status}`);
    }
    const acks: string[] = [];
    let left = PARTITIONS;
    let messages = 0;
    const phase = async (name: string, work: () => Promise<void>): Promise<{ all: number; main: number }> => {
      const on = prof && name === profPhase;
      if (on) process.kill(t.pid, 'SIGUSR2');
      let tracer: ChildProcess | undefined;
      const traceFile = `/tmp/pp/strace-${t.name}-${name}-${Date.now()}.txt`;
      if (process.env.POP_STRACE && record) {
        tracer = spawn('strace', ['-c', '-f', '-p', String(t.pid), '-o', traceFile], { stdio: 'ignore' });
        await new Promise((r) => setTimeout(r, 500));
      }
      const t0 = THREADS ? threadRun(t.pid) : undefined;
      const out0 = t.b.output().length;
      const c0 = cpuSeconds(t.pid);
      const m0 = mainThreadCpuSeconds(t.pid);
      await work();
      const r = { all: (cpuSeconds(t.pid) - c0) * 1e6, main: (mainThreadCpuSeconds(t.pid) - m0) * 1e6 };
      if (tracer) {
        const done = new Promise((r) => tracer!.once('exit', r));
        tracer.kill('SIGINT');
        await done;
        const lines = fs.readFileSync(traceFile, 'utf8').split('\n').filter((l) => /^\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+/.test(l));
        const calls = lines.map((l) => { const f = l.trim().split(/\s+/); return `${f.at(-1)} ${(Number(f[3]) / (messages / BATCH)).toFixed(2)}`; });
        console.log(`  syscalls per request, ${t.name} ${name}: ${calls.join(', ')}`);
      }
      if (process.env.POP_TRACE_GC && record) {
        const seen = t.b.output().slice(out0);
        const sc = seen.split('Scavenge').length - 1, ms = seen.split('Mark-Compact').length - 1;
        const promoted = [...seen.matchAll(/Scavenge[^\n]*?([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB/g)].length;
        gcs.set(`${t.name} ${name}`, [...(gcs.get(`${t.name} ${name}`) ?? []), `${sc}s/${ms}mc/${promoted}`]);
      }
      if (t0 && record) {
        const by = new Map<string, number>();
        for (const [tid, [comm, ns]] of threadRun(t.pid)) by.set(`${comm}+${Number(tid) - t.pid}`, (by.get(`${comm}+${Number(tid) - t.pid}`) ?? 0) + (ns - (t0.get(tid)?.[1] ?? 0)) / 1e3 / messages);
        threads.set(`${t.name} ${name}`, [...(threads.get(`${t.name} ${name}`) ?? []), by]);
      }
      if (on) process.kill(t.pid, 'SIGUSR2');
      return r;
    };
    const pops = await phase('pop', () => Promise.all(Array.from({ length: WORKERS }, async () => {
      while (left > 0) {
        left--;
        const p = await requestText(t.url, 'GET', `/api/v1/pop/queue/${queue}?batch=${BATCH}`, undefined, t.headers);
        if (p.status !== 200) throw new Error(`pop ${t.name}: ${p.status} ${p.text.slice(0, 200)}`);
        const n = p.text.split('"transactionId":"').length - 1;
        if (n !== BATCH) throw new Error(`pop ${t.name}: ${n} messages, not ${BATCH}`);
        messages += n;
        acks.push(JSON.stringify({ transactionId: field(p.text, 'transactionId', true), partitionId: field(p.text, 'partitionId'), leaseId: field(p.text, 'leaseId'), consumerGroup: null }));
      }
    })).then(() => undefined));
    const ackCpu = await phase('ack', () => Promise.all(Array.from({ length: WORKERS }, async () => {
      for (let a = acks.pop(); a !== undefined; a = acks.pop()) {
        const r = await requestText(t.url, 'POST', '/api/v1/ack', a, t.headers);
        if (r.status !== 200 || !r.text.includes('"success":true')) throw new Error(`ack ${t.name}: ${r.status} ${r.text.slice(0, 200)}`);
      }
    })).then(() => undefined));
    if (record) {
      t.pop.push(pops.all / messages); t.popMain.push(pops.main / messages);
      t.ack.push(ackCpu.all / messages); t.ackMain.push(ackCpu.main / messages);
    }
  };

  /** The shape of `npm run bench`'s pop+ack rows: DRAIN messages over 16 partitions, 8 workers popping and acking in turn until a 204. */
  const drain = async (t: Target, queue: string, record: boolean, prof: boolean): Promise<void> => {
    for (let sent = 0; sent < DRAIN; sent += 1000) {
      const items = Array.from({ length: Math.min(1000, DRAIN - sent) }, (_, i) => ({ queue, partition: `p${i % 16}`, payload: PAYLOAD }));
      const r = await request(t.url, 'POST', '/api/v1/push', { items }, t.headers);
      if (r.status !== 201) throw new Error(`fill ${t.name}: ${r.status}`);
    }
    let messages = 0;
    let pops = 0;
    if (prof) process.kill(t.pid, 'SIGUSR2');
    const c0 = cpuSeconds(t.pid);
    const m0 = mainThreadCpuSeconds(t.pid);
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (;;) {
        const p = await requestText(t.url, 'GET', `/api/v1/pop/queue/${queue}?batch=${BATCH}`, undefined, t.headers);
        pops++;
        if (p.status === 204) return;
        if (p.status !== 200) throw new Error(`pop ${t.name}: ${p.status} ${p.text.slice(0, 200)}`);
        messages += p.text.split('"transactionId":"').length - 1;
        const a = await requestText(t.url, 'POST', '/api/v1/ack', JSON.stringify({ transactionId: field(p.text, 'transactionId', true), partitionId: field(p.text, 'partitionId'), leaseId: field(p.text, 'leaseId'), consumerGroup: null }), t.headers);
        if (a.status !== 200 || !a.text.includes('"success":true')) throw new Error(`ack ${t.name}: ${a.status} ${a.text.slice(0, 200)}`);
      }
    }));
    const all = (cpuSeconds(t.pid) - c0) * 1e6;
    const main = (mainThreadCpuSeconds(t.pid) - m0) * 1e6;
    if (prof) process.kill(t.pid, 'SIGUSR2');
    if (record) {
      t.pop.push(all / messages); t.popMain.push(main / messages);
      t.ack.push(pops); t.ackMain.push(messages);
    }
  };

  if (EMPTY) {
    // Pops of an empty queue (204): the broker's own work is small, so the difference between the
    // targets is what the proxy adds to one pop request, whatever the answer's size.
    const fire = async (t: Target, amount: number): Promise<void> => {
      const r = await autocannon({ url: `${t.url}/api/v1/pop/queue/pop-empty?batch=${BATCH}`, connections: 8, amount, headers: t.headers });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    };
    for (const t of targets) await fire(t, EMPTY);
    for (let round = 0; round < ROUNDS; round++) {
      const parts: string[] = [];
      for (const t of targets.map((_, i) => targets[(i + round) % targets.length]!)) {
        const c0 = cpuSeconds(t.pid);
        const m0 = mainThreadCpuSeconds(t.pid);
        await fire(t, EMPTY);
        t.pop.push((cpuSeconds(t.pid) - c0) * 1e6 / EMPTY);
        t.popMain.push((mainThreadCpuSeconds(t.pid) - m0) * 1e6 / EMPTY);
        parts.push(`${t.name} ${t.pop.at(-1)!.toFixed(1)}`);
      }
      console.log(`round ${round + 1}: ${parts.join(' | ')} µs/request | load ${load()}`);
    }
    console.log(`medians over ${ROUNDS} rounds of ${EMPTY} empty pops (204), TLS ${TLS ? 'on' : 'off'}, broker CPU µs/request, whole process / main thread:`);
    for (const t of targets) console.log(`  ${t.name.padEnd(14)} ${median(t.pop).toFixed(1)} / ${median(t.popMain).toFixed(1)}`);
  } else {
  for (const t of targets) await run(t, `pop-warm-${t.name}`, false, false); // untimed: compiles each path
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    const parts: string[] = [];
    for (const t of order) {
      await run(t, `pop-${t.name}-${round}`, true, profile !== undefined && round === ROUNDS - 1 && profTarget.split(',').includes(t.name));
      parts.push(`${t.name} pop ${t.pop.at(-1)!.toFixed(2)} ack ${t.ack.at(-1)!.toFixed(2)}`);
    }
    console.log(`round ${round + 1}: ${parts.join(' | ')} µs/msg | load ${load()}`);
  }
  console.log(`medians over ${ROUNDS} rounds, ${DRAIN || PARTITIONS * BATCH} messages per run, TLS ${TLS ? 'on' : 'off'} (broker CPU µs/msg, whole process / main thread):`);
  for (const t of targets) {
    console.log(`  ${t.name.padEnd(14)} pop ${median(t.pop).toFixed(2)} / ${median(t.popMain).toFixed(2)}   ack ${median(t.ack).toFixed(2)} / ${median(t.ackMain).toFixed(2)}`);
  }
  for (const [k, list] of threads) {
    const names = new Set(list.flatMap((m) => [...m.keys()]));
    const helpers = median(list.map((m) => [...m].reduce((a, [n, v]) => a + (n.endsWith('+0') ? 0 : v), 0)));
    console.log(`  threads ${k}: other threads ${helpers.toFixed(2)} µs/msg (${[...names].map((n) => `${n} ${median(list.map((m) => m.get(n) ?? 0)).toFixed(2)}`).join(', ')})`);
  }
  }
  for (const [k, list] of gcs) console.log(`  gc ${k}: ${list.join(' ')}`);
  console.log(`load ${load()}`);
} finally {
  for (const b of brokers) await b.stop();
}
