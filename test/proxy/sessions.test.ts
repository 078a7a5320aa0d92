/**
 * Sessions for people on the embedded proxy, black box over real sockets (docs/proxy.md#sessions):
 * the login page and form, every failure, the per-IP throttle and the login guard's back-off (with
 * shortened knobs, waiting for the door to reopen), cookies and their flags, `/auth/me` in each
 * case, logout ending the cookie and the bearers minted from it, the cross-site origin check and
 * the navigation rule, and the logs of the run holding no secret.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { after, before, describe, test } from 'node:test';
import type { BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { bootstrap, cp, startProxied, type Tenant } from './helpers.js';
import { freshIp, login, person, postLogin, rawGet, SESSION_ENV, withCookie } from './session-helpers.js';

const PASSWORD = 'correct horse battery staple';

describe('proxy sessions', () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let email: string;
  /** Every secret the run produced, grepped for in the logs at the end. */
  const secrets: string[] = [PASSWORD, SESSION_ENV.QUEEN_PROXY_JWT_SECRET!];

  before(async () => {
    b = await startProxied({
      ...SESSION_ENV,
      QUEEN_LOGIN_BACKOFF_BASE_MS: '400', QUEEN_LOGIN_LOCKOUT_MAX_MS: '1500',
      QUEEN_LOGIN_ACCOUNT_FREE_FAILURES: '3', QUEEN_LOGIN_IP_FREE_FAILURES: '6',
    });
    acme = await bootstrap(b.url, uniqueName('acme').toLowerCase());
    email = `alice@${acme.slug}.test`;
    await person(b.url, acme.slug, email, PASSWORD, { cluster: acme.slug, role: 'admin' });
  });
  after(async () => { await b.stop(); });

  test('GET /auth/login: a self-contained page with the form, no script', async () => {
    const r = await fetch(`${b.url}/auth/login?next=/console`, { signal: AbortSignal.timeout(5000) });
    const text = await r.text();
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(text, /<form method="post" action="\/auth\/login">/);
    assert.match(text, /name="next" value="\/console"/);
    assert.doesNotMatch(text, /<script|<link|src=/);
  });

  test('login success: 303 to the safe next with the cookie (HttpOnly, SameSite=Lax, Secure only over HTTPS)', async () => {
    const ok = await postLogin(b.url, { email, password: PASSWORD, next: '/console?x=1' }, { 'x-forwarded-for': freshIp() });
    assert.equal(ok.status, 303);
    assert.equal(ok.headers.get('location'), '/console?x=1');
    const set = ok.headers.getSetCookie().find((c) => c.startsWith('queen_session='))!;
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Lax/);
    assert.doesNotMatch(set, /Secure/, 'plain HTTP from the client');
    secrets.push(ok.cookie!.split('=')[1]!);
    const https = await postLogin(b.url, { email: `  ${email.toUpperCase()} `, password: PASSWORD }, { 'x-forwarded-for': freshIp(), 'x-forwarded-proto': 'https' });
    assert.equal(https.status, 303, 'the e-mail is normalised');
    assert.match(https.headers.getSetCookie().find((c) => c.startsWith('queen_session='))!, /Secure/, 'X-Forwarded-Proto: https from a trusted peer');
    secrets.push(https.cookie!.split('=')[1]!);
    for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', 'console', '']) {
      const r = await postLogin(b.url, { email, password: PASSWORD, next }, { 'x-forwarded-for': freshIp() });
      assert.equal(r.status, 303);
      assert.equal(r.headers.get('location'), '/', `unsafe next ${JSON.stringify(next)}`);
      secrets.push(r.cookie!.split('=')[1]!);
    }
  });

  test('login failures: unknown e-mail, no password, wrong password → the same 401 page', async () => {
    const noPw = `nopw@${acme.slug}.test`;
    assert.equal((await cp(b.url, 'POST', '/api/cp/users', { tenant: acme.slug, email: noPw })).status, 201);
    const pages: string[] = [];
    for (const form of [{ email: `ghost@${acme.slug}.test`, password: PASSWORD }, { email: noPw, password: PASSWORD }, { email, password: 'wrong password!' }, { email, password: '' }]) {
      const r = await postLogin(b.url, form, { 'x-forwarded-for': freshIp() });
      assert.equal(r.status, 401, JSON.stringify(form.email));
      assert.match(r.text, /Invalid email or password\./);
      assert.equal(r.cookie, undefined);
      pages.push(r.text);
    }
    assert.equal(new Set(pages).size, 1, 'the failures are never told apart');
  });

  test('POST /api/login (JSON, the reference CLI\'s route): token and cookie, a bearer for the data plane; 400/401 envelopes', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) => call(b.url, 'POST', '/api/login', body, { 'x-forwarded-for': freshIp(), ...headers });
    const ok = await post({ username: email, password: PASSWORD });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.success, true);
    assert.deepEqual(ok.body.user, { username: email, id: ok.body.user.id, role: 'admin' });
    assert.equal(ok.body.token_type, 'Bearer');
    assert.match(ok.body.token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.ok(Date.parse(ok.body.expires_at) > Date.now());
    assert.equal(ok.headers.get('cache-control'), 'no-store');
    assert.match(ok.headers.getSetCookie().find((c) => c.startsWith('queen_session='))!, /HttpOnly/);
    // The reference CLI reads the JWT from a `token` cookie: one scoped to this route only, never a credential.
    const tokenCookie = ok.headers.getSetCookie().find((c) => c.startsWith('token='))!;
    assert.equal(tokenCookie.split(';')[0], `token=${ok.body.token}`);
    assert.match(tokenCookie, /; Path=\/api\/login(;|$)/);
    assert.match(tokenCookie, /HttpOnly/);
    assert.match(tokenCookie, /SameSite=Strict/);
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { cookie: `token=${ok.body.token}` })).status, 401, 'the `token` cookie is no credential');
    secrets.push(ok.body.token);
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { authorization: `Bearer ${ok.body.token}` })).status, 200);
    for (const body of [{ username: email, password: 'wrong password!' }, { username: `ghost@${acme.slug}.test`, password: PASSWORD }]) {
      const r = await post(body);
      assert.equal(r.status, 401);
      assert.deepEqual(r.body, { error: 'invalid credentials', code: 'unauthorized' });
      assert.equal(r.headers.getSetCookie().length, 0);
    }
    for (const body of [{ username: email }, { password: PASSWORD }, 'not json', {}]) {
      const r = await post(body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(typeof r.body?.error, 'string', r.text);
      if (body !== 'not json') assert.equal(r.body.code, 'invalid_request');
    }
    const cross = await post({ username: email, password: PASSWORD }, { cookie: ok.headers.getSetCookie().find((c) => c.startsWith('queen_session='))!.split(';')[0]!, origin: 'https://evil.example' });
    assert.equal(cross.status, 403, 'a cookie-carrying cross-site login is refused');
    assert.equal(cross.body.code, 'csrf_rejected');
  });

  test('per-IP throttle: the 11th attempt within a minute → 429 rate_limited with Retry-After', async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i++) {
      // distinct accounts so that the per-account guard is not what answers
      const r = await postLogin(b.url, { email: `t${i}@${acme.slug}.test`, password: 'x' }, { 'x-forwarded-for': ip });
      assert.ok(r.status === 401 || r.status === 429, String(r.status));
    }
    const r = await postLogin(b.url, { email, password: PASSWORD }, { 'x-forwarded-for': ip });
    assert.equal(r.status, 429);
    assert.deepEqual(JSON.parse(r.text), { error: 'too many login attempts', code: 'rate_limited' });
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
  });

  test('login guard: per-account back-off after the free failures, the same 429 whatever the password or letter case, then the door reopens', async () => {
    const victim = `bob@${acme.slug}.test`;
    await person(b.url, acme.slug, victim, PASSWORD, { cluster: acme.slug, role: 'viewer' });
    for (let i = 0; i < 4; i++) { // 3 free failures, the 4th closes the door for 400 ms
      assert.equal((await postLogin(b.url, { email: victim, password: `wrong-${i}` }, { 'x-forwarded-for': freshIp() })).status, 401);
    }
    for (const [who, pw] of [[victim, PASSWORD], [victim.toUpperCase(), PASSWORD], [` ${victim}`, 'wrong']] as const) {
      const r = await postLogin(b.url, { email: who, password: pw }, { 'x-forwarded-for': freshIp() });
      assert.equal(r.status, 429, `${who} during the back-off`);
      assert.equal(JSON.parse(r.text).code, 'rate_limited');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    // A fifth failure once the door reopens doubles the wait (800 ms); the correct password then works after it.
    await waitFor(async () => (await postLogin(b.url, { email: victim, password: 'wrong-5' }, { 'x-forwarded-for': freshIp() })).status === 401, { what: 'the first back-off to end', timeoutMs: 5000, intervalMs: 100 });
    assert.equal((await postLogin(b.url, { email: victim, password: PASSWORD }, { 'x-forwarded-for': freshIp() })).status, 429, 'doubled back-off');
    const cookie = await waitFor(async () => {
      const r = await postLogin(b.url, { email: victim, password: PASSWORD }, { 'x-forwarded-for': freshIp() });
      return r.status === 303 ? r.cookie : undefined;
    }, { what: 'the second back-off to end', timeoutMs: 5000, intervalMs: 100 });
    secrets.push(cookie.split('=')[1]!);
  });

  test('login guard: per-IP failures back off across accounts', async () => {
    // A broker of its own with a 60 s back-off: with the suite's 400 ms one, a slow machine (each
    // login hashes a password) could reopen the door before the next attempt arrives.
    const g = await startProxied({
      ...SESSION_ENV,
      QUEEN_LOGIN_BACKOFF_BASE_MS: '60000', QUEEN_LOGIN_LOCKOUT_MAX_MS: '120000',
      QUEEN_LOGIN_ACCOUNT_FREE_FAILURES: '3', QUEEN_LOGIN_IP_FREE_FAILURES: '6',
    });
    try {
      const t = await bootstrap(g.url, uniqueName('ipg').toLowerCase());
      const owner = `carol@${t.slug}.test`;
      await person(g.url, t.slug, owner, PASSWORD, { cluster: t.slug, role: 'admin' });
      const ip = freshIp();
      for (let i = 0; i < 7; i++) { // 6 free per IP, the 7th closes the door
        assert.equal((await postLogin(g.url, { email: `ipguard${i}@${t.slug}.test`, password: 'x' }, { 'x-forwarded-for': ip })).status, 401);
      }
      const r = await postLogin(g.url, { email: owner, password: PASSWORD }, { 'x-forwarded-for': ip });
      assert.equal(r.status, 429);
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      const other = await postLogin(g.url, { email: owner, password: PASSWORD }, { 'x-forwarded-for': freshIp() });
      assert.equal(other.status, 303, 'another address is not affected');
      secrets.push(other.cookie!.split('=')[1]!);
    } finally {
      await g.stop();
    }
  });

  test('bootstrap with a password: password_set and can_login, and the admin signs in', async () => {
    const slug = uniqueName('boot').toLowerCase();
    const r = await cp(b.url, 'POST', '/api/cp/bootstrap', { tenant: slug, email: `Root@${slug}.test`, password: PASSWORD });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.password_set, r.body.can_login], [true, true]);
    assert.equal((await cp(b.url, 'POST', '/api/cp/bootstrap', { tenant: slug, email: `root@${slug}.test`, password: 'short' })).body.code, 'invalid');
    const cookie = await login(b.url, `root@${slug}.test`, PASSWORD);
    secrets.push(cookie.split('=')[1]!);
    const me = await withCookie(b.url, cookie, 'GET', '/auth/me');
    assert.deepEqual(me.body.acting_cluster, { id: r.body.cluster_id, slug, role: 'admin' });
  });

  test('/auth/me: no session, invalid session, session no longer valid, and the identity', async () => {
    assert.deepEqual((await call(b.url, 'GET', '/auth/me')).body, { error: 'no session', code: 'unauthorized' });
    assert.deepEqual((await withCookie(b.url, 'queen_session=not.a.jwt', 'GET', '/auth/me')).body, { error: 'invalid session', code: 'unauthorized' });
    const cookie = await login(b.url, email, PASSWORD);
    secrets.push(cookie.split('=')[1]!);
    const me = await withCookie(b.url, cookie, 'GET', '/auth/me');
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.user.email, email);
    assert.equal(me.body.is_operator, false);
    assert.equal(me.body.operator_live, false);
    assert.deepEqual([me.body.user_id, me.body.email, me.body.tenant_slug, me.body.standalone, me.body.role, me.body.cluster], [me.body.user.id, email, acme.slug, false, 'admin', acme.clusterId]);
    assert.deepEqual(me.body.clusters.map((c: { slug: string; role: string }) => [c.slug, c.role]), [[acme.slug, 'admin']]);
    assert.deepEqual(me.body.acting_cluster, { id: acme.clusterId, slug: acme.slug, role: 'admin' }, 'the only cluster acts');
    assert.equal(me.text.includes('password'), false);
    const cellWins = await withCookie(b.url, `queen_session=garbage; queen_session_cell=${cookie.split('=')[1]!}`, 'GET', '/auth/me');
    assert.equal(cellWins.status, 200, 'the cell-scoped cookie wins over the fleet cookie');
    const bearerAsCookie = await withCookie(b.url, cookie, 'GET', '/auth/me', undefined, { authorization: 'Bearer whatever' });
    assert.equal(bearerAsCookie.status, 200, '/auth/me reads the cookie only');
    // a deleted user
    const gone = `gone@${acme.slug}.test`;
    await person(b.url, acme.slug, gone, PASSWORD, { cluster: acme.slug, role: 'viewer' });
    const goneCookie = await login(b.url, gone, PASSWORD);
    secrets.push(goneCookie.split('=')[1]!);
    assert.equal((await cp(b.url, 'DELETE', `/api/cp/users/${encodeURIComponent(gone)}`)).status, 200);
    assert.deepEqual((await withCookie(b.url, goneCookie, 'GET', '/auth/me')).body, { error: 'session no longer valid', code: 'unauthorized' });
    assert.equal((await withCookie(b.url, goneCookie, 'GET', '/api/v1/resources/queues')).status, 401);
  });

  test('logout: the old cookie and a bearer minted from it → 401; logout without a session → 200', async () => {
    const cookie = await login(b.url, email, PASSWORD);
    secrets.push(cookie.split('=')[1]!);
    const st = await withCookie(b.url, cookie, 'GET', '/auth/session-token');
    assert.equal(st.status, 200, st.text);
    assert.equal(st.body.token_type, 'Bearer');
    assert.ok(st.body.expires_in > 0 && st.body.expires_in <= 900, String(st.body.expires_in));
    const bearer = st.body.token as string;
    secrets.push(bearer);
    const q = uniqueName('sess');
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { authorization: `Bearer ${bearer}` })).status, 201);
    assert.equal((await withCookie(b.url, cookie, 'GET', '/api/v1/resources/queues')).status, 200);
    const out = await withCookie(b.url, cookie, 'POST', '/auth/logout', {}, { origin: b.url });
    assert.equal(out.status, 200);
    assert.deepEqual(out.body, { ok: true });
    assert.match(out.headers.getSetCookie().join('\n'), /queen_session=;/, 'the cookie is cleared');
    assert.deepEqual((await withCookie(b.url, cookie, 'GET', '/auth/me')).body, { error: 'invalid session', code: 'unauthorized' });
    assert.equal((await withCookie(b.url, cookie, 'GET', '/api/v1/resources/queues')).status, 401, 'old cookie on the data plane');
    const old = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { authorization: `Bearer ${bearer}` });
    assert.deepEqual([old.status, old.body], [401, { error: 'invalid credential', code: 'unauthorized' }], 'the bearer minted from the session');
    assert.deepEqual((await call(b.url, 'POST', '/auth/logout', {})).body, { ok: true });
  });

  test('CSRF: a state-changing cookie request needs an allowed origin (exact; Origin: null is foreign); a bearer is not judged', async () => {
    const cookie = await login(b.url, email, PASSWORD);
    secrets.push(cookie.split('=')[1]!);
    const q = uniqueName('csrf');
    const push = (headers: Record<string, string>) => withCookie(b.url, cookie, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, headers);
    for (const origin of ['http://evil.example', 'null', `${b.url}.evil.example`, b.url.replace('http:', 'https:'), `${b.url}0`]) {
      const r = await push({ origin });
      assert.equal(r.status, 403, origin);
      assert.equal(r.body.code, 'csrf_rejected', origin);
    }
    assert.equal((await push({})).status, 403, 'no Origin, no Referer, no Sec-Fetch-Site');
    assert.equal((await push({ referer: 'http://evil.example/page' })).status, 403);
    assert.equal((await push({ 'sec-fetch-site': 'cross-site' })).status, 403);
    assert.equal((await push({ origin: b.url })).status, 201);
    assert.equal((await push({ referer: `${b.url}/console/keys` })).status, 201);
    assert.equal((await push({ 'sec-fetch-site': 'same-origin' })).status, 201);
    assert.equal((await withCookie(b.url, cookie, 'POST', '/auth/logout', {}, { origin: 'http://evil.example' })).body.code, 'csrf_rejected', 'logout too');
    assert.equal((await withCookie(b.url, cookie, 'GET', '/api/v1/resources/queues', undefined, { origin: 'http://evil.example' })).status, 200, 'GET is not judged');
    const bearer = (await withCookie(b.url, cookie, 'GET', '/auth/session-token')).body.token as string;
    secrets.push(bearer);
    const viaBearer = await push({ origin: 'http://evil.example', authorization: `Bearer ${bearer}` });
    assert.equal(viaBearer.status, 201, 'Authorization wins: the cookie is ignored, so no origin check');
  });

  test('navigation rule: the cookie is ignored on API routes during a cross-document navigation', async () => {
    const cookie = await login(b.url, email, PASSWORD);
    secrets.push(cookie.split('=')[1]!);
    assert.equal((await rawGet(b.url, '/api/v1/resources/queues', { cookie, 'sec-fetch-mode': 'cors' })).status, 200);
    const nav = await rawGet(b.url, '/api/v1/resources/queues', { cookie, 'sec-fetch-mode': 'navigate' });
    assert.equal(nav.status, 401);
    assert.equal(JSON.parse(nav.text).code, 'unauthorized');
    assert.equal((await rawGet(b.url, '/auth/me', { cookie, 'sec-fetch-mode': 'navigate' })).status, 200, 'not an API route');
  });

  test('a qk_ value in the cookie is not a credential; a forged or expired-looking token is 401', async () => {
    assert.equal((await withCookie(b.url, `queen_session=${acme.key}`, 'GET', '/api/v1/resources/queues')).status, 401);
    const r = await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' });
    assert.deepEqual([r.status, r.body], [401, { error: 'invalid credential', code: 'unauthorized' }]);
  });

  test('the logs of this run hold no password, session token, cookie value or hash', async () => {
    const hashes = [...b.output().matchAll(/\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}/g)];
    assert.equal(hashes.length, 0, 'no bcrypt hash');
    const out = b.output();
    for (const s of secrets) assert.equal(out.includes(s), false, `a secret of ${s.length} chars appears in the logs`);
    // every refused sign-in above (401, 400, 429) is an answer, not a failure of the broker
    const errors = out.split('\n').filter((l) => /"level":(50|60)/.test(l));
    assert.deepEqual(errors, [], 'no error-level log line in a run of refused and accepted sign-ins');
    assert.match(out, /proxy sign-in/, 'sign-ins are logged (by user id)');
  });
});

