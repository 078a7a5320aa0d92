/**
 * The verified-signature cache must never let a reused token outlive its claims: the signature
 * result is reused, `exp`/`nbf`/roles are not.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { bearer, hsKey, mint, nowSec, request } from '../helpers/jwt.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'cache-test-secret-0123456789abcdef';
let b: BrokerHandle;
before(async () => {
  b = await startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET, JWT_CLOCK_SKEW: '0' } });
});
after(async () => { await b.stop(); });

test('a token accepted once is refused after its exp even though its signature was cached', async () => {
  const exp = nowSec() + 2;
  const token = await mint('HS256', hsKey(SECRET), { role: 'read-write', exp });
  const first = await request(b.url, 'GET', '/api/v1/resources/queues', bearer(token));
  assert.equal(first.status, 200);
  // Same machine, same clock: once our whole seconds pass exp, the broker's have too (expired
  // means now > exp, skew 0).
  await waitFor(() => nowSec() > exp, { what: `the clock to pass the token's exp (${exp})`, intervalMs: 50 });
  const second = await request(b.url, 'GET', '/api/v1/resources/queues', bearer(token));
  assert.equal(second.status, 401);
  assert.equal(second.json.error, 'Token has expired');
});

test('a cached token is still held to the access level of each route', async () => {
  const token = await mint('HS256', hsKey(SECRET), { role: 'read-only', exp: nowSec() + 60 });
  assert.equal((await request(b.url, 'GET', '/api/v1/resources/queues', bearer(token))).status, 200);
  assert.equal((await request(b.url, 'GET', '/api/v1/pop/queue/x', bearer(token))).status, 403);
});
