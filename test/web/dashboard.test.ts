/**
 * End-to-end tests of the broker-served dashboard (docs/http-api.md#dashboard-and-auth-routes) in real headless Chromium against a
 * real broker seeded through the real API: queues, partitions, two consumer groups, dead letters
 * and traces. Every page is checked for the seeded facts and photographed into
 * test-output/screenshots/ (git-ignored), on a laptop-sized and a phone-sized viewport.
 *
 * Needs Debian's chromium (`.ci/run` installs it); skips with the reason only when no browser
 * binary exists. Every API route the pages read must be served: a missing one fails the test.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/test/web → repository root */
const ROOT = path.resolve(here, '../../..');
const WEB_SRC = path.join(ROOT, 'web');
const WEB_OUT = path.join(ROOT, 'dist', 'web');
const SHOTS = path.join(ROOT, 'test-output', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROME_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];
const LAPTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };

function newestMtime(dir: string): number {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist') continue;
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return t;
}

/** Builds the dashboard when dist/web is missing or older than web/ (the build script normally does it). */
function ensureBuilt(): void {
  const index = path.join(WEB_OUT, 'index.html');
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestMtime(WEB_SRC)) return;
  const vite = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const r = spawnSync(process.execPath, [vite, 'build', '--config', path.join(WEB_SRC, 'vite.config.ts'), '--logLevel', 'warn'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`vite build failed:\n${r.stdout}\n${r.stderr}`);
}

