/**
 * Where TLS costs CPU on the embedded proxy's listener (docs/proxy.md#what-tls-costs): push
 * 1/request (32 keep-alive autocannon connections, the bench's body) against five targets that are
 * all up at once and measured alternately, the order rotated every round, so the machine's other
 * load falls on each alike:
 *
 * - `proxy TLS`, `proxy plain`: one broker each with the proxy on its own port, API key;
 * - `direct`: the plain broker's PORT;
 * - `bare https`, `bare http`: a do-nothing Node server (bench/tls-bare-server.ts) answering a push
 *   answer's shape, so `bare https − bare http` is what Node's TLS alone costs per request.
 *
 * Per run the server's CPU (user + system, /proc: the whole process and its main thread alone,
 * which bounds the push rate) and this process's (the client, TLS included) per request; the medians over the rounds. Then, on the TLS proxy alone: the TLS records per
 * answer and the connections opened, counted by a TCP relay in this process that reads the record
 * headers; the negotiated protocol, cipher and key exchange; and with `TLS_STRACE=1` (strace
 * installed) the system calls per request of the TLS and the plain proxy.
 *
 * Run: `npx tsc -p tsconfig.json && node dist/bench/proxy-tls.js [rounds]` (default 8) with env
 * `TLS_N` (requests per run, default 5000), `TLS_WARMUP` (default 5000), `TLS_STRACE=1`.
 */
import autocannon from 'autocannon';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import tls from 'node:tls';
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { makeCert } from '../test/helpers/tls.js';
import { cpuSeconds, mainThreadCpuSeconds } from './proc.js';

const N = Number(process.env.TLS_N ?? 5000);
const WARMUP = Number(process.env.TLS_WARMUP ?? 5000);
const ROUNDS = Number(process.argv[2] ?? 8);
const apiKey = `qk_bench_${'k'.repeat(43)}`;
const body = JSON.stringify({ items: [{ queue: 'tls-cost', partition: 'p0', payload: { n: 1, text: 'x'.repeat(100) } }] });

interface Target { name: string; url: string; pid: number; headers: Record<string, string>; server: number[]; main: number[]; client: number[] }

const load = (): string => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const proxyPort = (b: BrokerHandle): number => {
  const line = b.output().split('\n').find((l) => l.includes('public listener (hardened)'));
  if (!line) throw new Error(`no proxy listener line:\n${b.output()}`);
  return (JSON.parse(line) as { port: number }).port;
};

/** Exactly `amount` push-1 requests to `url`; throws on any non-2xx or error. */
async function fire(url: string, headers: Record<string, string>, amount: number): Promise<void> {
  const r = await autocannon({ url: `${url}/api/v1/push`, method: 'POST', connections: 32, amount, body, headers: { 'content-type': 'application/json', ...headers } });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
}

/** One run of N requests, its server and client CPU per request appended to `t`. */
async function measure(t: Target): Promise<void> {
  const s0 = cpuSeconds(t.pid);
  const m0 = mainThreadCpuSeconds(t.pid);
  const c0 = process.cpuUsage();
  await fire(t.url, t.headers, N);
  const c = process.cpuUsage(c0);
  t.server.push((cpuSeconds(t.pid) - s0) * 1e6 / N);
  t.main.push((mainThreadCpuSeconds(t.pid) - m0) * 1e6 / N);
  t.client.push((c.user + c.system) / N);
}

/** A bare server child (bench/tls-bare-server.ts) and its port. */
async function bare(tlsOn: boolean, cert: { cert: string; key: string }): Promise<{ proc: ChildProcess; port: number }> {
  const main = fileURLToPath(new URL('./tls-bare-server.js', import.meta.url));
  const proc = spawn(process.execPath, [main], { env: { ...process.env, BARE_TLS: tlsOn ? '1' : '0', BARE_TLS_CERT: cert.cert, BARE_TLS_KEY: cert.key }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    proc.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    proc.once('exit', (code) => reject(new Error(`bare server exited ${code}`)));
  });
  return { proc, port };
}

/** Server→client TLS records (all, application data) and connections through a relay to `port`, over `amount` requests. */
async function countRecords(port: number, amount: number): Promise<{ records: number; appData: number; connections: number }> {
  const st = { records: 0, appData: 0, connections: 0 };
  const relay = net.createServer((client) => {
    st.connections++;
    const upstream = net.connect(port, '127.0.0.1');
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    let pending: Buffer = Buffer.alloc(0);
    upstream.on('data', (d: Buffer) => {
      client.write(d);
      pending = pending.length ? Buffer.concat([pending, d]) : d;
      let off = 0;
      while (pending.length - off >= 5 && pending.length - off >= 5 + pending.readUInt16BE(off + 3)) {
        st.records++;
        if (pending[off] === 23) st.appData++;
        off += 5 + pending.readUInt16BE(off + 3);
      }
      pending = pending.subarray(off);
    });
    client.on('data', (d: Buffer) => upstream.write(d));
    for (const s of [client, upstream]) s.on('error', () => {});
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  const rp = (relay.address() as net.AddressInfo).port;
  await fire(`https://127.0.0.1:${rp}`, { authorization: `Bearer ${apiKey}` }, amount);
  await new Promise((r) => setTimeout(r, 200));
  relay.close();
  return st;
}

/** The protocol, cipher and key exchange a default Node client (as autocannon's) negotiates with `port`. */
function negotiated(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect(port, '127.0.0.1', { rejectUnauthorized: false, servername: 'localhost' }, () => {
      const k = s.getEphemeralKeyInfo() as { name?: string } | null;
      resolve(`${s.getProtocol()} ${s.getCipher().standardName} ${k?.name ?? ''}`);
      s.end();
    });
    s.on('error', reject);
  });
}

