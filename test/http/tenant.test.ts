/**
 * The tenant of a request on the broker router (src/http/tenant.ts, docs/proxy.md#tenancy):
 * QUEEN_TENANCY_HEADER and its boot interlock, the UUID rule, verified relays, the process-wide
 * routes that stay the default tenant's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, uniqueName } from '../helpers/http.js';
import { runBrokerExpectingExit, startBroker } from '../helpers/broker.js';

const T1 = 'aaaaaaaa-0000-4000-8000-000000000001';
const T2 = 'BBBBBBBB-0000-4000-8000-000000000002';

describe('QUEEN_TENANCY_HEADER', () => {
  test('without QUEEN_KV_TRUSTED_PROXY the broker refuses to boot', async () => {
    const r = await runBrokerExpectingExit({ QUEEN_TENANCY_HEADER: 'true' });
    assert.equal(r.code, 1);
    assert.match(r.output, /fatal: QUEEN_TENANCY_HEADER=1 without QUEEN_KV_TRUSTED_PROXY=1:/);
  });

  test('on: UUID tenants are isolated, case-insensitive; a bad header is 400; absent is the default tenant', async () => {
    const b = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' } });
    try {
      const q = uniqueName('t');
      const push = (tenant: string | undefined, who: string) => call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: who }] }, tenant ? { 'x-queen-tenant': tenant } : {});
      assert.equal((await push(T1, 'one')).status, 201);
      assert.equal((await push(T2, 'two')).status, 201);
      assert.equal((await push(undefined, 'default')).status, 201);
      const pop = async (tenant: string | undefined) => (await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`, undefined, tenant ? { 'x-queen-tenant': tenant } : {})).body.messages.map((m: { data: string }) => m.data);
      assert.deepEqual(await pop(T2.toLowerCase()), ['two'], 'stored lowercase');
      assert.deepEqual(await pop(T1), ['one']);
      assert.deepEqual(await pop(''), ['default']);
      const bad = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`, undefined, { 'x-queen-tenant': 'acme' });
      assert.deepEqual([bad.status, bad.body.error], [400, 'invalid x-queen-tenant header (must be a UUID)']);
      const listed = await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { 'x-queen-tenant': T1 });
      assert.deepEqual(listed.body.queues.map((x: { name: string }) => x.name), [q], 'the operator views read the request\'s tenant');
      assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { 'x-queen-tenant': 'cccccccc-0000-4000-8000-000000000003' })).body.queues.length, 0);
      assert.equal((await call(b.url, 'GET', '/api/v1/system/maintenance', undefined, { 'x-queen-tenant': T1 })).body.code, 'not_tenanted', 'process-wide routes stay the default tenant\'s');
      assert.equal((await call(b.url, 'POST', '/api/v1/timers', { operations: [] }, { 'x-queen-tenant': T1 })).body.code, 'not_tenanted');
    } finally {
      await b.stop();
    }
  });

  test('off: the header is ignored; a relay is verified only with the right QUEEN_RAFT_TOKEN', async () => {
    const b = await startBroker({ env: { QUEEN_RAFT_TOKEN: 'raft-secret' } });
    try {
      const q = uniqueName('r');
      assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'x' }] }, { 'x-queen-tenant': T1 })).status, 201);
      assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 200, 'ignored: it went to the default tenant');
      const forged = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`, undefined, { 'x-queen-eph-fwd': '1', 'x-queen-tenant': T1, 'x-queen-raft-token': 'wrong' });
      assert.deepEqual([forged.status, forged.body.code], [403, 'tenant_unverified']);
      const relay = { 'x-queen-eph-fwd': '1', 'x-queen-tenant': T1, 'x-queen-raft-token': 'raft-secret' };
      assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'relayed' }] }, relay)).status, 201);
      const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=g`, undefined, relay);
      assert.deepEqual(popped.body.messages.map((m: { data: string }) => m.data), ['relayed'], 'honoured for a verified relay');
    } finally {
      await b.stop();
    }
  });
});