async function poll<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const chromiumMissing = !fs.existsSync(CHROMIUM) ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium; .ci/run installs it)` : undefined;

describe('dashboard', { skip: chromiumMissing }, () => {
  let broker: BrokerHandle;
  let ctx: BrowserContext;
  let page: Page;
  let profile: string;
  /** routes this broker answers with 404 no_such_route */
  const missing = new Set<string>();
  const facts = {
    analyticsMsg: { partitionId: '', transactionId: '' },
  };

  const api = (method: string, p: string, body?: unknown) => call(broker.url, method, p, body);

  async function serves(method: string, p: string, body?: unknown): Promise<boolean> {
    const r = await api(method, p, body);
    const gone = r.status === 404 && r.body?.code === 'no_such_route';
    if (gone) missing.add(`${method} ${p.split('?')[0]}`);
    return !gone;
  }

  /** Every route the dashboard reads must be served: a missing one fails the test, never skips it. */
  function assertServed(...routes: string[]): void {
    const absent = routes.filter((r) => missing.has(r));
    assert.deepEqual(absent, [], `the broker does not serve ${absent.join(', ')}`);
  }

  async function shot(name: string, viewport = LAPTOP, fullPage = true): Promise<void> {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(250); // charts follow their container's width
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
  }

  async function open(p: string): Promise<void> {
    await page.setViewportSize(LAPTOP);
    await page.goto(broker.url + p);
    await page.locator('.layout').waitFor();
  }

  async function text(selector: string): Promise<string> {
    return (await page.locator(selector).first().textContent()) ?? '';
  }

  before(async () => {
    ensureBuilt();
    fs.mkdirSync(SHOTS, { recursive: true });
    broker = await startBroker();

    // --- seed through the real API ---------------------------------------------------------
    let r = await api('POST', '/api/v1/configure', { queue: 'orders', namespace: 'shop', task: 'checkout', options: { leaseTime: 45, retryLimit: 2, priority: 5 } });
    assert.equal(r.status, 200, r.text);
    const customers = ['ada', 'grace', 'linus', 'margaret', 'ken', 'barbara'];
    r = await api('POST', '/api/v1/push', {
      items: customers.map((c, i) => ({
        queue: 'orders',
        partition: i < 3 ? 'eu-west' : 'us-east',
        transactionId: `order-${1001 + i}`,
        payload: { orderId: 1001 + i, customer: c, total: 19.5 + i * 10, items: [{ sku: `SKU-${i}`, qty: i + 1 }] },
      })),
    });
    assert.equal(r.status, 201, r.text);
    r = await api('POST', '/api/v1/push', {
      items: [1, 2, 3, 4].map((i) => ({ queue: 'emails', payload: { to: `user${i}@example.com`, template: 'welcome' } })),
    });
    assert.equal(r.status, 201, r.text);

    // two consumer groups on orders: analytics consumes one partition (lag 3), fulfilment one message (lag 5)
    r = await api('GET', '/api/v1/pop/queue/orders?consumerGroup=analytics&subscriptionMode=all&batch=10');
    assert.equal(r.status, 200, r.text);
    const analytics = r.body;
    r = await api('POST', '/api/v1/ack/batch', {
      consumerGroup: 'analytics',
      acknowledgments: analytics.messages.map((m: any) => ({ transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed', leaseId: m.leaseId })),
    });
    assert.equal(r.status, 200, r.text);
    facts.analyticsMsg = { partitionId: analytics.messages[0].partitionId, transactionId: analytics.messages[0].transactionId };
    r = await api('GET', '/api/v1/pop/queue/orders?consumerGroup=fulfilment&subscriptionMode=all&batch=1');
    assert.equal(r.status, 200, r.text);
    const m = r.body.messages[0];
    r = await api('POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed', consumerGroup: 'fulfilment', leaseId: m.leaseId });
    assert.equal(r.status, 200, r.text);

    // dead letters: payments has no retries; a consumer sends two payments to the DLQ
    r = await api('POST', '/api/v1/configure', { queue: 'payments', options: { retryLimit: 0 } });
    assert.equal(r.status, 200, r.text);
    r = await api('POST', '/api/v1/push', {
      items: [
        { queue: 'payments', partition: 'card', transactionId: 'pay-7001', payload: { paymentId: 'pay-7001', amount: 12.5, currency: 'EUR' } },
        { queue: 'payments', partition: 'card', transactionId: 'pay-7002', payload: { paymentId: 'pay-7002', amount: 99, currency: 'EUR' } },
      ],
    });
    assert.equal(r.status, 201, r.text);
    for (const error of ['card declined: insufficient funds', 'PSP timeout after 30s']) {
      r = await api('GET', '/api/v1/pop/queue/payments?batch=1');
      assert.equal(r.status, 200, r.text);
      const p = r.body.messages[0];
      r = await api('POST', '/api/v1/ack', { transactionId: p.transactionId, partitionId: p.partitionId, status: 'dlq', error, leaseId: p.leaseId });
      assert.equal(r.status, 200, r.text);
    }

    // traces on the analytics message (two messages share a trace name)
    const events = [
      { eventType: 'info', data: { step: 'received', worker: 'analytics-1' } },
      { eventType: 'processing', data: { step: 'enrich', source: 'crm' } },
      { eventType: 'error', data: { step: 'score', error: 'model timeout' } },
      { eventType: 'completed', data: { step: 'stored', rows: 3 } },
    ];
    for (const e of events) {
      if (!(await serves('POST', '/api/v1/traces', { ...facts.analyticsMsg, consumerGroup: 'analytics', traceNames: ['order-flow'], ...e }))) break;
      const sent = Date.now(); // each event gets its own millisecond, so the timeline order is the sending order
      await waitFor(() => Date.now() > sent, { what: 'the clock to pass the last trace event', intervalMs: 1 });
    }
    const second = analytics.messages[1];
    await api('POST', '/api/v1/traces', { partitionId: second.partitionId, transactionId: second.transactionId, consumerGroup: 'analytics', traceNames: ['order-flow'], eventType: 'info', data: { step: 'received' } });

    for (const [method, p] of [
      ['GET', '/api/v1/consumer-groups'],
      ['GET', '/api/v1/messages?queue=orders'],
      ['GET', '/api/v1/traces/names'],
      ['GET', `/api/v1/traces/by-name/order-flow`],
    ] as const) await serves(method, p);
    if (missing.has('GET /api/v1/traces/by-name/order-flow')) missing.add('GET /api/v1/traces/by-name/:name');

    // --- browser ---------------------------------------------------------------------------
    const { chromium } = await import('playwright-core');
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-chromium-'));
    ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROME_ARGS, viewport: LAPTOP, locale: 'en-GB', timezoneId: 'UTC' });
    ctx.setDefaultTimeout(10_000);
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('pageerror', (e) => console.error('page error:', e.message));
  });

  after(async () => {
    await ctx?.close().catch(() => undefined);
    await broker?.stop();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
    if (missing.size) console.log(`# routes not served by this broker yet: ${[...missing].join(', ')}`);
  });

  test('the broker serves the shell, hashed assets and the SPA fallback with the right caching', async () => {
    const root = await fetch(broker.url + '/');
    assert.equal(root.status, 200);
    assert.match(root.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(root.headers.get('cache-control'), 'no-cache');
    assert.ok(root.headers.get('etag'));
    const html = await root.text();
    assert.doesNotMatch(html, /queen-auth/);
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(asset, 'index.html references a hashed script');
    const js = await fetch(broker.url + asset);
    assert.equal(js.status, 200);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(js.headers.get('content-type') ?? '', /javascript/);
    const again = await fetch(broker.url + '/', { headers: { 'if-none-match': root.headers.get('etag')! } });
    assert.equal(again.status, 304);
    const deep = await fetch(broker.url + '/queues/orders', { headers: { accept: 'text/html' } });
    assert.equal(deep.status, 200);
    assert.equal(await deep.text(), html);
    const api404 = await call(broker.url, 'GET', '/api/v1/definitely-not-a-route');
    assert.equal(api404.status, 404);
    assert.equal(api404.body.code, 'no_such_route');
    const noAsset = await fetch(broker.url + '/assets/nope.js');
    assert.equal(noAsset.status, 404);
    const post = await call(broker.url, 'POST', '/queues');
    assert.equal(post.status, 404);
    assert.equal(post.body.code, 'no_such_route');
  });

  test('overview shows the seeded queues, dead letters and lag', async () => {
    await open('/');
    await poll('three queues', async () => (await text('[data-testid=stat-queues]')) === '3');
    await poll('two dead letters', async () => (await text('[data-testid=stat-dlq]')) === '2');
    // The backlog follows each queue's readers (docs/http-api.md#resources): orders by its slowest
    // named group per partition, emails (never read) with all 4 pending, payments with none.
    const queues = (await api('GET', '/api/v1/resources/queues')).body.queues as { name: string; messages: { pending: number } }[];
    const pendingOf = (n: string) => queues.find((x) => x.name === n)!.messages.pending;
    assert.deepEqual([pendingOf('emails'), pendingOf('payments')], [4, 0]);
    assert.ok(pendingOf('orders') < 6, 'orders is read by named groups: what they consumed is not pending');
    const backlog = String(queues.reduce((sum, x) => sum + x.messages.pending, 0));
    await poll(`backlog of ${backlog} pending`, async () => (await text('[data-testid=stat-depth]')) === backlog);
    await page.getByRole('link', { name: 'orders' }).first().waitFor();
    // live traffic through emails (pushed and consumed in equal numbers, so its depth stays 4),
    // refreshed every 2 s through the UI's own control, so the charts and rates have samples
    await page.getByLabel('Refresh period').selectOption('2000');
    const stop = Date.now() + 7000;
    for (let i = 0; Date.now() < stop; i++) {
      const n = 5 + (i % 4) * 3;
      await api('POST', '/api/v1/push', { items: Array.from({ length: n }, (_, k) => ({ queue: 'emails', payload: { to: `burst${i}-${k}@example.com`, template: 'digest' } })) });
      await api('GET', `/api/v1/pop/queue/emails?batch=${n}&autoAck=true`);
      await page.waitForTimeout(250);
    }
    await poll('a non-zero inbound rate', async () => !['0', '—'].includes(await text('[data-testid=stat-in]')));
    await poll(`backlog back to ${backlog}`, async () => (await text('[data-testid=stat-depth]')) === backlog);
    await shot('01-overview');
    await shot('11-phone-overview', PHONE);
    await page.setViewportSize(LAPTOP);
    await page.getByLabel('Refresh period').selectOption('5000');
    assertServed('GET /api/v1/consumer-groups');
    await poll('total lag 8 (analytics 3 + fulfilment 5)', async () => (await text('[data-testid=stat-lag]')) === '8');
  });

  test('queues page searches and sorts by depth', async () => {
    await open('/queues');
    const names = async () => page.locator('[data-testid=queues-table] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-queue')));
    await poll('three rows', async () => (await names()).length === 3);
    await page.getByTestId('sort-depth').click();
    assert.deepEqual(await names(), ['orders', 'emails', 'payments']);
    await page.getByTestId('sort-name').click();
    assert.deepEqual(await names(), ['emails', 'orders', 'payments']);
    await page.getByTestId('sort-depth').click();
    await shot('02-queues');
    await page.getByTestId('queue-search').fill('pay');
    await poll('only payments', async () => JSON.stringify(await names()) === '["payments"]');
    await page.getByTestId('queue-search').fill('shop'); // namespace
    await poll('only orders', async () => JSON.stringify(await names()) === '["orders"]');
    await page.getByTestId('queue-search').fill('');
  });

  test('queue detail shows options, partitions, groups and lag per group', async () => {
    await open('/queues/orders');
    await page.getByTestId('partitions-table').waitFor();
    const parts = await page.locator('[data-testid=partitions-table] tbody td.strong').allTextContents();
    assert.deepEqual(parts.sort(), ['eu-west', 'us-east']);
    const options = await text('[data-testid=options]');
    assert.match(options, /leaseTime\s*45 s/);
    assert.match(options, /retryLimit\s*2/);
    assert.match(options, /priority\s*5/);
    assert.equal(await text('[data-testid=q-total]'), '6');
    const lagOf = async (g: string) => page.locator(`[data-testid=queue-groups-table] tr[data-group="${g}"] [data-testid=group-lag]`).textContent();
    await poll('analytics lag 3', async () => (await lagOf('analytics')) === '3');
    await poll('fulfilment lag 5', async () => (await lagOf('fulfilment')) === '5');
    await page.waitForTimeout(1500);
    await shot('03-queue-detail');
    await shot('12-phone-queue-detail', PHONE);
  });

  test('messages page browses a partition and pretty-prints a payload', async () => {
    assertServed('GET /api/v1/messages');
    await open('/messages?queue=orders&partition=us-east');
    await page.locator('[data-testid=messages-table] tr[data-txn="order-1004"]').waitFor();
    const rows = await page.locator('[data-testid=messages-table] tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-txn')));
    assert.deepEqual([...rows].sort(), ['order-1004', 'order-1005', 'order-1006']);
    await shot('04-messages');
    await page.locator('[data-testid=messages-table] tr[data-txn="order-1005"]').click();
    const json = await page.getByTestId('drawer').getByTestId('json').first().textContent();
    assert.match(json ?? '', /\{\n {2}"orderId": 1005,\n {2}"customer": "ken"/);
    await shot('05-message-detail', LAPTOP, false);
    await shot('13-phone-message-detail', PHONE, false);
    await page.keyboard.press('Escape');
  });

  test('dead letters: filter, inspect the error, replay puts it back in its queue', async () => {
    await open('/dead-letters');
    await page.getByTestId('dlq-table').waitFor();
    await poll('two dead letters', async () => (await page.locator('[data-testid=dlq-table] tbody tr').count()) === 2);
    assert.match(await text('[data-testid=dlq-table]'), /card declined: insufficient funds/);
    assert.match(await text('[data-testid=dlq-table]'), /PSP timeout after 30s/);
    await shot('06-dead-letters');
    await shot('14-phone-dead-letters', PHONE);

    await page.getByTestId('dlq-search').fill('timeout');
    await poll('one row after filtering', async () => (await page.locator('[data-testid=dlq-table] tbody tr').count()) === 1);
    await page.getByTestId('dlq-search').fill('');
    await page.locator('[data-testid=dlq-table] tr[data-txn="pay-7001"] td.error-cell').click();
    assert.equal(await page.getByTestId('dlq-error').textContent(), 'card declined: insufficient funds');
    assert.match((await page.getByTestId('drawer').getByTestId('json').textContent()) ?? '', /"paymentId": "pay-7001"/);
    await shot('07-dead-letter-detail', LAPTOP, false);

    const before = await api('GET', '/api/v1/resources/queues/payments');
    assert.equal(before.body.totals.pending, 0);
    await page.getByTestId('drawer-replay').click();
    const toast = await page.getByTestId('toast').first().textContent();
    assert.match(toast ?? '', /Replayed into payments/);
    const afterQ = await poll('payments has the replayed message', async () => {
      const r = await api('GET', '/api/v1/resources/queues/payments');
      return r.body.totals.pending === 1 ? r : undefined;
    });
    assert.equal(afterQ.body.totals.pending, 1);
    const dlq = await api('GET', '/api/v1/dlq?queue=payments');
    assert.deepEqual(dlq.body.messages.map((m: any) => m.transactionId), ['pay-7002']);
    const popped = await api('GET', '/api/v1/pop/queue/payments?batch=1&autoAck=true');
    assert.equal(popped.body.messages[0].data.paymentId, 'pay-7001');
    await poll('UI shows one dead letter left', async () => (await page.locator('[data-testid=dlq-table] tbody tr').count()) === 1);
  });

  test('dead letters purge asks for the queue name', async () => {
    await open('/dead-letters?queue=payments');
    await page.getByTestId('dlq-table').waitFor();
    await page.getByTestId('purge').click();
    const button = page.getByTestId('confirm-button');
    assert.equal(await button.isDisabled(), true);
    await page.getByTestId('confirm-input').fill('payments');
    assert.equal(await button.isDisabled(), false);
    await shot('08-purge-confirm', LAPTOP, false);
    await page.keyboard.press('Escape');
    const dlq = await api('GET', '/api/v1/dlq?queue=payments');
    assert.ok(dlq.body.messages.length >= 1, 'cancel purges nothing');
  });

  test('consumer groups: lag per group, seek dialog, delete removes the group', async () => {
    await open('/consumer-groups');
    const row = (g: string) => page.locator(`[data-testid=groups-table] tr[data-group="${g}"][data-queue="orders"]`);
    await row('analytics').waitFor();
    await poll('analytics lag 3', async () => (await row('analytics').getByTestId('group-lag').textContent()) === '3');
    await poll('fulfilment lag 5', async () => (await row('fulfilment').getByTestId('group-lag').textContent()) === '5');
    await row('analytics').getByTestId('expand').click();
    const parts = page.getByTestId('group-partitions');
    await parts.waitFor();
    assert.match((await parts.textContent()) ?? '', /(us-east|eu-west)/);
    await shot('09-consumer-groups');
    await shot('15-phone-consumer-groups', PHONE);
    await row('analytics').getByTestId('expand').click();
    await row('analytics').getByTestId('seek').click();
    await page.getByTestId('seek-dialog').waitFor();
    await shot('09b-seek-dialog', LAPTOP, false);
    await page.keyboard.press('Escape');

    await row('fulfilment').getByTestId('delete-group').click();
    await page.getByTestId('confirm').waitFor();
    await page.getByTestId('confirm-button').click();
    const outcome = await Promise.race([
      page.getByTestId('confirm').waitFor({ state: 'detached' }).then(() => 'closed'),
      page.locator('[data-testid=confirm] .callout-bad').waitFor().then(async () => (await page.locator('[data-testid=confirm] .callout-bad').textContent()) ?? 'error'),
    ]);
    if (outcome !== 'closed') {
      await page.keyboard.press('Escape');
      assert.fail(`delete failed in the UI: ${outcome}`);
    }
    await row('fulfilment').waitFor({ state: 'detached' });
    const detail = await api('GET', '/api/v1/resources/queues/orders');
    assert.ok(!detail.body.consumerGroups.some((g: any) => g.name === 'fulfilment'), 'fulfilment is gone from the queue');
    const groups = await api('GET', '/api/v1/consumer-groups');
    assert.ok(!JSON.stringify(groups.body).includes('"fulfilment"'), 'fulfilment is gone from the group list');
    assert.equal(await row('analytics').count(), 1, 'the other group stays');

    // seek the remaining group to the end from the UI: its lag drops to 0
    await row('analytics').getByTestId('seek').click();
    await page.getByTestId('seek-button').click();
    await page.getByTestId('seek-dialog').waitFor({ state: 'detached' });
    await poll('analytics lag 0 after seeking to the end', async () => (await row('analytics').getByTestId('group-lag').textContent()) === '0');
    const detail2 = await api('GET', '/api/v1/resources/queues/orders');
    assert.equal(detail2.body.consumerGroups.find((g: any) => g.name === 'analytics')?.totalLag, 0);
  });

  test('traces page draws the timeline of a trace', async () => {
    assertServed('POST /api/v1/traces', 'GET /api/v1/traces/by-name/:name', 'GET /api/v1/traces/names');
    await open('/traces?name=order-flow');
    await page.getByTestId('timeline').waitFor();
    const types = await page.locator('.event').evaluateAll((els) => els.map((e) => e.getAttribute('data-event-type')));
    assert.deepEqual(types.slice(0, 4), ['info', 'processing', 'error', 'completed']);
    assert.equal(types.length, 5);
    assert.match(await text('[data-testid=timeline]'), /model timeout/);
    assert.match(await text('[data-testid=trace-names]'), /order-flow/);
    await shot('10-traces');
    await shot('16-phone-traces', PHONE);
    // the same events by message address
    await open(`/traces?partitionId=${facts.analyticsMsg.partitionId}&transactionId=${encodeURIComponent(facts.analyticsMsg.transactionId)}`);
    await poll('four events of the message', async () => (await page.locator('.event').count()) === 4);
  });
});

