/**
 * The header-read timeout of every listener (src/util/http-head.ts HEADER_READ_TIMEOUT_MS, 10 s
 * from a request's first byte; docs/proxy.md#tls): a head that never ends is answered
 * `408 request_timeout` and closed, on PORT, on the proxy listener over TLS and on the proxy
 * fronting PORT, over raw sockets. A keep-alive socket that idles longer than it between requests
 * is not cut by it. Everything is watched at once, so the file waits about one timeout.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import type { BrokerHandle } from '../helpers/broker.js';
import { makeCert } from '../helpers/tls.js';
import { proxyPortOf, startProxied } from './helpers.js';

/** Longest wait for the 408: the 10 s budget, Node's 1 s check interval and a loaded machine's slack; the old budget was 75 s + 30 s. */
const DEADLINE_MS = 30_000;

/** Sends `head` (and nothing more) and collects the answer until the server closes or `DEADLINE_MS` passes. */
function stalledHead(connect: () => net.Socket, head: string): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const s = connect();
    let text = '';
    const t = setTimeout(() => { s.destroy(); resolve({ text, closedByServer: false }); }, DEADLINE_MS);
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    s.on('error', () => { clearTimeout(t); resolve({ text, closedByServer: true }); });
    s.on('close', () => { clearTimeout(t); resolve({ text, closedByServer: true }); });
    s.write(head);
  });
}

/** Two requests on one keep-alive socket with `idleMs` of silence between them: both status lines. */
function keepAliveTwice(connect: () => net.Socket, idleMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const s = connect();
    let text = '';
    const req = 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const lines = text.match(/HTTP\/1\.1 \d{3}/g) ?? [];
      if (lines.length === 2) { s.destroy(); resolve(lines); }
    });
    s.on('error', reject);
    s.on('close', () => resolve(text.match(/HTTP\/1\.1 \d{3}/g) ?? []));
    s.write(req);
    setTimeout(() => s.write(req), idleMs);
  });
}

describe('header-read timeout', () => {
  let separate: BrokerHandle;
  let fronting: BrokerHandle;
  let proxyPort: number;

  before(async () => {
    const c = makeCert();
    separate = await startProxied({ QUEEN_PROXY_PORT: '0', QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: c.key });
    proxyPort = proxyPortOf(separate.output());
    fronting = await startProxied();
  });
  after(async () => { await separate?.stop(); await fronting?.stop(); });

  test('a head that never ends gets 408 request_timeout and a close, on PORT, on the TLS proxy port and on the proxy fronting PORT; an idle keep-alive socket is not cut', async () => {
    const head = 'GET /health HTTP/1.1\r\nHost: localhost\r\nX-Trickle: a';
    const targets: [string, () => net.Socket][] = [
      ['PORT', () => net.connect(separate.port, '127.0.0.1')],
      ['proxy port, TLS', () => tls.connect({ host: '127.0.0.1', port: proxyPort, rejectUnauthorized: false })],
      ['proxy on PORT', () => net.connect(fronting.port, '127.0.0.1')],
    ];
    // Watched at once: the stalled heads, and keep-alive sockets that stay silent 12 s between two
    // requests, longer than the 10 s budget: only a head in progress is timed, not idle time.
    const [answers, idle] = await Promise.all([
      Promise.all(targets.map(([, connect]) => stalledHead(connect, head))),
      Promise.all(targets.slice(0, 2).map(([, connect]) => keepAliveTwice(connect, 12_000))),
    ]);
    answers.forEach((a, i) => {
      const what = targets[i]![0];
      assert.ok(a.closedByServer, `${what}: the server closed the connection within ${DEADLINE_MS} ms (got ${JSON.stringify(a.text.slice(0, 80))})`);
      assert.match(a.text, /^HTTP\/1\.1 408 /, `${what}: ${a.text}`);
      assert.equal((JSON.parse(a.text.split('\r\n\r\n')[1]!) as { code: string }).code, 'request_timeout', what);
    });
    idle.forEach((lines, i) => assert.deepEqual(lines, ['HTTP/1.1 200', 'HTTP/1.1 200'], `${targets[i]![0]}: both requests of the idle keep-alive socket answered`));
  });
});