describe('proxy session signers', () => {
  test('EdDSA from QUEEN_PROXY_JWT_ED25519_PEM: the cookie token names the kid; an HS256 token with any secret is refused', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const b = await startProxied({ QUEEN_PROXY_JWT_ED25519_PEM: pem, QUEEN_EDGE_TRUSTED_PROXIES: '127.0.0.1' });
    try {
      const acme = await bootstrap(b.url, uniqueName('ed').toLowerCase());
      const email = `ed@${acme.slug}.test`;
      const userId = await person(b.url, acme.slug, email, PASSWORD, { cluster: acme.slug, role: 'admin' });
      const cookie = await login(b.url, email, PASSWORD);
      const token = cookie.split('=')[1]!;
      const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string };
      const raw = Buffer.from((publicKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url');
      assert.deepEqual(header, { alg: 'EdDSA', kid: createHash('sha256').update(raw).digest('hex').slice(0, 32), typ: 'JWT' });
      assert.equal((await withCookie(b.url, cookie, 'GET', '/auth/me')).status, 200);
      const forged = await new SignJWT({ role: 'admin' }).setProtectedHeader({ alg: 'HS256', kid: 'hs' }).setSubject(userId).setIssuer('queen-proxy')
        .setIssuedAt().setExpirationTime('1h').setJti('forged').sign(new TextEncoder().encode(pem));
      assert.deepEqual((await withCookie(b.url, `queen_session=${forged}`, 'GET', '/auth/me')).body, { error: 'invalid session', code: 'unauthorized' }, 'no HS256 downgrade');
      assert.equal(b.output().includes(token), false);
      assert.equal(b.output().includes('PRIVATE KEY'), false);
    } finally {
      await b.stop();
    }
  });

  test('no signer: login answers 500 session token could not be minted, with a boot warning', async () => {
    const b = await startProxied({ QUEEN_EDGE_TRUSTED_PROXIES: '127.0.0.1' });
    try {
      const acme = await bootstrap(b.url, uniqueName('nosig').toLowerCase());
      const email = `n@${acme.slug}.test`;
      await person(b.url, acme.slug, email, PASSWORD, { cluster: acme.slug, role: 'admin' });
      const r = await postLogin(b.url, { email, password: PASSWORD }, { 'x-forwarded-for': freshIp() });
      assert.deepEqual([r.status, JSON.parse(r.text)], [500, { error: 'session token could not be minted', code: 'internal_error' }]);
      assert.match(b.output(), /people cannot sign in on the proxy/);
    } finally {
      await b.stop();
    }
  });
});
