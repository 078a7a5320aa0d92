/**
 * Request bodies with `Content-Encoding`: gzip, deflate and br are decoded, with the decoded size
 * capped by QUEEN_MAX_BODY_BYTES (no decompression bomb); other encodings answer 415; and a
 * malformed body's error message never quotes the body.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';

const LIMIT = 4 * 1024 * 1024;
let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { QUEEN_MAX_BODY_BYTES: String(LIMIT) } }); });
after(async () => { await b.stop(); });

async function post(path: string, body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; text: string; body: any }> {
  const r = await fetch(b.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : new Uint8Array(body) });
  const text = await r.text();
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { parsed = undefined; }
  return { status: r.status, text, body: parsed };
}

/** Peak resident set of the broker process, bytes (Linux /proc). */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, 'no VmHWM in /proc status');
  return Number(m[1]) * 1024;
}

const encoders: [string, (b: Buffer) => Buffer][] = [
  ['gzip', (x) => zlib.gzipSync(x)],
  ['deflate', (x) => zlib.deflateSync(x)],
  ['br', (x) => zlib.brotliCompressSync(x)],
  ['GZip', (x) => zlib.gzipSync(x)],
];

describe('Content-Encoding of request bodies', () => {
  for (const [enc, encode] of encoders) {
    test(`a ${enc} push is stored and popped intact`, async () => {
      const q = uniqueName(`enc-${enc.toLowerCase()}`);
      const payload = { id: 7, text: 'é'.repeat(100), list: Array.from({ length: 50 }, (_, i) => i) };
      const r = await post('/api/v1/push', encode(Buffer.from(JSON.stringify({ items: [{ queue: q, partition: 'p', payload }] }))), { 'content-encoding': enc });
      assert.equal(r.status, 201, r.text.slice(0, 300));
      const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
      assert.equal(pop.status, 200, pop.text);
      assert.equal(pop.body.messages.length, 1);
      assert.deepEqual(pop.body.messages[0].data, payload);
    });
  }

  test('a gzip bomb (1 MB expanding to 1 GiB) answers 413 body_too_large without decompressing it all', async () => {
    const member = zlib.gzipSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 });
    const bomb = Buffer.concat(Array<Buffer>(64).fill(member)); // concatenated gzip members: 64 × 16 MiB of zeros
    const r = await post('/api/v1/push', bomb, { 'content-encoding': 'gzip' });
    assert.equal(r.status, 413, r.text.slice(0, 300));
    assert.equal(r.body.code, 'body_too_large');
    const health = await call(b.url, 'GET', '/health');
    assert.equal(health.status, 200);
    // The broker never held more than a small multiple of the limit: not the 1 GiB the bomb expands to.
    const peak = peakRss(b.proc.pid!);
    assert.ok(peak < 256 * 1024 * 1024, `peak RSS ${peak} bytes`);
  });

  test('a decoded body over the limit is refused even when the encoded one is small', async () => {
    const big = Buffer.from(JSON.stringify({ items: [{ queue: uniqueName('big'), payload: 'x'.repeat(LIMIT) }] }));
    const r = await post('/api/v1/push', zlib.gzipSync(big), { 'content-encoding': 'gzip' });
    assert.equal(r.status, 413, r.text.slice(0, 300));
    assert.equal(r.body.code, 'body_too_large');
  });

  test('an unknown or stacked encoding answers 415 unsupported_encoding naming it', async () => {
    for (const enc of ['compress', 'zstd', 'gzip, gzip']) {
      const r = await post('/api/v1/push', '{"items":[]}', { 'content-encoding': enc });
      assert.equal(r.status, 415, `${enc}: ${r.text}`);
      assert.equal(r.body.code, 'unsupported_encoding');
      assert.ok(r.body.error.includes(enc), r.body.error);
    }
  });

  test('a body that is not what its encoding says answers 400 without quoting it', async () => {
    const r = await post('/api/v1/push', 'SECRETnotgzip', { 'content-encoding': 'gzip' });
    assert.equal(r.status, 400, r.text);
    assert.ok(!r.text.includes('SECRET'), r.text);
  });

  test('identity is accepted as no encoding', async () => {
    const r = await post('/api/v1/push', JSON.stringify({ items: [{ queue: uniqueName('id'), payload: 1 }] }), { 'content-encoding': 'identity' });
    assert.equal(r.status, 201, r.text);
  });

  test('malformed JSON answers bad_json saying what is wrong, with none of the body', async () => {
    for (const body of ['SECRETx', '{"SECRET": oops}', '{"a":"SECRET', '[1,2] SECRET', '{SECRET:1}', 'tSECRET']) {
      for (const [enc, encode] of [['identity', (x: Buffer) => x], ['gzip', (x: Buffer) => zlib.gzipSync(x)]] as const) {
        const r = await post('/api/v1/push', encode(Buffer.from(body)), { 'content-encoding': enc });
        assert.equal(r.status, 400, `${body}: ${r.text}`);
        assert.equal(r.body.code, 'bad_json', r.text);
        assert.ok(!r.body.error.includes('SECRET') && !r.body.error.includes('oops'), `${body} echoed: ${r.body.error}`);
        assert.match(r.body.error, /^bad body: /, r.body.error);
      }
    }
  });
});
