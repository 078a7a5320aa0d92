/**
 * The reference's tables read true facts on the PostgreSQL backend (docs/storage.md#postgresql-backend):
 * the official JS client's test-v2 suite reads and writes them directly (test-v2/watermark.js,
 * test-v2/auth.js, test-v2/push.js in queen-mq/queen clients/client-js). A real broker on a fresh
 * database; the statements below are the ones those tests run.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startBroker } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { freshDatabase } from './postgres-backend.js';

test('queen.consumer_watermarks: queue_name, consumer_group, last_empty_scan_at, updated_at; advancing it does not block a seek backwards', async () => {
  const db = await freshDatabase();
  const c = new pg.Client({ connectionString: db.url });
  const broker = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url } });
  await c.connect();
  try {
    const before = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 3; i++) {
      assert.equal((await call(broker.url, 'POST', '/api/v1/push', { items: [{ queue: 'wm', partition: `p-${i}`, payload: { i } }] })).status, 201);
    }
    const pop = () => call(broker.url, 'GET', '/api/v1/pop/queue/wm?consumerGroup=g&subscriptionMode=all&batch=10&wait=false&autoAck=true');
    let got = 0;
    for (let i = 0; i < 3; i++) got += ((await pop()).body?.messages?.length ?? 0);
    assert.equal(got, 3, 'each partition delivered once');
    assert.equal((await pop()).status, 204, 'an empty scan');

    const row = (await c.query('SELECT * FROM queen.consumer_watermarks WHERE queue_name = $1 AND consumer_group = $2', ['wm', 'g'])).rows[0];
    assert.ok(row, 'the empty scan wrote a watermark row');
    assert.ok(row.updated_at instanceof Date && row.last_empty_scan_at instanceof Date);
    const advanced = await c.query(`UPDATE queen.consumer_watermarks
                                    SET last_empty_scan_at = NOW() + interval '10 minutes', updated_at = NOW() + interval '10 minutes'
                                    WHERE queue_name = $1 AND consumer_group = $2 RETURNING *`, ['wm', 'g']);
    assert.equal(advanced.rowCount, 1);

    const seek = await call(broker.url, 'POST', '/api/v1/consumer-groups/g/queues/wm/seek', { timestamp: before });
    assert.equal(seek.status, 200);
    let again = 0;
    for (let i = 0; i < 3; i++) again += ((await pop()).body?.messages?.length ?? 0);
    assert.equal(again, 3, 'a seek backwards re-delivers every partition despite the advanced watermark');
  } finally {
    await c.end();
    await broker.stop();
    await db.drop();
  }
});

test('GET /health and GET /status name the engine the broker runs on (postgres, not sqlite)', async () => {
  const db = await freshDatabase();
  const broker = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url } });
  try {
    assert.equal((await call(broker.url, 'GET', '/health')).body.engine, 'postgres');
    assert.equal((await call(broker.url, 'GET', '/status')).body.engine, 'postgres');
  } finally {
    await broker.stop();
    await db.drop();
  }
});
