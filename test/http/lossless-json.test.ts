/**
 * Client JSON values come back exactly as sent: numbers keep their text (big integers, `1e400`,
 * `-0`, `1.0`, long decimals) on every path that carries a client value. Bodies are sent as RAW
 * TEXT (JSON.stringify would lose the digits before sending) and answers are checked as RAW TEXT.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';

/** A payload whose numbers a JS number would alter, compact (the stored form keeps its text). */
const P = '{"id":12345678901234567890,"seq":9007199254740993,"huge":1e400,"neg":-0,"f":1.0,"e":1e2,' +
  '"E":1E2,"d":0.1000000000000000055511151231257827,"tiny":1E-400,"arr":[1.50,-0.0,3],"at":"2024-01-05T10:00:00.000Z","ok":7}';
const NUMBER_TEXTS = ['12345678901234567890', '9007199254740993', '1e400', '-0', '1.0', '1e2', '1E2',
  '0.1000000000000000055511151231257827', '1E-400', '1.50', '-0.0'];

function assertExact(text: string, what: string): void {
  assert.ok(text.includes(P), `${what}: the payload did not come back verbatim in ${text.slice(0, 600)}`);
  for (const n of NUMBER_TEXTS) assert.ok(text.includes(n), `${what}: ${n} is missing`);
}

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

const pushRaw = (q: string, partition: string, payload: string, extra = '') =>
  call(b.url, 'POST', '/api/v1/push', `{"items":[{"queue":"${q}","partition":"${partition}","payload":${payload}${extra}}]}`);

