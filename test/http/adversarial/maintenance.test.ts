/**
 * Adversarial: push maintenance. While it is on, pushes are spooled and replayed in order when
 * it is turned off. A transaction push must not jump that queue: today it is written at once,
 * so a message pushed (and answered `buffered`) earlier is delivered after it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

describe('push maintenance and transactions', () => {
  test('a transaction push during push maintenance neither bypasses the spool nor overtakes earlier pushes', async () => {
    const q = uniqueName('mt');
    assert.equal((await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: true })).status, 200);
    let txn;
    try {
      const first = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'first' }] });
      assert.equal(first.status, 201);
      assert.equal(first.body[0].status, 'buffered');
      txn = await call(b.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: q, payload: 'second' }] }] });
      // Nothing may be visible while maintenance is on.
      const during = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10&autoAck=true`);
      assert.equal(during.status, 204, `during push maintenance a pop found ${during.text.slice(0, 200)}`);
    } finally {
      assert.equal((await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: false })).status, 200);
    }
    await waitFor(async () => (await call(b.url, 'GET', '/api/v1/system/maintenance')).body.bufferedMessages === 0, { what: 'the maintenance spool to drain' });
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
    assert.equal(r.status, 200);
    const got = r.body.messages.map((m: any) => m.data);
    if (txn.status < 300 && txn.body.success === true) assert.deepEqual(got, ['first', 'second'], 'push order lost');
    else assert.deepEqual(got, ['first']);
  });
});
