/**
 * Bench rows through the embedded proxy (docs/proxy.md): one broker with the proxy on its own port,
 * push 1/request and pop+ack (batch 100) with an API key through the proxy, TLS off and on, each
 * next to the same shape on the broker's own PORT measured in the same run, as a percentage.
 */
import { startBroker, type BrokerHandle } from '../test/helpers/broker.js';
import { makeCert } from '../test/helpers/tls.js';
import { request } from './http.js';
import type { Row } from './row.js';

type Shape = (b: BrokerHandle, shape: string, headers: Record<string, string>, queue: string) => Promise<Row>;

/** The proxy's bound port, from its `public listener (hardened)` boot line. */
function proxyPort(output: string): number {
  const line = output.split('\n').find((l) => l.includes('public listener (hardened)'));
  if (!line) throw new Error(`no proxy listener line:\n${output}`);
  return (JSON.parse(line) as { port: number }).port;
}

/**
 * The CPU note of a push row: broker and client (this process: autocannon, TLS included) µs per
 * request over the measured window only (bench/run.ts), warm-up excluded. An earlier note counted
 * the 1 s warm-up in the CPU but not in the requests; the proxy row's warm-up is also where its path
 * is first compiled, so that note inflated the proxy row most when its throughput was lowest.
 */
function cpuNote(row: Row): string {
  const broker = row.cpuUsPerMsg === undefined ? '–' : `${(row.cpuUsPerMsg * row.batch).toFixed(0)} µs`;
  const client = row.clientCpuUsPerReq === undefined ? '–' : `${row.clientCpuUsPerReq.toFixed(0)} µs`;
  return `CPU/request: broker ${broker}, client ${client}`;
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
      const c = makeCert('queen-bench-tls-');
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
      const directPush = await push(b, 'push 1/request, direct', {}, `bench-direct-${tls}`);
      const p = await push(via, `push 1/request, ${label}`, h, `bench-proxy-${tls}`);
      p.note = `${(p.msgPerSec / directPush.msgPerSec * 100).toFixed(0)}% of PORT in the same run (${directPush.msgPerSec.toFixed(0)} msg/s; ${cpuNote(directPush)}); ${cpuNote(p)}`;
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