/** Syscalls of `pid` per request over N requests to `t` (strace -c -f), the ones a request makes. */
async function syscalls(t: Target): Promise<string> {
  const out = `/tmp/queen-tls-strace-${process.pid}.txt`;
  const tracer = spawn('strace', ['-c', '-f', '-p', String(t.pid), '-o', out], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1000));
  await fire(t.url, t.headers, N);
  tracer.kill('SIGINT');
  await new Promise((r) => tracer.once('exit', r));
  const counts = new Map<string, number>();
  for (const line of fs.readFileSync(out, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 5 && /^\d+$/.test(f[3]!)) counts.set(f[f.length - 1]!, Number(f[3]));
  }
  fs.rmSync(out, { force: true });
  return ['read', 'write', 'writev', 'epoll_pwait', 'pwrite64', 'fdatasync', 'accept4']
    .map((n) => `${n} ${((counts.get(n) ?? 0) / N).toFixed(2)}`).join(', ');
}

const cert = makeCert('queen-tls-cost-');
const env = (tlsOn: boolean): Record<string, string> => ({
  LOG_LEVEL: 'info', LOG_FORMAT: 'json', QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PORT: '0', QUEEN_PROXY_BOOTSTRAP_TENANT: 'bench',
  QUEEN_PROXY_BOOTSTRAP_API_KEY: apiKey, QUEEN_EDGE_RATE: '10000000', QUEEN_EDGE_BURST: '10000000',
  ...(tlsOn ? { QUEEN_TLS_CERT: cert.cert, QUEEN_TLS_KEY: cert.key } : {}),
});
const bTls = await startBroker({ env: env(true) });
const bPlain = await startBroker({ env: env(false) });
const bareTls = await bare(true, cert);
const barePlain = await bare(false, cert);
const auth = { authorization: `Bearer ${apiKey}` };
const targets: Target[] = [
  { name: 'proxy TLS', url: `https://127.0.0.1:${proxyPort(bTls)}`, pid: bTls.proc.pid!, headers: auth, server: [], main: [], client: [] },
  { name: 'proxy plain', url: `http://127.0.0.1:${proxyPort(bPlain)}`, pid: bPlain.proc.pid!, headers: auth, server: [], main: [], client: [] },
  { name: 'direct PORT', url: bPlain.url, pid: bPlain.proc.pid!, headers: {}, server: [], main: [], client: [] },
  { name: 'bare https', url: `https://127.0.0.1:${bareTls.port}`, pid: bareTls.proc.pid!, headers: {}, server: [], main: [], client: [] },
  { name: 'bare http', url: `http://127.0.0.1:${barePlain.port}`, pid: barePlain.proc.pid!, headers: {}, server: [], main: [], client: [] },
];
try {
  console.log(`load at the start ${load()}`);
  for (const t of targets) await fire(t.url, t.headers, WARMUP);
  const loads: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    if (round % 2 === 1) order.reverse();
    for (const t of order) await measure(t);
    loads.push(load().split(' ')[0]!);
  }
  for (const t of targets) {
    console.log(`${t.name.padEnd(12)} server ${median(t.server).toFixed(1)} µs/req (runs ${t.server.map((x) => x.toFixed(0)).join(' ')}), main thread ${median(t.main).toFixed(1)}, client ${median(t.client).toFixed(1)} µs/req`);
  }
  for (const [what, key] of [['server', 'server'], ['main thread', 'main']] as const) {
    const m = (name: string): number => median(targets.find((t) => t.name === name)![key]);
    console.log(`TLS adds (${what}, medians): proxy ${(m('proxy TLS') - m('proxy plain')).toFixed(1)} µs/req, bare Node ${(m('bare https') - m('bare http')).toFixed(1)} µs/req; the proxy adds ${(m('proxy plain') - m('direct PORT')).toFixed(1)} µs/req to PORT without TLS; PORT / proxy TLS ${(m('direct PORT') / m('proxy TLS')).toFixed(2)}`);
  }
  console.log(`${ROUNDS} rounds × ${N} requests per target; load average (1 min) after each round: ${loads.join(' ')}`);
  const rec = await countRecords(proxyPort(bTls), N);
  console.log(`proxy TLS, ${N} requests through a counting relay: ${rec.connections} connections, ${rec.records} records from the server, ${rec.appData} of them application data (${((rec.appData - rec.connections * 6) / N).toFixed(3)} per answer after ~6 handshake and ticket records per connection)`);
  console.log(`negotiated: ${await negotiated(proxyPort(bTls))}`);
  if (process.env.TLS_STRACE === '1' && spawnSync('strace', ['-V']).status === 0) {
    for (const t of targets.slice(0, 2)) console.log(`${t.name} syscalls per request: ${await syscalls(t)}`);
  }
} finally {
  for (const p of [bareTls.proc, barePlain.proc]) p.kill('SIGTERM');
  await bTls.stop();
  await bPlain.stop();
}
