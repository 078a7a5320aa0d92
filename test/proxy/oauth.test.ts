/**
 * Sign-in with Google (OpenID Connect) and GitHub end to end (docs/proxy.md#oauth): a real OpenID
 * provider (`oidc-provider`) on loopback stands in for Google, a small GitHub-shaped server for
 * GitHub, and a cookie-keeping client follows the redirects as a browser would. First sign-ins are
 * provisioned with `QUEEN_PROXY_DEFAULT_ROLE`; an unverified e-mail, a domain outside
 * `GOOGLE_ALLOWED_DOMAINS`, a forged `state`, another browser's callback and a replayed callback
 * are refused.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Provider from 'oidc-provider';
import { waitFor } from '../helpers/wait.js';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { cp, CP_TOKEN } from './helpers.js';
import { postLogin, SESSION_ENV, withCookie } from './session-helpers.js';

/** A browser's cookie jar per origin and a redirect-following GET. */
class Browser {
  private readonly jar = new Map<string, Map<string, string>>();

  cookies(origin: string): Map<string, string> {
    let m = this.jar.get(origin);
    if (!m) this.jar.set(origin, (m = new Map()));
    return m;
  }

  /** GETs `url`, following up to 20 redirects; stops early at a URL for which `stop` is true. */
  async go(url: string, stop: (u: URL) => boolean = () => false): Promise<{ status: number; url: URL; text: string; location?: string }> {
    let u = new URL(url);
    for (let hop = 0; hop < 20; hop++) {
      if (hop > 0 && stop(u)) return { status: 0, url: u, text: '' };
      const jar = this.cookies(u.origin);
      const r = await fetch(u, {
        redirect: 'manual', signal: AbortSignal.timeout(10_000),
        headers: jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {},
      });
      for (const c of r.headers.getSetCookie()) {
        const [pair = '', ...attrs] = c.split(';');
        const i = pair.indexOf('=');
        const name = pair.slice(0, i).trim();
        const value = pair.slice(i + 1).trim();
        const gone = value === '' || attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || attrs.some((a) => /^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now());
        if (gone) jar.delete(name); else jar.set(name, value);
      }
      const location = r.headers.get('location');
      const text = await r.text();
      if (r.status < 300 || r.status >= 400 || !location) return { status: r.status, url: u, text };
      if (!/^https?:/.test(location) && !location.startsWith('/')) return { status: r.status, url: u, text, location };
      const next = new URL(location, u);
      if (next.origin === u.origin && r.status === 303 && next.pathname !== u.pathname && u.pathname.endsWith('/callback')) return { status: r.status, url: u, text, location };
      u = next;
    }
    throw new Error('too many redirects');
  }
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function freePort(): Promise<number> {
  const s = http.createServer();
  return listen(s).then((p) => new Promise((resolve) => s.close(() => resolve(p))));
}

describe('OAuth sign-in against a loopback OpenID provider and a GitHub-shaped stub', () => {
  let b: BrokerHandle;
  let proxy: string;
  let idp: http.Server;
  let gh: http.Server;
  let issuer: string;
  let ghBase: string;
  /** The account the OpenID provider signs in next (its id = an e-mail key of `accounts`). */
  let nextAccount = '';
  const accounts = new Map<string, { email: string; email_verified: boolean }>();
  /** GitHub stub state: codes → PKCE challenge and user; access tokens → user e-mails. */
  let ghUser: { email: string; primary: boolean; verified: boolean }[] = [];
  const ghCodes = new Map<string, { challenge: string; emails: typeof ghUser }>();
  const ghTokens = new Map<string, typeof ghUser>();
  const issuedSecrets: string[] = [];

  before(async () => {
    const port = await freePort();
    proxy = `http://127.0.0.1:${port}`;
    idp = http.createServer();
    const idpPort = await listen(idp);
    issuer = `http://127.0.0.1:${idpPort}`;
    const provider = new Provider(issuer, {
      clients: [{
        client_id: 'queen-google', client_secret: 'google-client-secret-123', redirect_uris: [`${proxy}/auth/google/callback`],
        token_endpoint_auth_method: 'client_secret_post', response_types: ['code'], grant_types: ['authorization_code'],
      }],
      async findAccount(_ctx: unknown, id: string) {
        const a = accounts.get(id);
        return a && { accountId: id, async claims() { return { sub: id, ...a }; } };
      },
      claims: { openid: ['sub'], email: ['email', 'email_verified'] },
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      cookies: { keys: ['oidc-test-cookie-key'] },
    });
    const handler = provider.callback();
    idp.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (!req.url?.startsWith('/interaction/')) return handler(req, res);
      void (async () => {
        const details = await provider.interactionDetails(req, res);
        const grant = new provider.Grant({ accountId: nextAccount, clientId: details.params.client_id });
        grant.addOIDCScope('openid email');
        const grantId = await grant.save();
        await provider.interactionFinished(req, res, { login: { accountId: nextAccount }, consent: { grantId } }, { mergeWithLastSubmission: false });
      })().catch((e: Error) => { res.statusCode = 500; res.end(e.message); });
    });

    gh = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      const json = (status: number, body: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
      if (req.method === 'GET' && u.pathname === '/login/oauth/authorize') {
        const code = randomBytes(12).toString('hex');
        ghCodes.set(code, { challenge: u.searchParams.get('code_challenge') ?? '', emails: ghUser });
        const back = new URL(u.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', u.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.href });
        return res.end();
      }
      if (req.method === 'POST' && u.pathname === '/login/oauth/access_token') {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          const f = new URLSearchParams(body);
          const c = ghCodes.get(f.get('code') ?? '');
          ghCodes.delete(f.get('code') ?? '');
          const challenge = createHash('sha256').update(f.get('code_verifier') ?? '').digest('base64url');
          if (!c || f.get('client_secret') !== 'github-client-secret-456' || challenge !== c.challenge) return json(400, { error: 'bad_verification_code' });
          const token = `gho_${randomBytes(16).toString('hex')}`;
          issuedSecrets.push(token);
          ghTokens.set(token, c.emails);
          json(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
        });
        return;
      }
      if (req.method === 'GET' && u.pathname === '/api/user/emails') {
        const emails = ghTokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
        return emails ? json(200, emails) : json(401, { message: 'Bad credentials' });
      }
      json(404, { message: 'Not Found' });
    });
    const ghPort = await listen(gh);
    ghBase = `http://127.0.0.1:${ghPort}`;

    b = await startBroker({
      port,
      env: {
        QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_CP_TOKEN: CP_TOKEN, QUEEN_EDGE_RATE: '100000', QUEEN_EDGE_BURST: '100000', ...SESSION_ENV,
        QUEEN_PROXY_BOOTSTRAP_TENANT: 'oauthco', QUEEN_PROXY_BOOTSTRAP_PASSWORD: 'bootstrap-password-1', QUEEN_PROXY_DEFAULT_ROLE: 'consumer',
        GOOGLE_CLIENT_ID: 'queen-google', GOOGLE_CLIENT_SECRET: 'google-client-secret-123', QUEEN_PROXY_GOOGLE_ISSUER: issuer, GOOGLE_ALLOWED_DOMAINS: 'example.test,corp.test',
        GITHUB_CLIENT_ID: 'queen-github', GITHUB_CLIENT_SECRET: 'github-client-secret-456', QUEEN_PROXY_GITHUB_BASE_URL: ghBase, QUEEN_PROXY_GITHUB_API_URL: `${ghBase}/api`,
      },
    });
  });
  after(async () => {
    await b.stop();
    idp.closeAllConnections();
    gh.closeAllConnections();
    await new Promise((r) => idp.close(r));
    await new Promise((r) => gh.close(r));
  });

  test('Google: the first sign-in provisions the user with QUEEN_PROXY_DEFAULT_ROLE on the tenant\'s clusters; the next one finds them', async () => {
    accounts.set('ann', { email: 'Ann@Example.test', email_verified: true });
    nextAccount = 'ann';
    const browser = new Browser();
    const done = await browser.go(`${proxy}/auth/google?next=/console`);
    assert.equal(done.status, 303, done.text.slice(0, 300));
    assert.equal(done.location, '/console');
    const session = browser.cookies(proxy).get('queen_session');
    assert.ok(session, 'the session cookie');
    assert.equal(browser.cookies(proxy).has('queen_oauth'), false, 'the flow cookie is cleared');
    const me = await withCookie(proxy, `queen_session=${session}`, 'GET', '/auth/me');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.user.email, 'ann@example.test');
    assert.deepEqual(me.body.clusters.map((c: { slug: string; role: string }) => [c.slug, c.role]), [['oauthco', 'consumer']]);
    const again = new Browser();
    assert.equal((await again.go(`${proxy}/auth/google`)).status, 303);
    const user = await cp(proxy, 'GET', `/api/cp/users/${encodeURIComponent('ann@example.test')}`);
    assert.equal(user.body.password_set, false);
    // Log lines reach the pipe after the answers they belong to: waited for, not read at once.
    await waitFor(() => /"provider":"google","provisioned":true/.test(b.output()), { what: 'the provisioning sign-in log line' });
    await waitFor(() => /"provider":"google","provisioned":false/.test(b.output()), { what: 'the second sign-in log line' });
  });

  test('Google: an unverified e-mail or a domain outside GOOGLE_ALLOWED_DOMAINS is refused, nobody is provisioned', async () => {
    for (const [id, a, why] of [
      ['unverified', { email: 'eve@example.test', email_verified: false }, /not verified/],
      ['outsider', { email: 'mallory@elsewhere.test', email_verified: true }, /domain is not allowed/],
    ] as const) {
      accounts.set(id, a);
      nextAccount = id;
      const browser = new Browser();
      const r = await browser.go(`${proxy}/auth/google`);
      assert.equal(r.status, 403, id);
      assert.match(r.text, why);
      assert.equal(browser.cookies(proxy).has('queen_session'), false);
      assert.equal((await cp(proxy, 'GET', `/api/cp/users/${encodeURIComponent(a.email)}`)).status, 404, `${id} is not provisioned`);
    }
  });

  test('state: a forged state, another browser\'s callback and a replayed callback are refused (400 oauth_state_mismatch)', async () => {
    accounts.set('carl', { email: 'carl@corp.test', email_verified: true });
    nextAccount = 'carl';
    const browser = new Browser();
    const atCallback = await browser.go(`${proxy}/auth/google`, (u) => u.pathname === '/auth/google/callback');
    const callback = atCallback.url.href;
    const flowCookie = browser.cookies(proxy).get('queen_oauth')!;
    assert.ok(flowCookie);
    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged-state');
    const f = await fetch(forged, { redirect: 'manual', headers: { cookie: `queen_oauth=${flowCookie}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal(f.status, 400);
    assert.match(await f.text(), /oauth_state_mismatch/);
    // the flow is spent by that attempt: the right state with the same cookie is refused as well
    const reuse = await fetch(callback, { redirect: 'manual', headers: { cookie: `queen_oauth=${flowCookie}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal(reuse.status, 400, 'usable once');
    // another browser (no flow cookie) with a valid callback URL; then the browser that started it finishes once
    const other = new Browser();
    const again = new Browser();
    const cb2 = (await again.go(`${proxy}/auth/google`, (u) => u.pathname === '/auth/google/callback')).url.href;
    assert.equal((await other.go(cb2)).status, 400, 'bound to the browser that started the flow');
    const saved = again.cookies(proxy).get('queen_oauth')!;
    assert.equal((await again.go(cb2)).status, 303, 'the starting browser signs in');
    const replay = await fetch(cb2, { redirect: 'manual', headers: { cookie: `queen_oauth=${saved}` }, signal: AbortSignal.timeout(10_000) });
    assert.equal(replay.status, 400, 'a replayed callback with the saved flow cookie');
  });

  test('GitHub: a verified primary e-mail signs in and is provisioned; only unverified e-mails → refused; forged state → 400', async () => {
    ghUser = [{ email: 'old@gh.test', primary: false, verified: false }, { email: 'Gina@GH.test', primary: true, verified: true }];
    const browser = new Browser();
    const r = await browser.go(`${proxy}/auth/github?next=/console/keys`);
    assert.equal(r.status, 303, r.text.slice(0, 300));
    assert.equal(r.location, '/console/keys');
    const me = await withCookie(proxy, `queen_session=${browser.cookies(proxy).get('queen_session')!}`, 'GET', '/auth/me');
    assert.equal(me.body.user.email, 'gina@gh.test');
    assert.deepEqual(me.body.clusters.map((c: { role: string }) => c.role), ['consumer']);

    ghUser = [{ email: 'nope@gh.test', primary: true, verified: false }];
    const refused = await new Browser().go(`${proxy}/auth/github`);
    assert.equal(refused.status, 403);
    assert.match(refused.text, /no verified e-mail/);

    const b2 = new Browser();
    const at = await b2.go(`${proxy}/auth/github`, (u) => u.pathname === '/auth/github/callback');
    const forged = new URL(at.url);
    forged.searchParams.set('state', 'x');
    assert.equal((await b2.go(forged.href)).status, 400);
  });

  test('QUEEN_PROXY_BOOTSTRAP_PASSWORD: the bootstrap admin signs in with a password', async () => {
    const r = await postLogin(proxy, { email: 'admin@localhost', password: 'bootstrap-password-1' });
    assert.equal(r.status, 303, r.text.slice(0, 200));
    assert.match(b.output(), /"canLogin":true,"msg":"proxy bootstrap tenant ready"/);
  });

  test('the logs hold no provider token, client secret or session cookie', () => {
    const out = b.output();
    for (const s of ['bootstrap-password-1', ...issuedSecrets, 'google-client-secret-123', 'github-client-secret-456', SESSION_ENV.QUEEN_PROXY_JWT_SECRET!]) {
      assert.equal(out.includes(s), false, `a secret of ${s.length} chars is in the logs`);
    }
    assert.doesNotMatch(out, /queen_session=|queen_oauth=/);
  });
});
