/**
 * Fixed-work CPU measurement of push 1/request through the embedded proxy (docs/proxy.md), the
 * figure `npm run bench`'s proxy rows cannot give on a loaded machine: per round, one broker with the
 * proxy on (TLS on or off), a warm-up of WARMUP requests, then exactly N push-1 requests over 32
 * keep-alive connections to (a) the proxy port and (b) the broker's own PORT; for each, the CPU time
 * (user + system) the broker process and this client process spent, in µs per request, read from
 * /proc/<pid>/stat (Linux) and process.cpuUsage(). TLS handshakes on the proxy listener are counted
 * from the client side: the sockets autocannon opened during the N requests.
 *
 * Run: `npx tsc -p tsconfig.json && node dist/bench/proxy-cpu.js [rounds]` with env
 * `CPU_N` (default 20000), `CPU_WARMUP` (default 2000).
 */
import autocannon from 'autocannon';
import fs from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import tls from 'node:tls';
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { makeCert } from '../test/helpers/tls.js';
import { cpuSeconds } from './proc.js';

const N = Number(process.env.CPU_N ?? 20_000);
const WARMUP = Number(process.env.CPU_WARMUP ?? 2_000);
const CONNECTIONS = 32;
// CPU_PROFILE=<dir>: one broker, its N requests of one target profiled (bench/cpu-prof-main.ts):
// CPU_TARGET=proxy-tls (default), proxy-plain or direct.
const profile = process.env.CPU_PROFILE;
const target = process.env.CPU_TARGET ?? 'proxy-tls';
const PAYLOAD = { n: 1, text: 'x'.repeat(100) };

/** CPU time (user + system) of process `pid` so far, in µs. */
const processCpuUs = (pid: number): number => cpuSeconds(pid) * 1e6;

/** The proxy's bound port, from its `public listener (hardened)` boot line. */
function proxyPort(output: string): number {
  const line = output.split('\n').find((l) => l.includes('public listener (hardened)'));
  if (!line) throw new Error(`no proxy listener line:\n${output}`);
  return (JSON.parse(line) as { port: number }).port;
}

// Every socket autocannon opens (it calls tls.connect / net.connect on the module objects): a new
// connection during the timed requests is a new TCP connection (and TLS handshake) to the listener.
let opened = 0;
for (const mod of [tls, net] as unknown as { connect: (...a: unknown[]) => unknown }[]) {
  const connect = mod.connect;
  mod.connect = (...a: unknown[]) => {
    opened++;
    return connect.apply(mod, a);
  };
}

/** Exactly `amount` push-1 requests over 32 connections; throws on any non-2xx or error. */
async function fire(url: string, amount: number, headers: Record<string, string>, queue: string): Promise<{ connections: number }> {
  const opened0 = opened;
  const inst = autocannon({
    url: `${url}/api/v1/push`, method: 'POST', connections: CONNECTIONS, amount,
    body: JSON.stringify({ items: [{ queue, partition: 'p0', payload: PAYLOAD }] }),
    headers: { 'content-type': 'application/json', ...headers },
  });
  const r = await inst;
  const connections = opened - opened0;
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { connections };
}

interface Sample { broker: number; client: number; connections: number }

/** Warm-up, then N requests; CPU per request of the broker and of this process. */
async function measure(b: BrokerHandle, url: string, headers: Record<string, string>, queue: string): Promise<Sample> {
  await fire(url, WARMUP, headers, queue);
  if (profile) process.kill(b.proc.pid!, 'SIGUSR2'); // start the profiler
  const broker0 = processCpuUs(b.proc.pid!);
  const client0 = process.cpuUsage();
  const r = await fire(url, N, headers, queue);
  const client = process.cpuUsage(client0);
  const broker1 = processCpuUs(b.proc.pid!);
  if (profile) process.kill(b.proc.pid!, 'SIGUSR2'); // stop it and write the profile
  return { broker: (broker1 - broker0) / N, client: (client.user + client.system) / N, connections: r.connections };
}

// No req/s: with `amount`, autocannon notices the end on its 1 s tick, so the wall time is whole seconds.
const fmt = (s: Sample): string => `broker ${s.broker.toFixed(0)} µs/req, client ${s.client.toFixed(0)} µs/req, ${s.connections} connections`;

const rounds = profile ? 1 : Number(process.argv[2] ?? 3);
const apiKey = `qk_bench_${'k'.repeat(43)}`;
for (let round = 1; round <= rounds; round++) {
  for (const useTls of profile ? [target === 'proxy-tls'] : [true, false]) {
    const env: Record<string, string> = {
      LOG_LEVEL: 'info', LOG_FORMAT: 'json', QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PORT: '0', QUEEN_PROXY_BOOTSTRAP_TENANT: 'bench',
      QUEEN_PROXY_BOOTSTRAP_API_KEY: apiKey, QUEEN_EDGE_RATE: '10000000', QUEEN_EDGE_BURST: '10000000',
    };
    if (useTls) {
      const c = makeCert('queen-cpu-tls-');
      env.QUEEN_TLS_CERT = c.cert;
      env.QUEEN_TLS_KEY = c.key;
    }
    if (profile) env.CPU_PROFILE = profile;
    const b = await startBroker({ env, main: profile ? fileURLToPath(new URL('./cpu-prof-main.js', import.meta.url)) : undefined });
    try {
      const via = `${useTls ? 'https' : 'http'}://127.0.0.1:${proxyPort(b.output())}`;
      const proxy = profile && target === 'direct' ? undefined : await measure(b, via, { authorization: `Bearer ${apiKey}` }, `cpu-proxy-${useTls}`);
      const direct = profile && target !== 'direct' ? undefined : await measure(b, b.url, {}, `cpu-direct-${useTls}`);
      const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
      console.log(`round ${round} TLS ${useTls ? 'on ' : 'off'} | proxy: ${proxy ? fmt(proxy) : '–'} | direct PORT: ${direct ? fmt(direct) : '–'} | load ${load}`);
    } finally {
      await b.stop();
    }
  }
}