describe('dashboard with JWT on', { skip: chromiumMissing }, () => {
  let broker: BrokerHandle;
  let ctx: BrowserContext;
  let profile: string;

  before(async () => {
    ensureBuilt();
    fs.mkdirSync(SHOTS, { recursive: true });
    broker = await startBroker({ env: { JWT_ENABLED: 'true', JWT_SECRET: 'dashboard-test-secret-0123456789abcdef' } });
    const { chromium } = await import('playwright-core');
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'queen-chromium-'));
    ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROME_ARGS, viewport: LAPTOP });
    ctx.setDefaultTimeout(10_000);
  });

  after(async () => {
    await ctx?.close().catch(() => undefined);
    await broker?.stop();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  test('the page shows its own message and calls no API route', async () => {
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/api/')) apiCalls.push(u.pathname);
    });
    const res = await page.goto(broker.url + '/');
    assert.equal(res?.status(), 200);
    const card = page.getByTestId('jwt-off');
    await card.waitFor();
    assert.match((await card.textContent()) ?? '', /built-in dashboard is off/);
    assert.match((await card.textContent()) ?? '', /JWT authentication/);
    await page.waitForTimeout(500);
    assert.deepEqual(apiCalls, []);
    await page.screenshot({ path: path.join(SHOTS, '17-jwt-off.png'), fullPage: true });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: path.join(SHOTS, '18-phone-jwt-off.png'), fullPage: true });
    const html = await (await fetch(broker.url + '/')).text();
    assert.match(html, /<meta name="queen-auth" content="jwt">/);
  });
});
