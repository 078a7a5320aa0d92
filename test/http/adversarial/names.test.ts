/**
 * Adversarial: names. A name the broker accepts must be addressable by the routes that take it
 * in the URL, and the name limits (QUEEN_MAX_NAME_BYTES) apply on every route.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

describe('names', () => {
  test('a queue name that is not well-formed Unicode (lone surrogate) is refused with 400', async () => {
    // JSON allows "\ud800"; no URL can carry it (percent-decoding %ED%A0%80 is invalid UTF-8), so
    // such a queue could be pushed to (201) but never popped, looked up or deleted.
    const q = uniqueName('sur');
    const body = `{"items":[{"queue":"${q}\\ud800","payload":"stranded"}]}`;
    const r = await call(b.url, 'POST', '/api/v1/push', body);
    assert.ok(r.status >= 400 && r.status < 500, `push to a lone-surrogate queue answered ${r.status} ${r.text.slice(0, 200)}`);
    assert.equal(typeof r.body?.code, 'string');
    const c = await call(b.url, 'POST', '/api/v1/configure', `{"queue":"${q}\\udc00"}`);
    assert.ok(c.status >= 400 && c.status < 500, `configure of a lone-surrogate queue answered ${c.status}`);
  });

  test('a consumer group name over the limit is refused on the subscription route', async () => {
    const r = await call(b.url, 'POST', `/api/v1/consumer-groups/${'g'.repeat(600)}/subscription`, { subscriptionTimestamp: '2024-01-01T00:00:00Z' });
    assert.equal(r.status, 400, r.text.slice(0, 200));
    assert.equal(r.body.code, 'name_too_long');
  });

  test('a very long queue name in a pop path answers 400 name_too_long, not 404 no_such_route', async () => {
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${'q'.repeat(2000)}`);
    assert.equal(r.status, 400, r.text.slice(0, 200));
    assert.equal(r.body.code, 'name_too_long');
  });
});

describe('names at the smallest QUEEN_MAX_NAME_BYTES (16)', () => {
  // Outside check: with QUEEN_MAX_NAME_BYTES anywhere in 16…35 (a documented range) every push
  // without a transactionId was refused, because the id the broker made for it (a 36-byte UUID)
  // was held to the limit for client text; a replay's `dlq:<id>` (40 bytes) likewise.
  let s: BrokerHandle;
  before(async () => { s = await startBroker({ env: { QUEEN_MAX_NAME_BYTES: '16' } }); });
  after(async () => { await s?.stop(); });

  test('a push without transactionId is stored; client text over the limit is refused naming its own field', async () => {
    const q = `n${Date.now() % 1e9}`;
    const ok = await call(s.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }, { queue: q, payload: 2, traceId: 't'.repeat(16) }] });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body[0].status, 'queued');
    assert.equal(ok.body[0].transaction_id.length, 36);
    const txn = await call(s.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 3, transactionId: 'x'.repeat(17) }] });
    assert.equal(txn.status, 400, txn.text);
    assert.equal(txn.body.code, 'name_too_long');
    assert.match(txn.body.error, /^transactionId /);
    const trace = await call(s.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 4, traceId: 't'.repeat(17) }] });
    assert.equal(trace.status, 400, trace.text);
    assert.match(trace.body.error, /^traceId /);
    const tx = await call(s.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: q, payload: 5 }] });
    assert.equal(tx.status, 200, tx.text);
    assert.equal(tx.body.success, true);
    const popped = await call(s.url, 'GET', `/api/v1/pop/queue/${q}?batch=10&autoAck=true`);
    assert.deepEqual(popped.body.messages.map((m: { data: unknown }) => m.data), [1, 2, 5]);
  });

  test('a dead letter is replayed under its 40-byte dlq:<id>', async () => {
    const q = `d${Date.now() % 1e9}`;
    assert.equal((await call(s.url, 'POST', '/api/v1/push', { items: [{ queue: q, partition: 'p', payload: { v: 1 } }] })).status, 201);
    const m = (await call(s.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=1`)).body.messages[0];
    const a = await call(s.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq', error: 'boom' });
    assert.equal(a.body[0].success, true, a.text);
    const id = (await call(s.url, 'GET', `/api/v1/dlq?queue=${q}`)).body.messages[0].id;
    const r = await call(s.url, 'POST', `/api/v1/dlq/${id}/replay`, {});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.replayedAs.transaction_id, `dlq:${id}`);
    const again = await call(s.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=10`);
    assert.deepEqual(again.body.messages.map((x: { data: unknown }) => x.data), [{ v: 1 }]);
  });
});

describe('a NUL in any identifier', () => {
  // Outside check: on PostgreSQL (which cannot hold a NUL in text) 13 such requests answered
  // 500 internal_error; on SQLite they answered 200 as lookups of an unknown name. Both backends
  // now refuse them with 400 invalid_name before anything is read.
  const pid = '00000000-0000-0000-0000-000000000000';
  const cases: [string, string, unknown?][] = [
    ['POST', '/api/v1/push', { items: [{ queue: 'a\u0000b', payload: 1 }] }],
    ['POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: 'a\u0000b', payload: 1 }] }],
    ['POST', '/api/v1/ack', { transactionId: 't1', partitionId: pid, consumerGroup: 'g\u0000' }],
    ['POST', '/api/v1/ack', { transactionId: 't\u0000', partitionId: pid }],
    ['POST', '/api/v1/ack/batch', { acknowledgments: [{ transactionId: 't\u0000', partitionId: pid }] }],
    ['POST', '/api/v1/transaction', { operations: [{ type: 'ack', transactionId: 't\u0000', partitionId: pid }] }],
    ['GET', '/api/v1/timers/tq/%00'],
    ['GET', '/api/v1/timers/okq?after=%00'],
    ['GET', '/api/v1/dlq?consumerGroup=%00'],
    ['GET', '/api/v1/dlq?queue=%00'],
    ['DELETE', '/api/v1/resources/queues/%00'],
    ['POST', '/api/v1/lease/%00/extend', { seconds: 5 }],
    ['GET', '/api/v1/traces/by-name/%00'],
    ['DELETE', '/api/v1/consumer-groups/%00'],
    ['GET', '/api/v1/consumer-groups/%00'],
    ['GET', '/api/v1/pop/queue/okq?consumerGroup=%00'],
    ['GET', `/api/v1/messages/${pid}/t%00`],
    ['POST', '/api/v1/dlq/a%00/replay', {}],
    ['POST', '/api/v1/traces', { transactionId: 't\u0000', partitionId: pid, data: 1 }],
    ['POST', '/api/v1/transaction', { operations: [{ type: 'push', queue: 'okq', payload: 1 }], requiredLeases: ['x\u0000'] }],
    ['POST', '/api/v1/resources/kv/list', { ns: 'ns', prefix: 'a\u0000' }],
  ];
  for (const [method, path, body] of cases) {
    test(`${method} ${path}${body === undefined ? '' : ` ${JSON.stringify(body)}`} ⇒ 400 invalid_name`, async () => {
      const r = await call(b.url, method, path, body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.code, 'invalid_name', r.text);
    });
  }
  test('a NUL inside a payload is data, not a name: stored and returned as sent', async () => {
    const q = uniqueName('nulpayload');
    assert.equal((await call(b.url, 'POST', '/api/v1/push', `{"items":[{"queue":"${q}","payload":"x\\u0000y"}]}`)).status, 201);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1&autoAck=true`);
    assert.equal(p.body.messages[0].data, 'x\u0000y');
  });
});
