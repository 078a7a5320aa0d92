import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitForParked } from '../helpers/wait.js';

// One broker for the file (its tests use their own queue names): the bounds below are low so that
// each is reached with a few requests.
let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { QUEEN_MAX_BODY_BYTES: '4096', QUEEN_MAX_PUSH_ITEMS: '10', QUEEN_MAX_WAITERS_PER_QUEUE: '3' } }); });
after(async () => { await b.stop(); });

function expectError(r: { status: number; body: any }, status: number, code: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.code, code);
  assert.equal(typeof r.body.error, 'string');
  assert.ok(r.body.error.length > 0);
}

describe('bad input gets a clear 4xx, never a 500', () => {
  test('malformed JSON', async () => {
    const r = await call(b.url, 'POST', '/api/v1/push', '{"items": [');
    expectError(r, 400, 'bad_json');
    assert.match(r.body.error, /^bad body: /);
  });

  test('a body that starts with a byte order mark is refused, naming the mark', async () => {
    const r = await call(b.url, 'POST', '/api/v1/push', '\ufeff{"items":[]}');
    expectError(r, 400, 'bad_json');
    assert.match(r.body.error, /byte order mark \(U\+FEFF\)/);
  });

  // JSON text is UTF-8 (RFC 8259 §8.1). Decoding other bytes leniently would store U+FFFD in place
  // of what was sent: altered data behind a 201 (the reference hardened the same input in 0.15.5,
  // queen-mq/queen: CHANGELOG.md, "Malformed-payload hardening").
  test('a body that is not valid UTF-8 answers 400 bad_json and stores nothing', async () => {
    const q = uniqueName();
    const raw = (bytes: number[]) => Buffer.concat([Buffer.from(`{"items":[{"queue":"${q}","payload":"a`), Buffer.from(bytes), Buffer.from('b"}]}')]);
    const send = async (path: string, body: Buffer, encoding?: string) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (encoding) headers['content-encoding'] = encoding;
      const r = await fetch(b.url + path, { method: 'POST', headers, body: new Uint8Array(body) });
      return { status: r.status, body: await r.json() as any };
    };
    const cases: Array<[string, number[]]> = [
      ['a stray continuation byte', [0x80]],
      ['bytes that never occur in UTF-8', [0xff, 0xfe]],
      ['a truncated sequence', [0xe2, 0x82]],
      ['an overlong encoding of "/"', [0xc0, 0xaf]],
      ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ];
    for (const [what, bytes] of cases) {
      const r = await send('/api/v1/push', raw(bytes));
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'bad_json', what);
      assert.match(r.body.error, /UTF-8/, what);
    }
    // the same bytes behind a Content-Encoding are judged after decoding
    const { gzipSync } = await import('node:zlib');
    const gz = await send('/api/v1/push', gzipSync(raw([0xff])), 'gzip');
    assert.equal(gz.status, 400, JSON.stringify(gz.body));
    assert.equal(gz.body.code, 'bad_json');
    // other routes share the parser: a KV value
    const kv = await send('/api/v1/kv', Buffer.concat([Buffer.from('{"operations":[{"op":"put","ns":"utf8ns","key":"k","ttlSeconds":60,"value":"'), Buffer.from([0xc3]), Buffer.from('"}]}')]));
    assert.equal(kv.status, 400, JSON.stringify(kv.body));
    assert.equal((await call(b.url, 'POST', '/api/v1/kv', { operations: [{ op: 'get', ns: 'utf8ns', key: 'k' }] })).body.results[0].found, false);
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?autoAck=true`)).status, 204, 'nothing was stored');
    // valid multi-byte text (2, 3 and 4 bytes) is stored and returned as sent
    const good = await send('/api/v1/push', Buffer.from(`{"items":[{"queue":"${q}","payload":"é€😀"}]}`));
    assert.equal(good.status, 201, JSON.stringify(good.body));
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?autoAck=true`)).body.messages[0].data, 'é€😀');
  });

  test('wrong types in push items', async () => {
    expectError(await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 5, payload: 1 }] }), 400, 'invalid_request');
    expectError(await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'q', partition: 7, payload: 1 }] }), 400, 'invalid_request');
    expectError(await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'q' }] }), 400, 'invalid_request');
    expectError(await call(b.url, 'POST', '/api/v1/push', { items: 'nope' }), 400, 'items_required');
    expectError(await call(b.url, 'POST', '/api/v1/push', {}), 400, 'items_required');
    expectError(await call(b.url, 'POST', '/api/v1/push', [1, 2]), 400, 'items_required');
  });

  test('too many items in one push', async () => {
    const items = Array.from({ length: 11 }, () => ({ queue: 'q', payload: 1 }));
    expectError(await call(b.url, 'POST', '/api/v1/push', { items }), 400, 'batch_too_large');
  });

  test('a body over QUEEN_MAX_BODY_BYTES answers 413', async () => {
    const r = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'q', payload: 'x'.repeat(10_000) }] });
    expectError(r, 413, 'body_too_large');
  });

  // Refused from its head (here the query string, before any body is read): the broker answers and
  // closes rather than reading on a body nobody will use; a chunked one could be endless.
  test('a request refused from its head while its chunked body keeps coming answers and closes the connection', async () => {
    const answer = await new Promise<{ text: string; closed: boolean; sentKiB: number }>((resolve) => {
      const s = net.connect(Number(new URL(b.url).port), '127.0.0.1');
      let text = '';
      let sentKiB = 0;
      const chunk = `400\r\n${'x'.repeat(1024)}\r\n`;
      // Keeps sending 1 KiB chunks (up to 5 MiB) until the broker closes its side.
      const pump = setInterval(() => { if (!s.destroyed && sentKiB < 5120) { s.write(chunk); sentKiB++; } }, 1);
      const t = setTimeout(() => { clearInterval(pump); s.destroy(); resolve({ text, closed: false, sentKiB }); }, 10_000);
      s.on('data', (d) => (text += d.toString()));
      s.on('close', () => { clearTimeout(t); clearInterval(pump); resolve({ text, closed: true, sentKiB }); });
      s.on('error', () => undefined);
      s.write('POST /api/v1/push?x=%FF HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    });
    assert.match(answer.text, /^HTTP\/1\.1 400 /, answer.text);
    assert.match(answer.text, /\r\nconnection: close\r\n/i);
    assert.equal(JSON.parse(answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4)).code, 'invalid_request');
    assert.ok(answer.closed, 'the broker closed the connection');
    assert.ok(answer.sentKiB < 5120, `the broker stopped reading (the client sent ${answer.sentKiB} KiB)`);
  });

  test('non-numeric or out-of-range batch, timeout, partitions; bad booleans', async () => {
    const q = uniqueName();
    for (const qs of ['batch=abc', 'batch=0', 'batch=-1', 'batch=999999999', 'timeout=soon', 'timeout=-5', 'partitions=0', 'wait=maybe', 'autoAck=1', 'leaseSeconds=0']) {
      expectError(await call(b.url, 'GET', `/api/v1/pop/queue/${q}?${qs}`), 400, 'invalid_request');
    }
  });

  test('configure: missing queue, bad mode, bad option values name the option', async () => {
    expectError(await call(b.url, 'POST', '/api/v1/configure', {}), 400, 'queue_required');
    const typed = await call(b.url, 'POST', '/api/v1/configure', { queue: 1 });
    expectError(typed, 400, 'queue_required');
    assert.equal(typed.body.error, 'queue must be a string, got number');
    expectError(await call(b.url, 'POST', '/api/v1/configure', { queue: 'q', mode: 'upsert' }), 400, 'invalid_request');
    const r = await call(b.url, 'POST', '/api/v1/configure', { queue: 'q', options: { leaseTime: 'long' } });
    expectError(r, 400, 'invalid_option');
    assert.equal(r.body.invalid, 'leaseTime');
    // priority is an int32 (-2^31 included); a digit string is digits only (outside check).
    const low = await call(b.url, 'POST', '/api/v1/configure', { queue: uniqueName('prio'), options: { priority: -2147483648 } });
    assert.equal(low.status, 200, low.text);
    assert.equal(low.body.options.priority, -2147483648);
    expectError(await call(b.url, 'POST', '/api/v1/configure', { queue: 'q', options: { priority: -2147483649 } }), 400, 'invalid_option');
    for (const text of [' 60', '60 ', '60\n']) {
      const padded = await call(b.url, 'POST', '/api/v1/configure', { queue: 'q', options: { leaseTime: text } });
      expectError(padded, 400, 'invalid_option');
      assert.equal(padded.body.invalid, 'leaseTime');
    }
    const digits = await call(b.url, 'POST', '/api/v1/configure', { queue: uniqueName('digits'), options: { leaseTime: '60' } });
    assert.equal(digits.body.options.leaseTime, 60);
    const r2 = await call(b.url, 'POST', '/api/v1/configure', { queue: 'q', options: { retryLimit: -1 } });
    assert.equal(r2.body.invalid, 'retryLimit');
  });

  test('configure merges by default and replaces on request; null resets to the default', async () => {
    const q = uniqueName();
    await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { retryLimit: 7, leaseTime: 10 } });
    let r = await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { priority: 2 } });
    assert.equal(r.body.options.retryLimit, 7, 'merge keeps absent keys');
    assert.equal(r.body.options.priority, 2);
    r = await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { leaseTime: null } });
    assert.equal(r.body.options.leaseTime, 300, 'null resets');
    r = await call(b.url, 'POST', '/api/v1/configure', { queue: q, mode: 'replace', options: { priority: 1 } });
    assert.equal(r.body.options.retryLimit, 3, 'replace starts from the defaults');
  });

  test('acks: missing fields and wrong types', async () => {
    expectError(await call(b.url, 'POST', '/api/v1/ack', {}), 400, 'invalid_request');
    expectError(await call(b.url, 'POST', '/api/v1/ack', { transactionId: 1, partitionId: 'p' }), 400, 'invalid_request');
    expectError(await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: 'x' }), 400, 'invalid_request');
    const r = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: [{ transactionId: 'a', partitionId: 'nope' }, { transactionId: 'b', partitionId: 'nope' }] });
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 2, 'one outcome per ack, even when unresolvable');
    assert.ok(r.body.every((x: any) => x.success === false));
  });

  test('lease extension with a bad body', async () => {
    expectError(await call(b.url, 'POST', '/api/v1/lease/abc/extend', { seconds: 'x' }), 400, 'invalid_request');
    expectError(await call(b.url, 'POST', '/api/v1/lease/abc/extend', [1]), 400, 'invalid_request');
  });

  test('names over the length limit', async () => {
    const long = 'x'.repeat(600);
    expectError(await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: long, payload: 1 }] }), 400, 'name_too_long');
  });

  test('unknown routes answer 404 no_such_route; unknown queue detail 404', async () => {
    expectError(await call(b.url, 'GET', '/api/v1/nothing-here'), 404, 'no_such_route');
    expectError(await call(b.url, 'POST', '/api/v1/queues/x/clear'), 404, 'no_such_route');
    expectError(await call(b.url, 'GET', `/api/v1/resources/queues/${uniqueName()}`), 404, 'queue_not_found');
  });

  test('dot segments, empty segments and undecodable paths answer 400 invalid_path (raw paths, no client normalisation)', async () => {
    const raw = (path: string) => new Promise<{ status: number; body: any }>((resolve, reject) => {
      const u = new URL(b.url);
      const req = http.request({ host: u.hostname, port: u.port, path, method: 'GET' }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      });
      req.on('error', reject);
      req.end();
    });
    for (const path of ['/assets/../api/v1/system/maintenance', '/api/v1//resources/queues', '/api/v1/resources/./queues', '/health/..', '/api/v1/pop/queue/%E2%82']) {
      const r = await raw(path);
      assert.equal(r.status, 400, path);
      assert.equal(r.body.code, 'invalid_path', path);
      assert.equal(r.body.error, 'invalid request path');
    }
    assert.equal((await raw('/api/v1/pop/queue/a%2Fb')).status, 204, 'an encoded slash in a name is a name, not a separator');
  });

  // A query parser that keeps a broken escape as its three characters would read `%FF` and `%25FF`
  // as the same consumer group: two different requests, one name.
  test('a query string with a broken percent escape or one that is not UTF-8 answers 400 invalid_request naming the parameter', async () => {
    const q = uniqueName();
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] })).status, 201);
    for (const [query, name] of [['consumerGroup=%FF', 'consumerGroup'], ['consumerGroup=g%E2%82', 'consumerGroup'], ['batch=1&consumerGroup=a%zz', 'consumerGroup'], ['wait=false&%FF=1', '%FF']] as const) {
      const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?${query}`);
      expectError(r, 400, 'invalid_request');
      assert.match(r.body.error, /percent-encoded UTF-8/, query);
      assert.ok(r.body.error.includes(JSON.stringify(name)), `${query}: ${r.body.error}`);
    }
    const literal = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=%25FF&autoAck=true`);
    assert.equal(literal.status, 200, literal.text);
    assert.equal(literal.body.consumerGroup, '%FF', 'an escaped percent sign is a percent sign');
    const utf8 = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=caf%C3%A9+x&autoAck=true`);
    assert.equal(utf8.status, 200, utf8.text);
    assert.equal(utf8.body.consumerGroup, 'café x');
  });

  test('oversized headers answer 431 in the registry shape', async () => {
    const r = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const u = new URL(b.url);
      const req = http.request({ host: u.hostname, port: u.port, path: '/health', method: 'GET', headers: { 'x-big': 'y'.repeat(20_000) } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(r.status, 431);
    assert.equal(r.body.code, 'request_headers_too_large');
  });

  test('the broker stays healthy after all of the above', async () => {
    const r = await call(b.url, 'GET', '/health');
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'healthy');
  });
});

describe('parked long-polls are bounded', () => {
  test('one more long-poll than QUEEN_MAX_WAITERS_PER_QUEUE answers 429 too_many_waiters; the others still get messages', async () => {
    const q = uniqueName();
    const parked = Array.from({ length: 3 }, (_, i) => call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=10000&consumerGroup=g${i}&subscriptionMode=all`));
    await waitForParked(b.url, 3);
    const extra = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=10000`);
    assert.equal(extra.status, 429);
    assert.equal(extra.body.code, 'too_many_waiters');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'x' }] });
    const got = await Promise.all(parked);
    assert.deepEqual(got.map((r) => r.status), [200, 200, 200]);
    assert.equal((await call(b.url, 'GET', '/health')).status, 200);
  });
});
