/**
 * The queue named '' (a push may name it; the API serves it at `/api/v1/resources/queues/`): the
 * dashboard's Queues list links it as "(empty name)", and that link must open its detail page, not
 * "Page not found". Real headless Chromium against a real broker (skips only without a browser).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumMissing = !fs.existsSync(CHROMIUM) ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium; .ci/run installs it)` : undefined;

describe('dashboard: the queue named ""', { skip: chromiumMissing }, () => {
  let broker: BrokerHandle;
  let ctx: BrowserContext;
  let page: Page;
  let profile: string | undefined;

  before(async () => {
    broker = await startBroker();
    const r = await call(broker.url, 'POST', '/api/v1/push', { items: [{ queue: '', partition: 'only-here', payload: { n: 1 } }, { queue: 'named', payload: { n: 2 } }] });
    assert.equal(r.status, 201, r.text);
    const { chromium } = await import('playwright-core');
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-chromium-'));
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, locale: 'en-GB', timezoneId: 'UTC',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-dev-shm-usage'],
    });
    ctx.setDefaultTimeout(10_000);
    page = ctx.pages()[0] ?? (await ctx.newPage());
  });

  after(async () => {
    await ctx?.close().catch(() => undefined);
    await broker?.stop();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  test('the "(empty name)" link of the Queues page opens that queue, with its partition', async () => {
    await page.goto(broker.url + '/queues');
    await page.getByRole('link', { name: '(empty name)' }).click();
    await page.getByTestId('partitions-table').waitFor();
    assert.equal(new URL(page.url()).pathname, '/queues/');
    const parts = await page.locator('[data-testid=partitions-table] tbody td.strong').allTextContents();
    assert.deepEqual(parts, ['only-here']);
    assert.equal(await page.getByText('Page not found').count(), 0);
    assert.equal(await page.title(), '(empty name) · Queues · Queen');
  });

  test('the list stays at /queues, and a named queue still opens at /queues/<name>', async () => {
    await page.goto(broker.url + '/queues/named');
    await page.getByTestId('partitions-table').waitFor();
    const parts = await page.locator('[data-testid=partitions-table] tbody td.strong').allTextContents();
    assert.deepEqual(parts, ['Default']);
    await page.goto(broker.url + '/queues');
    await page.getByRole('link', { name: 'named' }).waitFor();
    assert.equal(await page.getByTestId('partitions-table').count(), 0, 'the list page shows no partitions table');
  });
});
