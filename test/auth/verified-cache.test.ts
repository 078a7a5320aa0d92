/**
 * The verified-signature cache must never let a reused token outlive its claims: the signature
 * result is reused, `exp`/`nbf`/roles are not. That a cached token is refused once past its `exp`
 * is a time rule, asserted on a test clock in test/auth/clock.test.ts; here, over HTTP, a cached
 * token is still held to each route's access level.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { bearer, hsKey, mint, nowSec, request } from '../helpers/jwt.js';

const SECRET = 'cache-test-secret-0123456789abcdef';
let b: BrokerHandle;
before(async () => {
  b = await startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET, JWT_CLOCK_SKEW: '0' } });
});
after(async () => { await b.stop(); });

test('a cached token is still held to the access level of each route', async () => {
  const token = await mint('HS256', hsKey(SECRET), { role: 'read-only', exp: nowSec() + 60 });
  assert.equal((await request(b.url, 'GET', '/api/v1/resources/queues', bearer(token))).status, 200);
  assert.equal((await request(b.url, 'GET', '/api/v1/pop/queue/x', bearer(token))).status, 403);
});
