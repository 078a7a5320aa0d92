/**
 * Adversarial: timestamps documented as ISO-8601 must be ISO-8601. `Date.parse` also accepts
 * free text ("1" is 2001-01-01 in V8, "12" is 2001-12-01), so a typo silently moves a cursor or a
 * filter to some arbitrary date instead of answering 400.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

describe('ISO-8601 only', () => {
  test('subscriptionTimestamp "1" is refused', async () => {
    const r = await call(b.url, 'POST', `/api/v1/consumer-groups/${uniqueName('g')}/subscription`, { subscriptionTimestamp: '1' });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'invalid_request');
  });

  test('from=1 on the message browser is refused', async () => {
    const r = await call(b.url, 'GET', '/api/v1/messages?from=1');
    assert.equal(r.status, 400, r.text.slice(0, 200));
    assert.equal(r.body.code, 'invalid_request');
  });

  test('subscriptionFrom=12 on a pop is refused', async () => {
    const r = await call(b.url, 'GET', `/api/v1/pop/queue/${uniqueName()}?consumerGroup=g&subscriptionFrom=12`);
    assert.equal(r.status, 400, r.text.slice(0, 200));
    assert.equal(r.body.code, 'invalid_request');
  });
});
