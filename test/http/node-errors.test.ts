/**
 * Answers produced below the routes (Node's HTTP parser, the `Expect` check, the missing `Host`
 * check) carry the registry's `{"error","code"}` body and `Content-Type: application/json`.
 * Raw sockets, so nothing between the test and the broker fixes up the request.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { nodeLevelGuard } from '../../src/http/errors.js';

let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { QUEEN_MAX_HEADER_BYTES: '4096' } }); });
after(async () => { await b.stop(); });

interface RawAnswer { status: number; headers: Record<string, string>; body: string }

/** Writes `request` as is and reads until the broker closes the socket or one full answer is in. */
function rawRequest(request: string | Buffer, port = b.port): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const parse = (): RawAnswer | undefined => {
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) return undefined;
      const head = buf.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(head[0]!.split(' ')[1]);
      const headers: Record<string, string> = {};
      for (const l of head.slice(1)) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const len = Number(headers['content-length'] ?? NaN);
      const body = buf.subarray(end + 4);
      if (Number.isFinite(len) && body.length < len) return undefined;
      return { status, headers, body: body.subarray(0, Number.isFinite(len) ? len : body.length).toString('utf8') };
    };
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const a = parse();
      if (a && a.headers['content-length'] !== undefined) { s.destroy(); resolve(a); }
    });
    s.on('end', () => { const a = parse(); if (a) resolve(a); else reject(new Error(`no answer: ${JSON.stringify(buf.toString('latin1'))}`)); });
    s.on('error', reject);
    s.write(request);
  });
}

function assertShape(a: RawAnswer, status: number, code: string): void {
  assert.equal(a.status, status, JSON.stringify(a));
  assert.match(a.headers['content-type'] ?? '', /^application\/json/, JSON.stringify(a));
  const body = JSON.parse(a.body) as { error: unknown; code: unknown };
  assert.equal(body.code, code, a.body);
  assert.equal(typeof body.error, 'string', a.body);
  assert.ok((body.error as string).length > 0, a.body);
}

describe('answers below the routes carry the error shape', () => {
  test('Expect: teapot answers 417 expectation_failed', async () => {
    const body = '{"items":[{"queue":"q-expect","payload":1}]}';
    const a = await rawRequest(`POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: teapot\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    assertShape(a, 417, 'expectation_failed');
    const pop = await call(b.url, 'GET', '/api/v1/pop/queue/q-expect?batch=1');
    assert.equal(pop.status, 204, 'the refused push was stored');
  });

  test('an HTTP/1.1 request without Host answers 400 invalid_request', async () => {
    assertShape(await rawRequest('GET /health HTTP/1.1\r\n\r\n'), 400, 'invalid_request');
  });

  test('a request with two Host header lines answers 400 invalid_request (RFC 9112 §3.2)', async () => {
    const a = await rawRequest('GET /health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n');
    assertShape(a, 400, 'invalid_request');
    assert.match(JSON.parse(a.body).error, /Host/);
  });

  test('Expect: 100-continue with a Content-Length over QUEEN_MAX_BODY_BYTES is refused before the body is invited', async () => {
    const s = net.connect(b.port, '127.0.0.1');
    try {
      const first = await new Promise<string>((resolve, reject) => {
        let got = '';
        s.on('data', (d: Buffer) => { got += d.toString('latin1'); if (got.includes('\r\n\r\n')) resolve(got); });
        s.on('error', reject);
        s.on('end', () => resolve(got));
        s.write(`POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${128 * 1024 * 1024}\r\n\r\n`);
      });
      assert.match(first, /^HTTP\/1\.1 413 /, `the first answer: ${JSON.stringify(first.slice(0, 200))}`);
      assert.match(first, /body_too_large/);
    } finally {
      s.destroy();
    }
  });

  test('Expect: 100-continue within the limit is invited and then served', async () => {
    const body = '{"items":[{"queue":"q-continue","payload":7}]}';
    const s = net.connect(b.port, '127.0.0.1');
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        let got = '';
        let sent = false;
        s.on('data', (d: Buffer) => {
          got += d.toString('latin1');
          if (!sent && /^HTTP\/1\.1 100 /.test(got) && got.includes('\r\n\r\n')) { sent = true; s.write(body); }
          if (/HTTP\/1\.1 201 [^]*\r\n\r\n\[/.test(got) && got.endsWith(']')) resolve(got);
        });
        s.on('error', reject);
        s.on('end', () => resolve(got));
        s.write(`POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`);
      });
      assert.match(answer, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /, JSON.stringify(answer.slice(0, 200)));
    } finally {
      s.destroy();
    }
    const pop = await call(b.url, 'GET', '/api/v1/pop/queue/q-continue?batch=1');
    assert.equal(pop.body.messages[0].data, 7);
  });

  test('a malformed request line answers 400 invalid_request', async () => {
    assertShape(await rawRequest('GET /health HTTP/9.Z\r\nHost: x\r\n\r\n'), 400, 'invalid_request');
    assertShape(await rawRequest('BL\u0001AH\r\n\r\n'), 400, 'invalid_request');
  });

  test('bad chunked framing answers 400 invalid_request', async () => {
    assertShape(await rawRequest('POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nxx\r\n0\r\n\r\n'), 400, 'invalid_request');
  });

  test('headers over QUEEN_MAX_HEADER_BYTES answer 431 request_headers_too_large', async () => {
    assertShape(await rawRequest(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(8000)}\r\n\r\n`), 431, 'request_headers_too_large');
  });

  test('more than 100 header lines answer 431 request_headers_too_large (none silently dropped); 100 are served', async () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `x-h${i}: v\r\n`).join('');
    assertShape(await rawRequest(`GET /health HTTP/1.1\r\nHost: x\r\n${lines(100)}\r\n`), 431, 'request_headers_too_large'); // 101 lines
    assertShape(await rawRequest(`GET /health HTTP/1.1\r\nHost: x\r\n${'a:b\r\n'.repeat(2500)}\r\n`), 431, 'request_headers_too_large');
    assertShape(await rawRequest(`GET /health HTTP/1.1\r\n${lines(150)}Host: x\r\n\r\n`), 431, 'request_headers_too_large'); // not a missing Host
    const ok = await rawRequest(`GET /health HTTP/1.1\r\nHost: x\r\n${lines(98)}Connection: close\r\n\r\n`); // 100 lines
    assert.equal(ok.status, 200, JSON.stringify(ok));
  });

  test('a request arriving while the app closes answers 503 shutting_down (the guard, in process)', async () => {
    let closing = false;
    let reached = 0;
    const server = http.createServer({ requireHostHeader: false }, nodeLevelGuard((_req, res) => { reached++; res.end('ok'); }, () => closing));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const open = await rawRequest('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', port).catch(() => undefined);
      assert.equal(reached, 1, `the guard did not pass an ordinary request: ${JSON.stringify(open)}`);
      closing = true;
      assertShape(await rawRequest('GET / HTTP/1.1\r\nHost: x\r\n\r\n', port), 503, 'shutting_down');
      assert.equal(reached, 1);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  test('the broker stays healthy', async () => {
    const r = await call(b.url, 'GET', '/health');
    assert.equal(r.status, 200);
  });
});
