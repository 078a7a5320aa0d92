/**
 * An attacker's review of the people front door on the embedded proxy, black box over real sockets
 * (docs/proxy.md#sessions, #login-guard, #console): open redirects through `next`, cross-site
 * variants, tampered session tokens, huge and malformed login bodies, login-guard evasion, the
 * timing of unknown e-mails against wrong passwords, a viewer's destructive calls, the console
 * without a session, the logs of the run holding no secret, and the bootstrap password's length rule.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { after, before, describe, test } from 'node:test';
import { runBrokerExpectingExit, type BrokerHandle } from '../helpers/broker.js';
import { uniqueName } from '../helpers/http.js';
import { bootstrap, startProxied, type Tenant } from './helpers.js';
import { freshIp, login, person, postLogin, SESSION_ENV } from './session-helpers.js';

const PASSWORD = 'attack-review password 42';
const VIEWER_PASSWORD = 'viewer password for review 7';

interface Reply { status: number; text: string; body: any; headers: Headers }

/** A bounded call (10 s) with exactly these headers; the body is sent as given (string) or as JSON. */
async function send(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const init: RequestInit = { method, redirect: 'manual', headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(10_000) };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const r = await fetch(base + path, init);
  const text = await r.text();
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { parsed = undefined; }
  return { status: r.status, text, body: parsed, headers: r.headers };
}

/**
 * A raw request over node:http: `headers` exactly, then `chunks` written one by one (chunked when
 * no content-length is given). Bounded by 10 s.
 */
