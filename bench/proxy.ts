/**
 * Bench rows through the embedded proxy (docs/proxy.md): one broker with the proxy on its own port,
 * push 1/request and pop+ack (batch 100) with an API key through the proxy, TLS off and on, each
 * next to the same shape on the broker's own PORT measured in the same run, as a percentage.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startBroker, tempDir, type BrokerHandle } from '../test/helpers/broker.js';
import { request } from './http.js';
import type { Row } from './row.js';

type Shape = (b: BrokerHandle, shape: string, headers: Record<string, string>, queue: string) => Promise<Row>;

/** The proxy's bound port, from its `public listener (hardened)` boot line. */
function proxyPort(output: string): number {
  const line = output.split('\n').find((l) => l.includes('public listener (hardened)'));
  if (!line) throw new Error(`no proxy listener line:\n${output}`);
  return (JSON.parse(line) as { port: number }).port;
}

/** A self-signed certificate made for this run (openssl CLI). */
function makeCert(): { cert: string; key: string } {
  const dir = tempDir('queen-bench-tls-');
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
  return { cert, key };
}

/** CPU time (user + system) the process `pid` has used so far, in µs; undefined off Linux. */
function processCpuUs(pid: number | undefined): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * (1_000_000 / 100); // clock ticks (USER_HZ 100)
  } catch {
    return undefined;
  }
}

/**
 * Runs `shape` and adds to its note the CPU each request cost the broker process and this bench
 * process (the client: autocannon, TLS included), in µs, the 1 s warm-up of the shape counted in the
 * CPU but not in the requests (the same for every row): on a small machine both share the cores,
 * so a row bound by the client's TLS work shows it here.
 */
async function withCpu(b: BrokerHandle, run: () => Promise<Row>): Promise<Row> {
  const broker0 = processCpuUs(b.proc.pid);
  const client0 = process.cpuUsage();
  const row = await run();
  const client = process.cpuUsage(client0);
  const broker1 = processCpuUs(b.proc.pid);
  const requests = row.reqPerSec > 0 && row.msgPerSec > 0 ? row.messages / (row.msgPerSec / row.reqPerSec) : 0;
  if (requests > 0 && broker0 !== undefined && broker1 !== undefined) {
    row.note = `${row.note ? `${row.note}; ` : ''}CPU/request (warm-up second included): broker ${((broker1 - broker0) / requests).toFixed(0)} µs, client ${((client.user + client.system) / requests).toFixed(0)} µs`;
  }
  return row;
}

/** Push and pop+ack direct and through the proxy, TLS off then on. */
export async function benchProxy(push: Shape, popAck: Shape): Promise<Row[]> {
  const rows: Row[] = [];
  for (const tls of [false, true]) {
    const apiKey = `qk_bench_${'k'.repeat(43)}`;
    const env: Record<string, string> = {
      LOG_LEVEL: 'info', LOG_FORMAT: 'json', QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PORT: '0', QUEEN_PROXY_BOOTSTRAP_TENANT: 'bench',
      QUEEN_PROXY_BOOTSTRAP_API_KEY: apiKey, QUEEN_EDGE_RATE: '10000000', QUEEN_EDGE_BURST: '10000000',
    };
    if (tls) {
      const c = makeCert();
      env.QUEEN_TLS_CERT = c.cert;
      env.QUEEN_TLS_KEY = c.key;
    }
    const b = await startBroker({ env });
    try {
      const via: BrokerHandle = { ...b, url: `${tls ? 'https' : 'http'}://127.0.0.1:${proxyPort(b.output())}` };
      const h = { authorization: `Bearer ${apiKey}` };
      const probe = await request(via.url, 'GET', '/api/v1/pop/queue/none', undefined, h);
      if (probe.status !== 204) throw new Error(`proxy probe answered ${probe.status}`);
      const label = `through the proxy, API key, TLS ${tls ? 'on' : 'off'}`;
      const directPush = await withCpu(b, () => push(b, 'push 1/request, direct', {}, `bench-direct-${tls}`));
      const p = await withCpu(b, () => push(via, `push 1/request, ${label}`, h, `bench-proxy-${tls}`));
      p.note = `${(p.msgPerSec / directPush.msgPerSec * 100).toFixed(0)}% of PORT in the same run (${directPush.msgPerSec.toFixed(0)} msg/s; ${directPush.note ?? ''}); ${p.note ?? ''}`;
      rows.push(p);
      const directPa = await popAck(b, 'pop+ack, direct', {}, `bench-direct-pa-${tls}`);
      const pa = await popAck(via, `pop+ack (batch 100), ${label}`, h, `bench-proxy-pa-${tls}`);
      pa.note = `${(pa.msgPerSec / directPa.msgPerSec * 100).toFixed(0)}% of PORT in the same run (${directPa.msgPerSec.toFixed(0)} msg/s)`;
      rows.push(pa);
    } catch (e) {
      // Over TLS, Node's HTTP parser was seen to refuse a keep-alive request (HPE_PAUSED) under
      // load through the proxy: the row says so instead of stopping the whole bench.
      rows.push({ shape: `through the proxy, TLS ${tls ? 'on' : 'off'}`, messages: 0, batch: 0, concurrency: 0, msgPerSec: 0, reqPerSec: 0, p50: 0, p99: 0, note: `failed: ${(e as Error).message}; ${b.output().split('\n').find((l) => l.includes('proxy client error')) ?? ''}` });
    } finally {
      await b.stop();
    }
  }
  return rows;
}
