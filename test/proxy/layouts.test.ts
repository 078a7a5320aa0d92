/**
 * The proxy on its own port beside the plain broker router on PORT, TLS on the proxy listener
 * with a certificate made at test time (openssl), the fatal TLS configurations, and the
 * `QUEEN_PROXY_BOOTSTRAP_*` tenant across a restart (docs/proxy.md#layouts, docs/proxy.md#tls).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { call, uniqueName } from '../helpers/http.js';
import { runBrokerExpectingExit, startBroker, tempDir, type BrokerHandle } from '../helpers/broker.js';
import { CP_TOKEN, proxyPortOf, startProxied } from './helpers.js';
import { waitForParked } from '../helpers/wait.js';
import { makeCert } from '../helpers/tls.js';

/** An HTTPS request trusting only `ca`; resolves status and body text. */
function httpsCall(port: number, ca: Buffer, method: string, p: string, body?: unknown, headers: Record<string, string> = {}, tls: https.RequestOptions = {}): Promise<{ status: number; text: string; protocol: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, method, path: p, ca, agent: false, headers: { 'content-type': 'application/json', ...headers }, ...tls }, (res) => {
      const protocol = (res.socket as import('node:tls').TLSSocket).getProtocol() ?? '';
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, text, protocol }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('separate proxy port with TLS', () => {
  let b: BrokerHandle;
  let proxyPort: number;
  let ca: Buffer;
  const bootKey = `qk_test_${'A'.repeat(43)}`;

  before(async () => {
    const c = makeCert();
    ca = fs.readFileSync(c.cert);
    b = await startBroker({
      env: {
        QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PORT: '0', QUEEN_PROXY_CP_TOKEN: CP_TOKEN, QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: c.key,
        QUEEN_PROXY_BOOTSTRAP_TENANT: 'boot', QUEEN_PROXY_BOOTSTRAP_API_KEY: bootKey, LOG_FORMAT: 'json',
      },
    });
    proxyPort = proxyPortOf(b.output());
  });
  after(async () => { await b.stop(); });

  test('boot lines: own port, hardened listener with tls=true; never the key', () => {
    assert.match(b.output(), /single binary: proxy in-process on its own port; the broker router serves PORT \(internal\)/);
    assert.match(b.output(), /"tls":true,"msg":"public listener \(hardened\)"/);
    assert.match(b.output(), new RegExp(`Server listening at https://127\\.0\\.0\\.1:${proxyPort}`), 'the TLS listener\'s address line says https');
    assert.ok(!b.output().includes(bootKey), 'the bootstrap key is never logged');
    assert.ok(!b.output().includes(CP_TOKEN));
  });

  test('https answers on the proxy port with TLS 1.2 and 1.3; plain HTTP there is refused; PORT stays plain', async () => {
    const h = await httpsCall(proxyPort, ca, 'GET', '/health');
    assert.equal(h.status, 200);
    assert.equal((await httpsCall(proxyPort, ca, 'GET', '/health', undefined, {}, { maxVersion: 'TLSv1.2' })).protocol, 'TLSv1.2');
    assert.equal((await httpsCall(proxyPort, ca, 'GET', '/health', undefined, {}, { minVersion: 'TLSv1.3' })).protocol, 'TLSv1.3');
    await assert.rejects(httpsCall(proxyPort, ca, 'GET', '/health', undefined, {}, { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }), 'TLS 1.1 is refused');
    const plain = await new Promise<string>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: proxyPort, path: '/health' }, (res) => resolve(`status ${res.statusCode}`));
      req.on('error', (e) => resolve(`error ${e.message}`));
    });
    assert.match(plain, /^error|^status 400/, `plain HTTP to the TLS port: ${plain}`);
    assert.equal((await call(b.url, 'GET', '/health')).status, 200, 'PORT is plain HTTP');
  });

  test('malformed requests over TLS get the JSON 4xx PORT gives (bad method, bad version, oversized header, TE with CL), not a silent close', async () => {
    /** Writes `raw` on a TLS connection to the proxy port and resolves with everything read until it closes. */
    const overTls = (raw: string) => new Promise<string>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port: proxyPort, ca }, () => s.write(raw));
      let got = '';
      const t = setTimeout(() => { s.destroy(); resolve(got); }, 10_000);
      s.on('data', (d) => (got += d.toString()));
      s.on('close', () => { clearTimeout(t); resolve(got); });
      s.on('error', reject);
    });
    for (const [raw, status, code] of [
      ['GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
      ['GET /health HTTP/9.9\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
      [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(70_000)}\r\n\r\n`, 431, 'request_headers_too_large'],
      // 101 header lines of 4 bytes: small, but more lines than any client sends (Node would drop those past 2,000)
      [`GET /health HTTP/1.1\r\nHost: x\r\n${'a:b\r\n'.repeat(100)}\r\n`, 431, 'request_headers_too_large'],
      ['POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'invalid_request'],
    ] as const) {
      const answer = await overTls(raw);
      assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), `${raw.slice(0, 40)}: ${JSON.stringify(answer.slice(0, 200))}`);
      assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).code, code);
    }
    assert.doesNotMatch(b.output(), /"level":(40|50)[^\n]*proxy client error/, 'a malformed request is not a warning per connection');
  });

  test('the bootstrap key works through the proxy; PORT is the plain broker router without the proxy routes', async () => {
    const q = uniqueName('boot');
    const pushed = await httpsCall(proxyPort, ca, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { authorization: `Bearer ${bootKey}` });
    assert.equal(pushed.status, 201, pushed.text);
    assert.equal((await call(b.url, 'GET', '/api/cp/clusters', undefined, { 'x-queen-cp-token': CP_TOKEN })).status, 404, 'no control plane on PORT');
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204, 'the default tenant on PORT does not see the proxied tenant');
    assert.equal((await call(b.url, 'GET', '/metrics/prometheus')).status, 200, 'PORT metrics stay public');
    assert.equal((await httpsCall(proxyPort, ca, 'GET', '/metrics/prometheus')).status, 404);
  });

  test('QUEEN_PROXY_BOOTSTRAP_* is idempotent across restarts', async () => {
    const dataDir = tempDir();
    const env = { QUEEN_PROXY_BOOTSTRAP_TENANT: 'again', QUEEN_PROXY_BOOTSTRAP_API_KEY: bootKey.replace('A', 'B') };
    const first = await startProxied(env, dataDir);
    const ids = await call(first.url, 'GET', '/api/cp/clusters/again', undefined, { 'x-queen-cp-token': CP_TOKEN });
    await first.stop();
    const second = await startProxied(env, dataDir);
    try {
      const again = await call(second.url, 'GET', '/api/cp/clusters/again', undefined, { 'x-queen-cp-token': CP_TOKEN });
      assert.equal(again.body.id, ids.body.id);
      assert.equal(again.body.keys.length, 1, 'one key, not one per boot');
      assert.equal((await call(second.url, 'GET', '/api/v1/pop/queue/x', undefined, { authorization: `Bearer ${env.QUEEN_PROXY_BOOTSTRAP_API_KEY}` })).status, 204);
    } finally {
      await second.stop();
    }
  });
});

describe('shutdown through the TLS proxy', () => {
  test('SIGTERM answers a long-poll parked through the TLS proxy with 204, not a cut connection', async () => {
    const c = makeCert();
    const key = `qk_test_${'C'.repeat(43)}`;
    const b = await startBroker({ env: {
      QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PORT: '0', QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: c.key,
      QUEEN_PROXY_BOOTSTRAP_TENANT: 'stop', QUEEN_PROXY_BOOTSTRAP_API_KEY: key, LOG_FORMAT: 'json',
    } });
    const port = proxyPortOf(b.output());
    const parked = httpsCall(port, fs.readFileSync(c.cert), 'GET', `/api/v1/pop/queue/${uniqueName('stop')}?wait=true&timeout=30000`, undefined, { authorization: `Bearer ${key}` });
    await waitForParked(b.url, 1);
    assert.equal(await b.stop(), 0);
    assert.equal((await parked).status, 204);
  });
});

describe('fatal TLS configuration, before any listener binds', () => {
  test('one of the pair, an unreadable file, a bad PEM, TLS without the proxy', async () => {
    const c = makeCert();
    const bad = path.join(c.dir, 'bad.pem');
    fs.writeFileSync(bad, 'not a pem');
    const proxy = { QUEEN_PROXY_EMBEDDED: 'true' };
    // keys that parse but are not the certificate's (a P-256 one): another P-256 key, an RSA key
    const otherEc = path.join(c.dir, 'other-ec.pem');
    const rsa = path.join(c.dir, 'rsa.pem');
    fs.writeFileSync(otherEc, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    fs.writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const cases: [Record<string, string>, RegExp][] = [
      [{ ...proxy, QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: otherEc }, /fatal: QUEEN_TLS_KEY .*other-ec\.pem: the key does not belong to the certificate in QUEEN_TLS_CERT/],
      [{ ...proxy, QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: rsa }, /fatal: QUEEN_TLS_KEY .*rsa\.pem: the key does not belong to the certificate in QUEEN_TLS_CERT/],
      [{ ...proxy, QUEEN_TLS_CERT: c.cert }, /fatal: QUEEN_TLS_CERT set without QUEEN_TLS_KEY/],
      [{ ...proxy, QUEEN_TLS_KEY: c.key }, /fatal: QUEEN_TLS_KEY set without QUEEN_TLS_CERT/],
      [{ ...proxy, QUEEN_TLS_CERT: path.join(c.dir, 'missing.pem'), QUEEN_TLS_KEY: c.key }, /fatal: read .*missing\.pem: ENOENT/],
      [{ ...proxy, QUEEN_TLS_CERT: bad, QUEEN_TLS_KEY: c.key }, /fatal: QUEEN_TLS_CERT .*not a PEM certificate/],
      [{ ...proxy, QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: bad }, /fatal: QUEEN_TLS_KEY .*not a PEM private key/],
      [{ QUEEN_TLS_CERT: c.cert, QUEEN_TLS_KEY: c.key }, /fatal: QUEEN_TLS_CERT\/QUEEN_TLS_KEY are set but QUEEN_PROXY_EMBEDDED is not true/],
    ];
    for (const [env, message] of cases) {
      const r = await runBrokerExpectingExit(env);
      assert.equal(r.code, 1, r.output);
      assert.match(r.output, message);
      assert.ok(!r.output.includes('listening'), 'nothing was bound');
    }
  });
});