async function poll<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('payload numbers come back exactly as sent', () => {
  test('the issue repro: push → pop keeps 12345678901234567890 and 9007199254740993', async () => {
    const q = uniqueName();
    const r = await call(b.url, 'POST', '/api/v1/push',
      `{"items":[{"queue":"${q}","partition":"a","payload":{"id":12345678901234567890,"seq":9007199254740993}}]}`);
    assert.equal(r.status, 201, r.text);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    assert.equal(p.status, 200, p.text);
    assert.ok(p.text.includes('"data":{"id":12345678901234567890,"seq":9007199254740993}'), p.text);
  });

  test('all three pop routes, and the JS-client alias `data`, return the exact text as a JSON value', async () => {
    const ns = uniqueName('ns');
    const q = `${ns}.lossless`;
    assert.equal((await pushRaw(q, 'a', P)).status, 201);
    assert.equal((await pushRaw(q, 'b', P)).status, 201);
    assert.equal((await call(b.url, 'POST', '/api/v1/push', `{"items":[{"queue":"${q}","partition":"c","data":${P}}]}`)).status, 201);
    const one = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/a?batch=5`);
    assertExact(one.text, 'partition pop');
    assert.equal(typeof one.body.messages[0].data, 'object', 'data is a JSON value, not a string');
    assert.equal(one.body.messages[0].data.ok, 7);
    assertExact((await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/c?batch=5`)).text, 'data alias');
    assertExact((await call(b.url, 'GET', `/api/v1/pop?namespace=${ns}&batch=5`)).text, 'discovery pop');
  });

  test('queue pop, message browsing (list and one) keep the text', async () => {
    const q = uniqueName();
    const r = await pushRaw(q, 'a', P, ',"transactionId":"t1"');
    assert.equal(r.status, 201, r.text);
    const list = await call(b.url, 'GET', `/api/v1/messages?queue=${q}`);
    assert.equal(list.status, 200, list.text);
    assertExact(list.text, 'messages listing');
    const pid = list.body.messages[0].partitionId;
    assertExact((await call(b.url, 'GET', `/api/v1/messages/${pid}/t1`)).text, 'one message');
    assertExact((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=5`)).text, 'queue pop');
  });

  test('transaction push → pop', async () => {
    const q = uniqueName();
    const t = await call(b.url, 'POST', '/api/v1/transaction',
      `{"operations":[{"type":"push","items":[{"queue":"${q}","partition":"a","payload":${P}}]}]}`);
    assert.equal(t.status, 200, t.text);
    assert.equal(t.body.success, true, t.text);
    assertExact((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=5`)).text, 'transaction push');
  });

  test('DLQ listing after a failed ack with retryLimit 0, then DLQ replay → pop', async () => {
    const q = uniqueName();
    assert.equal((await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { retryLimit: 0 } })).status, 200);
    assert.equal((await pushRaw(q, 'a', P)).status, 201);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    const m = p.body.messages[0];
    const a = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'failed', error: 'boom' });
    assert.equal(a.status, 200, a.text);
    const dlq = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}`);
    assert.equal(dlq.body.messages.length, 1, dlq.text);
    assertExact(dlq.text, 'DLQ listing');
    const replay = await call(b.url, 'POST', `/api/v1/dlq/${dlq.body.messages[0].id}/replay`, {});
    assert.equal(replay.status, 200, replay.text);
    assertExact((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=5`)).text, 'DLQ replay');
  });

  test('traces keep the text of `data`', async () => {
    const q = uniqueName();
    await pushRaw(q, 'a', '1', ',"transactionId":"tx"');
    const pid = (await call(b.url, 'GET', `/api/v1/messages?queue=${q}`)).body.messages[0].partitionId;
    const t = await call(b.url, 'POST', '/api/v1/traces', `{"transactionId":"tx","partitionId":"${pid}","data":${P}}`);
    assert.equal(t.status, 201, t.text);
    assertExact((await call(b.url, 'GET', `/api/v1/traces/${pid}/tx`)).text, 'traces');
  });

  test('KV put → get, getMany, getPrefix, PUT/GET by path keep the text; incr never rounds', async () => {
    const ns = uniqueName('ns');
    const put = await call(b.url, 'POST', '/api/v1/kv', `[{"op":"put","ns":"${ns}","key":"k","value":${P},"forever":true}]`);
    assert.equal(put.status, 200, put.text);
    assertExact(put.text, 'KV put answer');
    assertExact((await call(b.url, 'POST', '/api/v1/kv', `[{"op":"get","ns":"${ns}","key":"k"}]`)).text, 'KV get');
    assertExact((await call(b.url, 'POST', '/api/v1/kv', `[{"op":"getMany","ns":"${ns}","keys":["k"]}]`)).text, 'KV getMany');
    assertExact((await call(b.url, 'POST', '/api/v1/kv', `[{"op":"getPrefix","ns":"${ns}","prefix":"k"}]`)).text, 'KV getPrefix');
    assertExact((await call(b.url, 'POST', '/api/v1/resources/kv/list', { ns })).text, 'KV console listing');
    assert.equal((await call(b.url, 'PUT', `/api/v1/kv/${ns}/path/k`, `{"value":${P},"forever":true}`)).status, 200);
    assertExact((await call(b.url, 'GET', `/api/v1/kv/${ns}/path/k`)).text, 'KV GET by path');

    // incr: a delta that is not exactly a safe integer is refused, never rounded
    for (const delta of ['9007199254740993', '0.99999999999999999999', '1e400']) {
      const r = await call(b.url, 'POST', '/api/v1/kv', `[{"op":"incr","ns":"${ns}","key":"n","delta":${delta},"forever":true}]`);
      assert.equal(r.status, 400, `delta ${delta}: ${r.text}`);
      assert.ok(r.body.code, r.text);
    }
    const ok = await call(b.url, 'POST', '/api/v1/kv', `[{"op":"incr","ns":"${ns}","key":"n","delta":1e1,"forever":true}]`);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.results[0].value, 10, ok.text);
    // incr over a stored big integer answers the type verdict and leaves the value as it was
    await call(b.url, 'POST', '/api/v1/kv', `[{"op":"put","ns":"${ns}","key":"big","value":12345678901234567890,"forever":true}]`);
    const big = await call(b.url, 'POST', '/api/v1/kv', `[{"op":"incr","ns":"${ns}","key":"big","delta":1,"forever":true}]`);
    assert.equal(big.body.results[0].applied, false, big.text);
    assert.equal(big.body.results[0].reason, 'type', big.text);
    assert.ok(big.text.includes('"value":12345678901234567890'), big.text);
  });

  test('timers: schedule → fire → pop keeps the text', async () => {
    const q = uniqueName();
    const s = await call(b.url, 'POST', '/api/v1/timers', { operations: [
      { op: 'schedule', queue: q, timerKey: 'k', delayMs: 0, txn: 'tt', payload: Buffer.from(P, 'utf8').toString('base64') },
    ] });
    assert.equal(s.status, 200, s.text);
    const got = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=10000&batch=5`);
    assert.equal(got.status, 200, got.text);
    assertExact(got.text, 'fired timer');
  });

  test('push maintenance: spooled, replayed, popped with the text', async () => {
    const q = uniqueName();
    assert.equal((await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: true })).status, 200);
    let off: boolean;
    try {
      const r = await pushRaw(q, 'a', P);
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body[0].status, 'buffered', r.text);
    } finally {
      off = (await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: false })).status === 200;
    }
    assert.ok(off);
    const got = await poll('the replayed message', async () => {
      const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=5`);
      return p.status === 200 ? p : undefined;
    });
    assertExact(got.text, 'spool replay');
  });

  test('`__proto__` keys and duplicate keys in a lossless body behave as with JSON.parse', async () => {
    const q = uniqueName();
    const r = await pushRaw(q, 'a', '{"__proto__":{"x":1.0},"a":1,"a":2.50}');
    assert.equal(r.status, 201, r.text);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    assert.ok(p.text.includes('"data":{"__proto__":{"x":1.0},"a":2.50}'), p.text);
    const bad = await call(b.url, 'POST', '/api/v1/push', `{"items":[{"queue":"${q}","payload":1.0}`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'bad_json');
  });

  test('control numbers written as 1.0 or 1e1 still validate as integers', async () => {
    const q = uniqueName();
    const c = await call(b.url, 'POST', '/api/v1/configure', `{"queue":"${q}","options":{"leaseTime":60.0,"retryLimit":3e0}}`);
    assert.equal(c.status, 200, c.text);
    const d = await call(b.url, 'POST', '/api/v1/configure', `{"queue":"${q}","options":{"leaseTime":60.5}}`);
    assert.equal(d.status, 400, d.text);
  });
});

describe('encrypted queues', () => {
  let e: BrokerHandle;
  before(async () => { e = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: randomBytes(32).toString('hex') } }); });
  after(async () => { await e.stop(); });

  test('push → pop of an encrypted queue keeps the text', async () => {
    const q = uniqueName();
    assert.equal((await call(e.url, 'POST', '/api/v1/configure', { queue: q, options: { encryptionEnabled: true } })).status, 200);
    const r = await call(e.url, 'POST', '/api/v1/push', `{"items":[{"queue":"${q}","partition":"a","payload":${P}}]}`);
    assert.equal(r.status, 201, r.text);
    const p = await call(e.url, 'GET', `/api/v1/pop/queue/${q}?batch=5`);
    assert.equal(p.status, 200, p.text);
    assertExact(p.text, 'encrypted pop');
    assertExact((await call(e.url, 'GET', `/api/v1/messages?queue=${q}`)).text, 'encrypted browse');
  });
});
