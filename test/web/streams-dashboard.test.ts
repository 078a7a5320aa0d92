/**
 * The dashboard's Streams view (docs/streams.md#routes: `GET /api/v1/streams/queries`) in real
 * headless Chromium against a real broker: a query registered and committed through the streams
 * routes shows its source, sink and state rows per partition. Photographed into
 * test-output/screenshots/ like the other dashboard pages; skips only when no Chromium exists.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { chromiumMissing, ensureBuilt, launchDashboardBrowser, SHOTS, type DashboardBrowser } from '../helpers/chromium.js';

describe('dashboard: streams view', { skip: chromiumMissing }, () => {
  let broker: BrokerHandle;
  let browser: DashboardBrowser | undefined;
  let page: Page;

  before(async () => {
    ensureBuilt();
    fs.mkdirSync(SHOTS, { recursive: true });
    broker = await startBroker();
    const api = (p: string, body?: unknown) => call(broker.url, body === undefined ? 'GET' : 'POST', p, body);
    const reg = await api('/streams/v1/queries', { name: 'orders.per_minute', source_queue: 'orders', sink_queue: 'orders.per_minute', config_hash: '9f2c4e1d7a0b' });
    assert.equal(reg.status, 200, reg.text);
    assert.equal((await api('/streams/v1/queries', { name: 'audit', source_queue: 'events', config_hash: 'aa' })).status, 200);
    assert.equal((await api('/api/v1/push', { items: ['eu', 'us'].map((partition) => ({ queue: 'orders', partition, payload: { n: 1 } })) })).status, 201);
    for (let i = 0; i < 2; i++) {
      const b = await api('/api/v1/pop/queue/orders?batch=10&consumerGroup=streams.orders.per_minute');
      assert.equal(b.status, 200, b.text);
      const c = await api('/streams/v1/cycle', {
        query_id: reg.body.query_id, partition_id: b.body.partitionId, consumer_group: 'streams.orders.per_minute',
        state_ops: Array.from({ length: i + 2 }, (_, k) => ({ type: 'upsert', key: `tumb:60\u001fw${k}\u001fk`, value: { acc: k } })),
        push_items: [], ack: { leaseId: b.body.leaseId, count: 1 }, release_lease: true,
      });
      assert.equal(c.body.success, true, c.text);
    }
    browser = await launchDashboardBrowser();
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    await broker?.stop();
  });

  test('lists each query with its source, sink and state rows per partition', async () => {
    const res = await page.goto(broker.url + '/streaming');
    assert.equal(res?.status(), 200);
    await page.getByTestId('streams-table').waitFor();
    const row = page.locator('tr[data-query="orders.per_minute"]');
    assert.match((await row.textContent()) ?? '', /orders\.per_minute.*orders/);
    assert.equal(await row.getByTestId('stream-rows').textContent(), '5', '2 + 3 state rows');
    assert.equal(await row.getByTestId('stream-partitions').locator('.badge').count(), 2, 'one entry per source partition');
    assert.equal(await page.locator('tr[data-query="audit"]').getByTestId('stream-sink').textContent(), 'none');
    await page.locator('nav').getByText('Streams').waitFor();
    await page.screenshot({ path: path.join(SHOTS, '19-streams.png'), fullPage: true });
  });
});
