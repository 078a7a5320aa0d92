/**
 * The dashboard's Ephemeral view (docs/ephemeral.md#status-reads: `GET /api/v1/ephemeral/queues`)
 * in real headless Chromium against a real broker: depth, parked consumers and in-flight leases
 * of real ephemeral queues, and the parked count falling when a push wakes the long poll.
 * Photographed into test-output/screenshots/ like the other dashboard pages; skips only when no
 * Chromium exists.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call } from '../../helpers/http.js';
import { chromiumMissing, ensureBuilt, launchDashboardBrowser, SHOTS, type DashboardBrowser } from '../../helpers/chromium.js';

describe('dashboard: ephemeral view', { skip: chromiumMissing }, () => {
  let broker: BrokerHandle;
  let browser: DashboardBrowser | undefined;
  let page: Page;
  let parkedPop: Promise<{ status: number; body: any }>;

  before(async () => {
    ensureBuilt();
    fs.mkdirSync(SHOTS, { recursive: true });
    broker = await startBroker();
    const api = (p: string, body?: unknown) => call(broker.url, body === undefined ? 'GET' : 'POST', p, body);
    // 'jobs': 5 pushed, 2 leased by group w → depth 5, in flight 2
    assert.equal((await api('/api/v1/ephemeral/configure', { queue: 'jobs', options: { leaseSeconds: 300 } })).status, 201);
    assert.equal((await api('/api/v1/ephemeral/push', { queue: 'jobs', messages: [1, 2, 3, 4, 5].map((payload) => ({ payload })) })).status, 201);
    const popped = await api('/api/v1/ephemeral/pop?queue=jobs&group=w&batch=2');
    assert.equal(popped.status, 200, popped.text);
    assert.equal(popped.body.messages.length, 2);
    // 'alerts': empty, one consumer parked on a long poll
    parkedPop = api('/api/v1/ephemeral/pop?queue=alerts&wait=true&timeout=60000');
    browser = await launchDashboardBrowser();
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    await broker?.stop();
  });

  test('shows depth, parked consumers and in-flight leases per queue', async () => {
    const res = await page.goto(broker.url + '/ephemeral');
    assert.equal(res?.status(), 200);
    await page.getByTestId('ephemeral-table').waitFor();
    const jobs = page.locator('tr[data-queue="jobs"]');
    assert.equal(await jobs.getByTestId('eph-depth').textContent(), '5');
    assert.equal(await jobs.getByTestId('eph-inflight').textContent(), '2', 'two leased, not acked');
    assert.equal(await jobs.getByTestId('eph-parked').textContent(), '0');
    assert.match((await jobs.textContent()) ?? '', /declared/);
    const alerts = page.locator('tr[data-queue="alerts"]');
    assert.equal(await alerts.getByTestId('eph-parked').textContent(), '1', 'the long poll is parked');
    assert.match((await alerts.textContent()) ?? '', /implicit/);
    assert.match((await page.getByTestId('eph-stat-inflight').textContent()) ?? '', /2/);
    await page.locator('nav').getByText('Ephemeral').waitFor();
    await page.screenshot({ path: path.join(SHOTS, '20-ephemeral.png'), fullPage: true });
  });

  test('a push wakes the parked consumer and the view follows', async () => {
    assert.equal((await call(broker.url, 'POST', '/api/v1/ephemeral/push', { queue: 'alerts', messages: [{ payload: 'fire' }] })).status, 201);
    const woken = await parkedPop;
    assert.equal(woken.status, 200);
    assert.equal(woken.body.messages[0].payload, 'fire');
    await page.goto(broker.url + '/ephemeral');
    const alerts = page.locator('tr[data-queue="alerts"]');
    await alerts.getByTestId('eph-parked').filter({ hasText: /^0$/ }).waitFor();
    assert.equal(await alerts.getByTestId('eph-inflight').textContent(), '1', 'the woken pop holds a lease');
  });
});
