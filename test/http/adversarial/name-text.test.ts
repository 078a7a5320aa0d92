/**
 * Every client-chosen identifier stored as text (KV namespaces and keys, lock names and owners,
 * timer keys, trace names, worker ids, event types, consumer groups) refuses a lone UTF-16
 * surrogate or a NUL with `400 invalid_name`, like queue and partition names: such text cannot be
 * stored as UTF-8 without being changed (it would come back as U+FFFD).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

/** JSON.stringify escapes a lone surrogate as `\ud800`, so the body is valid JSON carrying it. */
async function refused(path: string, body: unknown, why: string): Promise<void> {
  const r = await call(b.url, 'POST', path, JSON.stringify(body));
  assert.equal(r.status, 400, `${why}: ${r.status} ${r.text.slice(0, 300)}`);
  assert.equal(r.body.code, 'invalid_name', `${why}: ${r.text.slice(0, 300)}`);
}

const BAD = ['\ud800', 'a\udc00b', 'x\u0000y'];

describe('identifiers stored as text refuse lone surrogates and NUL with invalid_name', () => {
  test('KV: put, get, getMany, getPrefix keys and namespaces; nothing is stored', async () => {
    for (const bad of BAD) {
      await refused('/api/v1/kv', { operations: [{ op: 'put', ns: 'app', key: bad, value: 1, forever: true }] }, `put key ${JSON.stringify(bad)}`);
      await refused('/api/v1/kv', { operations: [{ op: 'get', ns: 'app', key: bad }] }, 'get key');
      await refused('/api/v1/kv', { operations: [{ op: 'getMany', ns: 'app', keys: ['ok', bad] }] }, 'getMany key');
      await refused('/api/v1/kv', { operations: [{ op: 'getPrefix', ns: 'app', prefix: bad }] }, 'getPrefix prefix');
      await refused('/api/v1/kv', { operations: [{ op: 'put', ns: `a${bad}`, key: 'k', value: 1, forever: true }] }, 'namespace');
    }
    const got = await call(b.url, 'POST', '/api/v1/kv', { operations: [{ op: 'getPrefix', ns: 'app', prefix: '\ufffd' }] });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body.results[0].rows, [], 'a renamed key was stored');
  });

  test('KV rider of a transaction', async () => {
    const q = uniqueName('rq');
    await refused('/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: q, payload: 1 }] }], kv: [{ op: 'put', ns: 'app', key: '\ud800', value: 1, forever: true }] }, 'rider key');
    const pop = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    assert.equal(pop.status, 204, `the refused transaction pushed: ${pop.text}`);
  });

  test('locks: name and owner', async () => {
    for (const bad of BAD) {
      await refused('/api/v1/locks', { operations: [{ op: 'acquire', name: bad, ttlSeconds: 10 }] }, 'lock name');
      await refused('/api/v1/locks', { operations: [{ op: 'acquire', name: 'l', ttlSeconds: 10, owner: bad }] }, 'lock owner');
      await refused('/api/v1/locks', { operations: [{ op: 'get', name: bad }] }, 'lock get');
    }
  });

  test('timers: key, queue, partition, txn', async () => {
    const q = uniqueName('tq');
    const base = { op: 'schedule', queue: q, timerKey: 'k', delayMs: 60_000, txn: 't', payload: Buffer.from('1').toString('base64') };
    for (const field of ['timerKey', 'queue', 'partition', 'txn']) {
      await refused('/api/v1/timers', { operations: [{ ...base, [field]: '\ud800' }] }, `timer ${field}`);
    }
  });

  test('traces: names, worker id, event type, consumer group (checked before the message lookup)', async () => {
    const base = { transactionId: 't', partitionId: '00000000-0000-0000-0000-000000000000', data: {} };
    await refused('/api/v1/traces', { ...base, traceNames: ['ok', '\ud800'] }, 'trace name');
    await refused('/api/v1/traces', { ...base, workerId: '\udc00' }, 'worker id');
    await refused('/api/v1/traces', { ...base, eventType: 'a\ud800' }, 'event type');
    await refused('/api/v1/traces', { ...base, consumerGroup: '\ud800' }, 'consumer group');
  });

  test('consumer group on pop and push trace id', async () => {
    const q = uniqueName('gq');
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=${encodeURIComponent('g\u0000')}`);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'invalid_name');
    await refused('/api/v1/push', { items: [{ queue: q, payload: 1, traceId: '\ud800' }] }, 'trace id');
  });
});
