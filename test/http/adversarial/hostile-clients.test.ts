/**
 * Adversarial: hostile and careless clients that the broker handles well today (guards).
 * Long-poll cap per queue, waiters freed on disconnect, abandoned waiters claim nothing,
 * concurrent duplicate acks, a queue deleted under parked consumers, hostile JSON keys.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { parkedConsumers as parkedOn, waitFor, waitForParked } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker({ env: { QUEEN_MAX_WAITERS_PER_QUEUE: '5' } }); });
after(async () => { await b.stop(); });

const parkedConsumers = () => parkedOn(b.url);

/** Parks a raw long-poll and returns a handle that destroys its socket. */
function park(path: string): { destroy(): void; done: Promise<number | 'closed'> } {
  let req!: http.ClientRequest;
  const done = new Promise<number | 'closed'>((resolve) => {
    req = http.get(b.url + path, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); });
    req.on('error', () => resolve('closed'));
  });
  return { destroy: () => req.destroy(), done };
}

describe('hostile clients', () => {
  test('parked long-polls beyond QUEEN_MAX_WAITERS_PER_QUEUE get 429 and disconnects free their slots', async () => {
    const q = uniqueName('lp');
    const waiters = Array.from({ length: 7 }, () => park(`/api/v1/pop/queue/${q}?wait=true&timeout=20000`));
    // Two are refused and answer at once (had they parked, they would answer 204 after 20 s). Which
    // two depends on which empty claims finish first (any order on a shared backend).
    const answered: (number | 'closed')[] = [];
    for (const w of waiters) void w.done.then((s) => answered.push(s));
    await waitFor(async () => answered.length === 2, { what: 'two pops refused' });
    assert.deepEqual(answered, [429, 429]);
    await waitForParked(b.url, 5);
    waiters.forEach((w) => w.destroy());
    await waitFor(async () => (await parkedConsumers()) === 0, { what: 'disconnected waiters to leave the parked count' });
    const again = Array.from({ length: 5 }, () => park(`/api/v1/pop/queue/${q}?wait=true&timeout=500`));
    assert.deepEqual(await Promise.all(again.map((w) => w.done)), [204, 204, 204, 204, 204]);
  });

  test('a waiter that disconnected claims nothing, even with autoAck', async () => {
    const q = uniqueName('ab');
    const w = [park(`/api/v1/pop/queue/${q}?wait=true&timeout=10000&autoAck=true`), park(`/api/v1/pop/queue/${q}?wait=true&timeout=10000`)];
    await waitForParked(b.url, 2);
    w.forEach((x) => x.destroy());
    await waitForParked(b.url, 0);
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'for-a-live-consumer' }] })).status, 201);
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['for-a-live-consumer']);
  });

  test('twenty concurrent completes of one message: one moves the cursor, the rest are no-ops', async () => {
    const q = uniqueName('dup');
    await call(b.url, 'POST', '/api/v1/push', { items: [0, 1, 2].map((i) => ({ queue: q, payload: i, transactionId: `t${i}` })) });
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=3`);
    const m = p.body.messages[1];
    const body = { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' };
    const rs = await Promise.all(Array.from({ length: 20 }, () => call(b.url, 'POST', '/api/v1/ack', body)));
    assert.ok(rs.every((r) => r.status === 200 && r.body.length === 1 && r.body[0].success === true));
    assert.equal(rs.filter((r) => r.body[0].noop === false).length, 1);
    const d = await call(b.url, 'GET', `/api/v1/resources/queues/${q}`);
    assert.equal(d.body.totals.total, 3);
  });

  test('a queue deleted under parked consumers: the next push still wakes them', async () => {
    const q = uniqueName('del');
    await call(b.url, 'POST', '/api/v1/configure', { queue: q });
    const a = call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=5000`);
    const g = call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=5000&consumerGroup=late`);
    await waitForParked(b.url, 2);
    assert.equal((await call(b.url, 'DELETE', `/api/v1/resources/queues/${q}`)).status, 200);
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'after-delete' }] })).status, 201);
    for (const r of await Promise.all([a, g])) {
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.messages.map((m: any) => m.data), ['after-delete']);
    }
  });

  test('__proto__ and constructor keys are data, not prototype pollution', async () => {
    const q = uniqueName('proto');
    const r = await call(b.url, 'POST', '/api/v1/push', `{"items":[{"queue":"${q}","payload":{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}}]}`);
    assert.equal(r.status, 201);
    const c = await call(b.url, 'POST', '/api/v1/configure', `{"queue":"${q}","options":{"__proto__":{"leaseTime":"bad"}}}`);
    assert.equal(c.status, 200);
    assert.equal(c.body.options.leaseTime, 300);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.equal(p.status, 200);
    assert.deepEqual(Object.keys(p.body.messages[0].data).sort(), ['__proto__', 'constructor']);
    assert.equal((await call(b.url, 'GET', '/health')).status, 200);
  });
});
