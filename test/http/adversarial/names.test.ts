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
