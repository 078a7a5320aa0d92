/**
 * The console on the embedded proxy in real headless Chromium (docs/proxy.md#console): sign in
 * with a password through the login page, pick a cluster, create an API key with `produce` only,
 * copy it, use it from Node (push works, pop is refused), revoke it in the console and see the
 * next push refused; manage members; a viewer sees read-only pages (no key or member controls in
 * the console, no replay, purge, seek or delete buttons in the dashboard); `/api/console/*`
 * refuses an API key. Screenshots of each page on desktop and phone sizes go to
 * test-output/screenshots/.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { BrokerHandle } from '../helpers/broker.js';
import { chromiumMissing, ensureBuilt, launchDashboardBrowser, SHOTS, type DashboardBrowser } from '../helpers/chromium.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { bootstrap, cp, startProxied, withKey, type Tenant } from './helpers.js';
import { person, SESSION_ENV } from './session-helpers.js';

const PASSWORD = 'console-password-77';
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1366, height: 900 };

async function shoot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const [size, vp] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
    await page.setViewportSize(vp);
    await page.screenshot({ path: path.join(SHOTS, `console-${name}-${size}.png`), fullPage: true });
  }
  await page.setViewportSize(DESKTOP);
}

async function signIn(page: Page, base: string, email: string, next = '/console'): Promise<void> {
  await page.goto(`${base}${next}`);
  await page.waitForURL(/\/auth\/login\?next=/);
  await page.fill('#email', email);
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(`${base}${next}`), page.click('button[type=submit]')]);
}

describe('console in headless Chromium', { skip: chromiumMissing }, () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let browser: DashboardBrowser;
  let second: string;
  const q = uniqueName('console');
  const admin = () => `alice@${acme.slug}.test`;
  const viewer = () => `vic@${acme.slug}.test`;
  /** Secrets seen in this run (keys, cookie values), grepped for in the logs at the end. */
  const secrets: string[] = [];

  before(async () => {
    ensureBuilt();
    b = await startProxied(SESSION_ENV);
    acme = await bootstrap(b.url, uniqueName('acme').toLowerCase());
    second = `${acme.slug}-b`;
    assert.equal((await cp(b.url, 'POST', '/api/cp/clusters', { tenant: acme.slug, slug: second })).status, 201);
    await person(b.url, acme.slug, admin(), PASSWORD, { cluster: acme.slug, role: 'admin' });
    assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${second}/members/${encodeURIComponent(admin())}`, { role: 'admin' })).status, 200);
    await person(b.url, acme.slug, viewer(), PASSWORD, { cluster: acme.slug, role: 'viewer' });
    // a queue with a consumer group on cluster acme, for the dashboard pages
    assert.equal((await withKey(b.url, acme.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] })).status, 201);
    assert.equal((await withKey(b.url, acme.key, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=billing&subscriptionMode=all&batch=1`)).status, 200);
    browser = await launchDashboardBrowser();
    await browser.ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: b.url });
  });
  after(async () => {
    await browser?.close();
    await b?.stop();
  });

  test('an admin signs in, picks a cluster, creates a produce-only key, copies it, uses it from Node, revokes it', async () => {
    const page = browser.page;
    await shootLogin(page, b.url);
    await signIn(page, b.url, admin());
    await page.waitForSelector(`#who:has-text("${admin()}")`);
    await page.selectOption('[data-testid=cluster-picker]', { label: acme.slug });
    await page.waitForSelector('[data-testid=role]:has-text("admin")');
    await page.waitForSelector('[data-testid=key-form]', { state: 'visible' });
    await page.fill('[data-testid=key-name]', 'pusher');
    await page.check('[data-testid=scope-produce]');
    await page.click('[data-testid=create-key]');
    await page.waitForSelector('[data-testid=new-key-box]', { state: 'visible' });
    const shown = (await page.textContent('[data-testid=new-key]', { timeout: 10_000 }))!.trim();
    assert.match(shown, /^qk_live_[A-Za-z0-9_-]{43}$/);
    await page.click('[data-testid=copy-key]');
    await page.waitForSelector('#copied', { state: 'visible' });
    const key = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(key, shown, 'the copy button put the key on the clipboard');
    secrets.push(key, acme.key, (await page.context().cookies()).find((c) => c.name === 'queen_session')!.value);
    await page.waitForSelector('tr[data-key=pusher]');
    await shoot(page, 'keys');

    assert.equal((await withKey(b.url, key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 2 }] })).status, 201, 'produce works');
    const pop = await withKey(b.url, key, 'GET', `/api/v1/pop/queue/${q}?wait=false`);
    assert.equal(pop.status, 403, 'consume is not in its scopes');
    assert.equal((await call(b.url, 'GET', '/api/console/clusters', undefined, { authorization: `Bearer ${key}` })).status, 401, 'an API key is not a console credential');

    page.once('dialog', (d) => void d.accept());
    await page.click('tr[data-key=pusher] [data-testid=revoke-key]');
    await page.waitForSelector('tr[data-key=pusher] td:has-text("revoked")');
    const refused = await withKey(b.url, key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 3 }] });
    assert.deepEqual([refused.status, refused.body.code], [401, 'unauthorized'], 'the next push after the revocation');

    // the picker: the second cluster has its own keys
    await page.selectOption('[data-testid=cluster-picker]', { label: second });
    await waitFor(async () => (await page.locator('tr[data-key]').count()) === 0, { what: 'the second cluster\'s empty key list' });
    await page.selectOption('[data-testid=cluster-picker]', { label: acme.slug });
    await page.waitForSelector('tr[data-key=pusher]');
  });

  test('an admin grants, changes and removes a member', async () => {
    const page = browser.page;
    const newbie = `newbie@${acme.slug}.test`;
    await page.fill('[data-testid=member-email]', newbie);
    await page.selectOption('[data-testid=member-role]', 'viewer');
    await page.click('[data-testid=grant]');
    await page.waitForSelector(`tr[data-member="${newbie}"]`);
    await page.selectOption(`tr[data-member="${newbie}"] [data-testid=member-role-select]`, 'consumer');
    await waitFor(async () => (await cp(b.url, 'GET', `/api/cp/clusters/${acme.slug}/members`)).body.members.some((m: { email: string; role: string }) => m.email === newbie && m.role === 'consumer'),
      { what: 'the role change to reach the store' });
    await shoot(page, 'members');
    await page.click(`tr[data-member="${newbie}"] [data-testid=remove-member]`);
    await page.waitForSelector(`tr[data-member="${newbie}"]`, { state: 'detached' });
  });

  test('the dashboard behind the session: an admin sees the destructive buttons', async () => {
    const page = browser.page;
    await page.goto(`${b.url}/queues/${q}`);
    await page.waitForSelector('[data-testid=delete-queue]');
    await page.goto(`${b.url}/consumer-groups`);
    await page.waitForSelector('[data-testid=seek]');
    await page.goto(`${b.url}/dead-letters?queue=${q}`);
    await page.waitForSelector('[data-testid=purge]');
    await shoot(page, 'dashboard-admin');
  });

  test('sign-out, then a viewer: read-only console and dashboard', async () => {
    const page = browser.page;
    await page.goto(`${b.url}/console`);
    await Promise.all([page.waitForURL(/\/auth\/login$/), page.click('[data-testid=sign-out]')]);
    assert.equal((await page.context().cookies()).some((c) => c.name === 'queen_session'), false, 'the cookie is gone');
    await signIn(page, b.url, viewer());
    await page.waitForSelector('[data-testid=read-only]', { state: 'visible' });
    assert.equal(await page.isVisible('[data-testid=key-form]'), false);
    assert.equal(await page.isVisible('[data-testid=member-form]'), false);
    assert.equal(await page.locator('[data-testid=revoke-key], [data-testid=remove-member]').count(), 0);
    await shoot(page, 'viewer');
    await page.goto(`${b.url}/queues/${q}`);
    await page.waitForSelector(`h1:has-text("${q}")`);
    await page.goto(`${b.url}/consumer-groups`);
    await page.waitForSelector('tr:has-text("billing")');
    await page.goto(`${b.url}/dead-letters?queue=${q}`);
    await page.waitForSelector('[data-testid=dlq-search]');
    for (const p of [`/queues/${q}`, '/consumer-groups', `/dead-letters?queue=${q}`]) {
      await page.goto(`${b.url}${p}`);
      await page.waitForLoadState('networkidle');
      const n = await page.locator('[data-testid=delete-queue], [data-testid=seek], [data-testid=delete-group], [data-testid=purge], [data-testid=replay], [data-testid=drawer-replay]').count();
      assert.equal(n, 0, `no destructive button on ${p}`);
    }
    await shoot(page, 'dashboard-viewer');
    // and the API refuses them anyway
    const cookie = (await page.context().cookies()).find((c) => c.name === 'queen_session')!;
    const del = await call(b.url, 'DELETE', `/api/v1/resources/queues/${q}`, undefined, { cookie: `queen_session=${cookie.value}`, origin: b.url });
    assert.deepEqual([del.status, del.body.code], [403, 'forbidden']);
    secrets.push(cookie.value);
  });

  test('the logs of this run hold no password, API key, session cookie or hash', () => {
    const out = b.output();
    for (const s of [PASSWORD, ...secrets]) assert.equal(out.includes(s), false, `a secret of ${s.length} chars appears in the logs`);
    assert.doesNotMatch(out, /\$2[aby]\$\d\d\$/, 'no bcrypt hash');
    assert.match(out, /console: api key created/);
  });
});

async function shootLogin(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/auth/login?next=/console`);
  await shoot(page, 'login');
}
