/**
 * Two broker processes on one PostgreSQL database (docs/storage.md#postgresql-backend): a push on
 * A wakes a pop parked on B through LISTEN/NOTIFY. B's periodic re-check is set beyond the pop's
 * timeout (`QUEEN_PG_RECHECK_MS`), so only the cross-node hint can deliver the message in time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startBroker } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitForParked } from '../helpers/wait.js';
import { freshDatabase } from './postgres-backend.js';

test('push on node A wakes a pop parked on node B (LISTEN/NOTIFY, no re-check in the window)', async () => {
  const db = await freshDatabase();
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, QUEEN_PG_RECHECK_MS: '600000' };
    const a = await startBroker({ env });
    const b = await startBroker({ env });
    try {
      assert.equal((await call(a.url, 'POST', '/api/v1/configure', { queue: 'cross', options: {} })).status, 200);
      const parked = call(b.url, 'GET', '/api/v1/pop/queue/cross?wait=true&timeout=30000');
      await waitForParked(b.url, 1);
      assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'cross', payload: { from: 'A' } }] })).status, 201);
      const got = await parked;
      assert.equal(got.status, 200, 'the parked pop got the message, not its timeout');
      assert.deepEqual(got.body.messages.map((m: { data: unknown }) => m.data), [{ from: 'A' }]);
      // And the other way round, in consumer-group mode.
      const parkedOnA = call(a.url, 'GET', '/api/v1/pop/queue/cross?wait=true&timeout=30000&consumerGroup=g&subscriptionMode=new');
      await waitForParked(a.url, 1);
      assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'cross', payload: { from: 'B' } }] })).status, 201);
      const got2 = await parkedOnA;
      assert.equal(got2.status, 200);
      assert.deepEqual(got2.body.messages.map((m: { data: unknown }) => m.data), [{ from: 'B' }]);
      // A primary has nothing to promote: 409 promote_unavailable, as on SQLite (outside check: it answered 400 invalid_request).
      const promote = await call(a.url, 'POST', '/api/v1/system/link/promote', {});
      assert.equal(promote.status, 409, promote.text);
      assert.equal(promote.body.code, 'promote_unavailable');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  } finally {
    await db.drop();
  }
});
