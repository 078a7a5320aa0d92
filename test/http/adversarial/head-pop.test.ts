/**
 * Adversarial: HEAD is a safe method (RFC 9110 §9.2.1). A HEAD on a pop route must not claim,
 * lease or consume anything: monitors, proxies and `curl -I` send HEAD to any URL.
 * Today Fastify's automatic HEAD routes run the GET pop handler and throw the body away, so a
 * HEAD with autoAck=true silently consumes (loses) messages and a plain HEAD leases partitions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

async function push(queue: string, partition: string, payload: unknown): Promise<void> {
  const r = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue, partition, payload }] });
  assert.equal(r.status, 201, r.text);
}

describe('HEAD on pop routes has no side effects', () => {
  test('HEAD /api/v1/pop/queue/:q?autoAck=true does not consume the message', async () => {
    const q = uniqueName('head');
    await push(q, 'Default', 'keep-me');
    const h = await fetch(`${b.url}/api/v1/pop/queue/${q}?autoAck=true`, { method: 'HEAD' });
    await h.arrayBuffer();
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.equal(r.status, 200, `HEAD (answered ${h.status}) consumed the message: GET pop answered ${r.status}`);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['keep-me']);
  });

  test('HEAD on the partition route does not leave a lease behind', async () => {
    const q = uniqueName('head');
    await push(q, 'p1', 'still-here');
    const h = await fetch(`${b.url}/api/v1/pop/queue/${q}/partition/p1`, { method: 'HEAD' });
    await h.arrayBuffer();
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}/partition/p1`);
    assert.equal(r.status, 200, `HEAD (answered ${h.status}) leased the partition: GET pop answered ${r.status}`);
    assert.deepEqual(r.body.messages.map((m: any) => m.data), ['still-here']);
  });

  test('HEAD on the discovery pop does not claim anything', async () => {
    const q = uniqueName('headns');
    await push(q, 'Default', 'discover-me');
    const h = await fetch(`${b.url}/api/v1/pop?namespace=${q}&autoAck=true`, { method: 'HEAD' });
    await h.arrayBuffer();
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`);
    assert.equal(r.status, 200, `HEAD (answered ${h.status}) claimed the message: GET pop answered ${r.status}`);
  });
});
