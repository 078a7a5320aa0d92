/**
 * Bench rows through the embedded proxy (docs/proxy.md): one broker with the proxy on its own port,
 * push 1/request and pop+ack (batch 100) with an API key through the proxy, TLS off and on, each
 * next to the same shape on the broker's own PORT measured in the same run, as a percentage.
 *
 * Each shape runs four times in the order PORT, proxy, proxy, PORT and the row gives the means
 * (pop+ack after one untimed drain on each, as push after its 1 s warm-up):
 * a later run meets a larger database and WAL than an earlier one, and the machine's other load
 * drifts, so measuring PORT always first favoured it (the pop+ack drains are about a second each).
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

/** The broker CPU per message of a row, µs, or – where it was not measured. */
function cpuPerMsg(row: Row): string {
  return row.cpuUsPerMsg === undefined ? '–' : row.cpuUsPerMsg.toFixed(1);
}

/** The mean of two runs of one shape: rates, latencies and CPU averaged, messages summed. */
function mean(x: Row, y: Row): Row {
  const avg = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : (a + b) / 2);
  const cpuUsPerMsg = avg(x.cpuUsPerMsg, y.cpuUsPerMsg);
  const clientCpuUsPerReq = avg(x.clientCpuUsPerReq, y.clientCpuUsPerReq);
  return {
    shape: x.shape, messages: x.messages + y.messages, batch: x.batch, concurrency: x.concurrency,
    msgPerSec: (x.msgPerSec + y.msgPerSec) / 2, reqPerSec: (x.reqPerSec + y.reqPerSec) / 2, p50: (x.p50 + y.p50) / 2, p99: (x.p99 + y.p99) / 2,
    ...(cpuUsPerMsg !== undefined ? { cpuUsPerMsg } : {}), ...(clientCpuUsPerReq !== undefined ? { clientCpuUsPerReq } : {}),
  };
}

/** Runs `direct`, `proxied`, `proxied`, `direct` (each given its run number 0 or 1) and answers the means of each. */
async function abba(direct: (i: number) => Promise<Row>, proxied: (i: number) => Promise<Row>): Promise<[Row, Row]> {
  const d0 = await direct(0);
  const p0 = await proxied(0);
  const p1 = await proxied(1);
  const d1 = await direct(1);
  return [mean(d0, d1), mean(p0, p1)];
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
      const [directPush, p] = await abba(
        (i) => push(b, 'push 1/request, direct', {}, `bench-direct-${tls}-${i}`),
        (i) => push(via, `push 1/request, ${label}`, h, `bench-proxy-${tls}-${i}`));
      p.note = `${(p.msgPerSec / directPush.msgPerSec * 100).toFixed(0)}% of PORT in the same run (${directPush.msgPerSec.toFixed(0)} msg/s; ${cpuNote(directPush)}); ${cpuNote(p)}; means of PORT, proxy, proxy, PORT`;
      rows.push(p);
      // One untimed drain on each before the timed ones, as push has its 1 s warm-up: a drain is only
      // 300 pops and 300 acks, so the first drain through the proxy ran its path (listener, data plane,
      // TLS socket) before V8 had optimised it (37 against 19-25 µs/msg in later drains of one broker).
      await popAck(b, 'pop+ack warm-up, direct', {}, `bench-warm-direct-pa-${tls}`);
      await popAck(via, 'pop+ack warm-up, proxy', h, `bench-warm-proxy-pa-${tls}`);
      const [directPa, pa] = await abba(
        (i) => popAck(b, 'pop+ack, direct', {}, `bench-direct-pa-${tls}-${i}`),
        (i) => popAck(via, `pop+ack (batch 100), ${label}`, h, `bench-proxy-pa-${tls}-${i}`));
      pa.note = `${(pa.msgPerSec / directPa.msgPerSec * 100).toFixed(0)}% of PORT in the same run (${directPa.msgPerSec.toFixed(0)} msg/s; broker CPU ${cpuPerMsg(directPa)} µs/msg, through the proxy ${cpuPerMsg(pa)}); means of PORT, proxy, proxy, PORT`;
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