function rawRequest(base: string, method: string, path: string, headers: Record<string, string>, chunks: string[], end = true): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(base + path, { method, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('rawRequest timed out')));
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
    for (const c of chunks) req.write(c);
    if (end) req.end();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('proxy sessions under attack', () => {
  let b: BrokerHandle;
  let other: BrokerHandle;
  let acme: Tenant;
  let email: string;
  let userId: string;
  let viewerEmail: string;
  const secrets: string[] = [PASSWORD, VIEWER_PASSWORD, SESSION_ENV.QUEEN_PROXY_JWT_SECRET!];
  const OTHER_SECRET = 'another-cluster-secret-0123456789abcdef';
  const key = new TextEncoder().encode(SESSION_ENV.QUEEN_PROXY_JWT_SECRET!);
  const base = () => b.url;

  before(async () => {
    [b, other] = await Promise.all([
      startProxied({
        ...SESSION_ENV,
        // The per-account door closes after 3 failures and stays closed for the whole file.
        QUEEN_LOGIN_ACCOUNT_FREE_FAILURES: '3', QUEEN_LOGIN_IP_FREE_FAILURES: '1000', QUEEN_LOGIN_THROTTLE_ATTEMPTS: '1000',
        QUEEN_LOGIN_BACKOFF_BASE_MS: '600000', QUEEN_LOGIN_LOCKOUT_MAX_MS: '900000',
        // Written the way an operator might: case, default port, trailing slash.
        QUEEN_PROXY_PUBLIC_ORIGIN: 'https://Queen.Example:443/',
      }),
      // No trusted proxy: X-Forwarded-For must change nothing; 3 attempts per minute per address.
      startProxied({ QUEEN_PROXY_JWT_SECRET: OTHER_SECRET, QUEEN_LOGIN_THROTTLE_ATTEMPTS: '3' }),
    ]);
    secrets.push(OTHER_SECRET);
    acme = await bootstrap(b.url, uniqueName('atk').toLowerCase());
    secrets.push(acme.key);
    email = `alice@${acme.slug}.test`;
    viewerEmail = `vera@${acme.slug}.test`;
    userId = await person(b.url, acme.slug, email, PASSWORD, { cluster: acme.slug, role: 'admin' });
    await person(b.url, acme.slug, viewerEmail, VIEWER_PASSWORD, { cluster: acme.slug, role: 'viewer' });
  });
  after(async () => { await Promise.all([b?.stop(), other?.stop()]); });

  const cookieOf = async (who = email, pw = PASSWORD) => {
    const c = await login(base(), who, pw);
    secrets.push(c.split('=')[1]!);
    return c;
  };

  test('open redirects through next: every variant lands on this site; a non-ASCII path is kept, not a 500', async () => {
    const host = new URL(b.url).host;
    const variants = ['//evil.example', '/\\evil.example', '\\/evil.example', '/%2F%2Fevil.example', '%2F%2Fevil.example', '/%5Cevil.example',
      'javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' //evil.example', '\t//evil.example', '/\t/evil.example', '/\r\nset-cookie: x=1',
      '/\u3000/evil.example', 'https:evil.example', 'http://evil.example', '/.//evil.example', 'data:text/html,<script>alert(1)</script>',
      '/%0d%0aset-cookie:%20x=1', `/${'a'.repeat(3000)}`, '/console/中文?q=é', '/\ud800'];
    for (const next of variants) {
      const r = await postLogin(b.url, { email, password: PASSWORD, next }, { 'x-forwarded-for': freshIp() });
      assert.equal(r.status, 303, `${JSON.stringify(next)}: ${r.text.slice(0, 200)}`);
      if (r.cookie) secrets.push(r.cookie.split('=')[1]!);
      const location = r.headers.get('location')!;
      assert.match(location, /^\/(?![/\\])/, JSON.stringify(next));
      assert.equal(new URL(location, b.url).host, host, `${JSON.stringify(next)} → ${location}`);
      assert.equal(r.headers.getSetCookie().some((c) => c.startsWith('x=')), false);
    }
    const kept = await postLogin(b.url, { email, password: PASSWORD, next: '/console/中文?q=é' }, { 'x-forwarded-for': freshIp() });
    secrets.push(kept.cookie!.split('=')[1]!);
    assert.equal(decodeURIComponent(kept.headers.get('location')!), '/console/中文?q=é', 'a path on this site is kept (percent-encoded)');
    // The unauthenticated page redirect builds next from the decoded path: it must survive the round trip.
    const page = await send(b.url, 'GET', '/console/%E4%B8%AD', undefined, { accept: 'text/html' });
    assert.equal(page.status, 303);
    const form = await send(b.url, 'GET', page.headers.get('location')!);
    assert.equal(form.status, 200);
    assert.match(form.text, /name="next" value="\/console\/%E4%B8%AD"/);
    for (const next of ['javascript:alert(1)', '"><script>alert(1)</script>', '//evil.example']) {
      const p = await send(b.url, 'GET', `/auth/login?next=${encodeURIComponent(next)}`);
      assert.match(p.text, /name="next" value="\/"/, next);
      assert.doesNotMatch(p.text, /<script/);
    }
  });

  test('CSRF variants: trailing slash, other port or scheme, Origin null, Origin foreign with a same-site Referer → 403; same-origin Referer alone → 2xx', async () => {
    const cookie = await cookieOf();
    const q = uniqueName('csrf');
    const push = (headers: Record<string, string>) => send(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { cookie, ...headers });
    const u = new URL(b.url);
    const foreign: Record<string, string>[] = [
      { origin: `${b.url}/` }, { origin: `http://${u.hostname}:${Number(u.port) + 1}` }, { origin: `http://${u.hostname}` }, { origin: `https://${u.host}` },
      { origin: 'null' }, { origin: 'null', referer: `${b.url}/console` }, { origin: 'http://evil.example', referer: `${b.url}/console` },
      { origin: `http://localhost:${u.port}` }, { origin: `${b.url}, http://evil.example` },
      { referer: 'null' }, { referer: 'not a url' }, { referer: `http://${u.host}.evil.example/x` }, { referer: `http://evil.example/${u.host}` },
      { referer: 'http://evil.example/', 'sec-fetch-site': 'same-origin' }, { 'sec-fetch-site': 'same-site' }, { 'sec-fetch-site': 'none' },
    ];
    for (const h of foreign) {
      const r = await push(h);
      assert.deepEqual([r.status, r.body?.code], [403, 'csrf_rejected'], JSON.stringify(h));
    }
    assert.equal((await push({ referer: `${b.url}/console?x=1#y` })).status, 201, 'no Origin, a same-origin Referer');
    assert.equal((await push({ origin: 'https://queen.example' })).status, 201, 'the configured public origin, as a browser sends it');
    assert.equal((await push({ origin: 'https://queen.example:8443' })).status, 403, 'not on another port');
    const keys = `/api/console/clusters/${acme.slug}/keys`;
    for (const h of [{ origin: 'http://evil.example' }, { origin: 'null' }, {}] as Record<string, string>[]) {
      const r = await send(b.url, 'POST', keys, { name: 'csrf', scopes: ['produce'] }, { cookie, ...h });
      assert.deepEqual([r.status, r.body?.code], [403, 'csrf_rejected'], `console key create ${JSON.stringify(h)}`);
      const m = await send(b.url, 'PUT', `/api/console/clusters/${acme.slug}/members`, { email: 'mallory@evil.example', role: 'admin' }, { cookie, ...h });
      assert.deepEqual([m.status, m.body?.code], [403, 'csrf_rejected'], `console member grant ${JSON.stringify(h)}`);
    }
    const members = await send(b.url, 'GET', `/api/console/clusters/${acme.slug}/members`, undefined, { cookie });
    assert.equal(members.body.members.some((m: { email: string }) => m.email.includes('mallory')), false, 'no member was granted');
  });

  test('tampered session tokens: alg none, wrong secret, expired, no exp, other issuer, bad role or sub, another broker\'s token → 401; a logged-out session on the console → 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const forge = (claims: Record<string, unknown>, opts: { exp?: number | null; iss?: string; sub?: string; secret?: Uint8Array; kid?: string } = {}) => {
      let jwt = new SignJWT({ role: 'admin', ...claims }).setProtectedHeader({ alg: 'HS256', kid: opts.kid ?? 'hs', typ: 'JWT' })
        .setSubject(opts.sub ?? userId).setIssuer(opts.iss ?? 'queen-proxy').setIssuedAt(now - 60).setJti(randomUUID());
      if (opts.exp !== null) jwt = jwt.setExpirationTime(opts.exp ?? now + 3600);
      return jwt.sign(opts.secret ?? key);
    };
    const me = (token: string) => send(b.url, 'GET', '/auth/me', undefined, { cookie: `queen_session=${token}` });
    const control = await forge({});
    assert.equal((await me(control)).status, 200, 'the forging helper makes a token the proxy accepts with the real secret');
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const payload = { sub: userId, iss: 'queen-proxy', exp: now + 3600, iat: now, jti: randomUUID(), role: 'admin' };
    const bad: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.`,
      'alg None, signature kept': `${b64({ alg: 'None', kid: 'hs' })}.${b64(payload)}.${control.split('.')[2]!}`,
      'EdDSA header on an HS body': `${b64({ alg: 'EdDSA', kid: 'hs' })}.${control.split('.')[1]!}.${control.split('.')[2]!}`,
      'payload swapped under a valid signature': `${control.split('.')[0]!}.${b64({ ...payload, role: 'admin', sub: randomUUID() })}.${control.split('.')[2]!}`,
      'wrong secret': await forge({}, { secret: new TextEncoder().encode('guessed-secret') }),
      expired: await forge({}, { exp: now - 5 }),
      'no exp': await forge({}, { exp: null }),
      'other issuer': await forge({}, { iss: 'evil' }),
      'unknown role': await forge({ role: 'owner' }),
      'sub not a UUID': await forge({}, { sub: 'admin' }),
      'cluster not a UUID': await forge({ cluster: 'acme' }),
      'another broker\'s secret': await forge({}, { secret: new TextEncoder().encode(OTHER_SECRET) }),
      'truncated': control.slice(0, -5),
      'huge': `${control}${'A'.repeat(9000)}`,
    };
    for (const [what, token] of Object.entries(bad)) {
      const r = await me(token);
      assert.deepEqual([r.status, r.body], [401, { error: 'invalid session', code: 'unauthorized' }], what);
      const d = await send(b.url, 'GET', '/api/v1/resources/queues', undefined, { authorization: `Bearer ${token}` });
      assert.equal(d.status, 401, `${what} as a bearer`);
      assert.equal((await send(b.url, 'GET', '/api/console/clusters', undefined, { cookie: `queen_session=${token}` })).status, 401, `${what} on the console`);
    }
    // Malformed cookie headers: 401, never a 500.
    for (const cookie of ['queen_session=%', 'queen_session=%E0%A4%A', 'queen_session="a.b.c"', `queen_session=${'a'.repeat(8000)}`, 'queen_session', '=queen_session=x', `queen_session=${control.replace('.', '%2E')}x`]) {
      const r = await send(b.url, 'GET', '/auth/me', undefined, { cookie });
      assert.equal(r.status, 401, `${cookie.slice(0, 40)}: ${r.text}`);
      assert.equal((await send(b.url, 'GET', '/api/console/clusters', undefined, { cookie })).status, 401, cookie.slice(0, 40));
    }
    // A real session of the other broker (its own secret) on this one.
    const otherTenant = await bootstrap(other.url, uniqueName('oth').toLowerCase());
    secrets.push(otherTenant.key);
    await person(other.url, otherTenant.slug, `bob@${otherTenant.slug}.test`, PASSWORD, { cluster: otherTenant.slug, role: 'admin' });
    const otherLogin = await postLogin(other.url, { email: `bob@${otherTenant.slug}.test`, password: PASSWORD });
    assert.equal(otherLogin.status, 303);
    secrets.push(otherLogin.cookie!.split('=')[1]!);
    assert.equal((await send(b.url, 'GET', '/auth/me', undefined, { cookie: otherLogin.cookie! })).status, 401, 'a cookie of another broker');
    // Logout, then the old cookie on every surface.
    const cookie = await cookieOf();
    assert.equal((await send(b.url, 'POST', '/auth/logout', {}, { cookie, origin: b.url })).status, 200);
    assert.equal((await send(b.url, 'GET', '/auth/me', undefined, { cookie })).status, 401);
    assert.equal((await send(b.url, 'GET', '/auth/session-token', undefined, { cookie })).status, 401);
    assert.equal((await send(b.url, 'GET', '/api/console/clusters', undefined, { cookie })).status, 401);
    assert.equal((await send(b.url, 'GET', '/api/v1/resources/queues', undefined, { cookie })).status, 401);
    assert.equal((await send(b.url, 'GET', '/console', undefined, { cookie })).status, 303, 'the console sends it to the login page');
  });

  test('huge and malformed login bodies: limits before parsing, 4xx envelopes, the broker stays up', async () => {
    const ip = () => ({ 'x-forwarded-for': freshIp() });
    // A declared length over the cap is refused from the head, without waiting for the body.
    const declared = await rawRequest(b.url, 'POST', '/auth/login', { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '100000000', ...ip() }, ['email='], false);
    assert.equal(declared.status, 413);
    assert.equal(JSON.parse(declared.text).code, 'payload_too_large');
    // A chunked body (no length) over the cap: refused while parsing, in the envelope, naming the right limit.
    for (const path of ['/auth/login', '/api/login']) {
      const chunked = await rawRequest(b.url, 'POST', path, { 'content-type': path === '/api/login' ? 'application/json' : 'application/x-www-form-urlencoded', ...ip() },
        [`password=${encodeURIComponent(PASSWORD)}&email=`, 'a'.repeat(10_000), 'a'.repeat(10_000)]);
      assert.equal(chunked.status, 413, `${path}: ${chunked.text}`);
      const env = JSON.parse(chunked.text) as { error: string; code: string };
      assert.equal(env.code, 'payload_too_large');
      assert.doesNotMatch(env.error, /control-plane|1 MiB/, `${path}: ${env.error}`);
    }
    const malformed: [string, string, Record<string, string>][] = [
      ['/api/login', `{"username":"${email}","password":"${PASSWORD}"`, {}],
      ['/api/login', '[1,2,3]', {}],
      ['/api/login', 'null', {}],
      ['/api/login', '{"username":{"$ne":""},"password":{"$ne":""}}', {}],
      ['/api/login', `${'['.repeat(8000)}${']'.repeat(8000)}`, {}],
      ['/api/login', '\u0000\u0001', {}],
      ['/auth/login', `email=${encodeURIComponent(email)}&password=${'%'}&next=%E0%A4%A`, { 'content-type': 'application/x-www-form-urlencoded' }],
      ['/auth/login', `${'email=x&'.repeat(1500)}password=y`, { 'content-type': 'application/x-www-form-urlencoded' }],
      ['/auth/login', `email=${email}&password=${PASSWORD}`, { 'content-type': 'text/plain' }],
      ['/auth/login', '--x\r\ncontent-disposition: form-data; name="email"\r\n\r\nx\r\n--x--', { 'content-type': 'multipart/form-data; boundary=x' }],
    ];
    for (const [path, body, headers] of malformed) {
      const r = await send(b.url, 'POST', path, body, { ...ip(), ...headers });
      assert.ok(r.status >= 400 && r.status < 500, `${path} ${body.slice(0, 40)} → ${r.status}`);
      assert.equal(r.headers.getSetCookie().length, 0, `${path} ${body.slice(0, 40)}: no cookie`);
      if (r.headers.get('content-type')?.startsWith('application/json')) {
        assert.equal(typeof r.body.error, 'string');
        assert.equal(typeof r.body.code, 'string');
      }
    }
    assert.equal((await send(b.url, 'GET', '/health')).status, 200);
    assert.doesNotMatch(b.output(), /proxy request failed/, 'no 500 on the way');
  });

  test('login guard evasion: letter case, whitespace and Unicode spaces count against the same account; X-Forwarded-For from an untrusted peer changes nothing', async () => {
    const victim = `victim@${acme.slug}.test`;
    await person(b.url, acme.slug, victim, PASSWORD, { cluster: acme.slug, role: 'viewer' });
    const variants = [victim, victim.toUpperCase(), ` ${victim}\t`, `\u00a0${victim.replace('v', 'V')}\u2003`];
    for (const v of variants) assert.equal((await postLogin(b.url, { email: v, password: 'wrong!' }, { 'x-forwarded-for': freshIp() })).status, 401, JSON.stringify(v));
    for (const v of variants) {
      const r = await postLogin(b.url, { email: v, password: PASSWORD }, { 'x-forwarded-for': freshIp() });
      assert.equal(r.status, 429, `the door is closed for ${JSON.stringify(v)}, even with the right password`);
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      const j = await send(b.url, 'POST', '/api/login', { username: v, password: PASSWORD }, { 'x-forwarded-for': freshIp() });
      assert.deepEqual([j.status, j.body?.code], [429, 'rate_limited'], `/api/login ${JSON.stringify(v)}`);
    }
    // The other broker trusts no proxy: a new X-Forwarded-For per attempt is the same address.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await postLogin(other.url, { email: `x${i}@nowhere.test`, password: 'nope' }, { 'x-forwarded-for': freshIp() })).status);
    // Earlier tests already spent some of this address's three attempts: the last two are refused either way.
    assert.deepEqual(statuses.slice(3), [429, 429], statuses.join(' '));
    assert.ok(statuses.slice(statuses.indexOf(429)).every((s) => s === 429), statuses.join(' '));
  });

  test('timing: an unknown e-mail costs the same bcrypt work as a wrong password (medians within a factor of 2)', async () => {
    const users = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const e = `t${i}@${acme.slug}.test`;
      await person(b.url, acme.slug, e, PASSWORD, { cluster: acme.slug, role: 'viewer' });
      return e;
    }));
    const time = async (who: string) => {
      const t0 = process.hrtime.bigint();
      const r = await send(b.url, 'POST', '/api/login', { username: who, password: 'wrong password here' }, { 'x-forwarded-for': freshIp() });
      assert.equal(r.status, 401);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    };
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < users.length; i++) {
      wrong.push(await time(users[i]!));
      unknown.push(await time(`ghost${i}@${acme.slug}.test`));
    }
    const [w, u] = [median(wrong), median(unknown)];
    console.log(`login timing medians: wrong password ${w.toFixed(1)} ms, unknown e-mail ${u.toFixed(1)} ms`);
    assert.ok(u > w / 2 && u < w * 2, `wrong ${w} ms vs unknown ${u} ms`);
  });

  test('a viewer: every destructive data-plane and console call is refused; reads work', async () => {
    const cookie = await cookieOf(viewerEmail, VIEWER_PASSWORD);
    const h = { cookie, origin: b.url };
    const q = uniqueName('vq');
    const refused: [string, string, unknown?][] = [
      ['POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }],
      ['POST', '/api/v1/configure', { queue: q }],
      ['DELETE', `/api/v1/resources/queues/${q}`],
      ['DELETE', `/api/v1/dlq?queue=${q}`],
      ['DELETE', '/api/v1/consumer-groups/g'],
      ['POST', '/api/v1/consumer-groups/g/seek', { queue: q }],
      ['POST', `/api/console/clusters/${acme.slug}/keys`, { name: 'v', scopes: ['admin'] }],
      ['PUT', `/api/console/clusters/${acme.slug}/members`, { email: viewerEmail, role: 'admin' }],
      ['DELETE', `/api/console/clusters/${acme.slug}/members/${encodeURIComponent(email)}`],
      ['GET', `/api/console/clusters/${acme.slug}/keys`],
    ];
    for (const [method, path, body] of refused) {
      const r = await send(b.url, method, path, body, h);
      assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
      assert.equal(r.body.code, 'forbidden');
    }
    assert.equal((await send(b.url, 'GET', '/api/v1/status/buffers', undefined, h)).status, 404, 'operator route');
    const bearer = await send(b.url, 'GET', `/auth/session-token?cluster=${acme.slug}`, undefined, h);
    assert.equal(bearer.body.role, 'viewer', 'a bearer never carries more than the stored role');
    secrets.push(bearer.body.token);
    assert.equal((await send(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] }, { authorization: `Bearer ${bearer.body.token}` })).status, 403);
    assert.equal((await send(b.url, 'GET', '/api/v1/resources/queues', undefined, h)).status, 200);
    assert.equal((await send(b.url, 'GET', '/api/console/clusters', undefined, h)).status, 200);
  });

  test('the console without a session: pages redirect to the login page, its API answers 401; an API key is no console credential', async () => {
    for (const path of ['/console', '/console/keys', '/console/%E4%B8%AD']) {
      for (const headers of [{}, { authorization: `Bearer ${acme.key}` }, { cookie: `queen_session=${acme.key}` }] as Record<string, string>[]) {
        const r = await send(b.url, 'GET', path, undefined, headers);
        assert.equal(r.status, 303, `${path} ${JSON.stringify(Object.keys(headers))}`);
        assert.match(r.headers.get('location')!, /^\/auth\/login\?next=%2Fconsole/);
      }
    }
    for (const [method, path] of [['GET', '/api/console/clusters'], ['GET', `/api/console/clusters/${acme.slug}/keys`], ['POST', `/api/console/clusters/${acme.slug}/keys`], ['GET', `/api/console/clusters/${acme.slug}/members`]] as const) {
      for (const headers of [{}, { authorization: `Bearer ${acme.key}` }, { authorization: acme.key }] as Record<string, string>[]) {
        const r = await send(b.url, method, path, method === 'POST' ? { name: 'x', scopes: ['admin'] } : undefined, headers);
        assert.deepEqual([r.status, r.body?.code], [401, 'unauthorized'], `${method} ${path} ${JSON.stringify(Object.keys(headers))}`);
      }
    }
  });

  test('the logs of this run hold no password, cookie value, session token, API key or bcrypt hash', () => {
    for (const out of [b.output(), other.output()]) {
      assert.equal(/\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}/.test(out), false, 'no bcrypt hash');
      for (const s of secrets) assert.equal(out.includes(s), false, `a secret of ${s.length} chars appears in the logs`);
      assert.equal(out.includes(encodeURIComponent(PASSWORD)), false, 'the form-encoded password');
    }
  });
});

test('QUEEN_PROXY_BOOTSTRAP_PASSWORD outside 8–72 bytes is fatal at boot (bcrypt reads 72 bytes: a longer one would let any password with its first 72 bytes in), and never printed', async () => {
  for (const password of ['short', `${'p'.repeat(72)}-tail-bcrypt-never-reads`]) {
    const r = await runBrokerExpectingExit({
      QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_JWT_SECRET: SESSION_ENV.QUEEN_PROXY_JWT_SECRET!, QUEEN_PROXY_BOOTSTRAP_TENANT: 'boot', QUEEN_PROXY_BOOTSTRAP_PASSWORD: password,
    });
    assert.notEqual(r.code, 0, r.output);
    assert.match(r.output, /QUEEN_PROXY_BOOTSTRAP_PASSWORD must be 8 to 72 bytes/);
    assert.equal(r.output.includes(password), false, 'the password is not printed');
  }
});
