/**
 * Units of sessions (docs/proxy.md#sessions): the login guard on an injected clock (throttle window,
 * free failures, exponential back-off, the lockout cap, case-folded accounts), session tokens (kid
 * rules, the pinned algorithm, `exp` required, issuer, audience, the deny-list and its pruning), the
 * safe `next` rule and the role matrix.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, createHash, createSecretKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SignJWT } from 'jose';
import type { RouteClass } from '../../src/auth/proxy/api-keys.js';
import { LoginGuard } from '../../src/auth/proxy/guard.js';
import { roleAllows } from '../../src/auth/proxy/roles.js';
import { SessionTokens } from '../../src/auth/proxy/sessions.js';
import { loadSigner, type LoginGuardConfig, type SessionConfig } from '../../src/config/proxy.js';
import { safeNext } from '../../src/proxy/sessions.js';
import { SqliteProxyStore } from '../../src/storage/sqlite/proxy.js';
import { TestClock } from '../../src/util/clock.js';

const GUARD: LoginGuardConfig = { throttleAttempts: 10, throttleWindowMs: 60_000, ipFreeFailures: 10, accountFreeFailures: 5, backoffBaseMs: 1000, lockoutMaxMs: 15 * 60_000 };

test('login guard: 5 free failures per account, then 1 s, 2 s, 4 s … capped at the 15-minute lockout', () => {
  const clock = new TestClock();
  const g = new LoginGuard({ ...GUARD, throttleAttempts: 1_000_000, ipFreeFailures: 1_000_000 }, clock);
  const tryFail = () => {
    const d = g.attempt('192.0.2.1', 'Bob@Example.test');
    if (d.ok) g.failed('192.0.2.1', 'bob@example.test');
    return d;
  };
  for (let i = 0; i < 5; i++) assert.equal(tryFail().ok, true, `free failure ${i + 1}`);
  assert.equal(tryFail().ok, true, 'the 6th attempt is checked: its failure closes the door');
  const waits: number[] = [];
  for (let n = 0; n < 14; n++) {
    const blocked = g.attempt('192.0.2.1', '  BOB@example.TEST ');
    assert.equal(blocked.ok, false, 'closed whatever the letter case');
    waits.push(blocked.ok ? 0 : blocked.retryAfterS);
    clock.advance(blocked.ok ? 0 : blocked.retryAfterS * 1000);
    assert.equal(tryFail().ok, true, 'open again after Retry-After');
  }
  assert.deepEqual(waits.slice(0, 10), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
  assert.deepEqual(waits.slice(10), [900, 900, 900, 900], 'capped at the lockout');
  g.succeeded('192.0.2.1', 'BOB@example.test');
  clock.advance(900_000);
  assert.equal(g.attempt('192.0.2.1', 'bob@example.test').ok, true);
});

test('login guard: per-IP throttle of 10 attempts per 60 s (success or not), sliding', () => {
  const clock = new TestClock();
  const g = new LoginGuard(GUARD, clock);
  for (let i = 0; i < 10; i++) {
    assert.equal(g.attempt('192.0.2.7', `u${i}@x.test`).ok, true);
    clock.advance(1000);
  }
  const d = g.attempt('192.0.2.7', 'other@x.test');
  assert.deepEqual(d, { ok: false, reason: 'throttle', retryAfterS: 50 });
  assert.equal(g.attempt('192.0.2.8', 'other@x.test').ok, true, 'another address');
  clock.advance(50_000);
  assert.equal(g.attempt('192.0.2.7', 'other@x.test').ok, true, 'the oldest attempt left the window');
});

test('login guard: per-IP failures across accounts; a failure record is forgotten after a quiet lockout period', () => {
  const clock = new TestClock();
  const g = new LoginGuard({ ...GUARD, throttleAttempts: 1_000_000 }, clock);
  for (let i = 0; i < 11; i++) {
    assert.equal(g.attempt('192.0.2.9', `a${i}@x.test`).ok, true);
    g.failed('192.0.2.9', `a${i}@x.test`);
  }
  const d = g.attempt('192.0.2.9', 'fresh@x.test');
  assert.equal(d.ok, false);
  assert.equal(!d.ok && d.reason, 'ip');
  clock.advance(1000 + 15 * 60_000);
  assert.equal(g.attempt('192.0.2.9', 'fresh@x.test').ok, true);
  g.failed('192.0.2.9', 'fresh@x.test');
  assert.equal(g.attempt('192.0.2.9', 'fresh@x.test').ok, true, 'the count started again from zero');
});

function sessionConfig(over: Partial<SessionConfig>): SessionConfig {
  return {
    signer: loadSigner({ QUEEN_PROXY_JWT_SECRET: 'unit-secret' }), issuer: 'queen-proxy', audience: undefined, ttlS: 86_400, cookieName: 'queen_session',
    cookieDomain: undefined, publicOrigins: [], defaultRole: 'viewer', defaultRoleInvalid: false, guard: GUARD, oauth: { provisionTenant: undefined, google: undefined, github: undefined }, ...over,
  };
}

function tempStore(): SqliteProxyStore {
  return SqliteProxyStore.open(fs.mkdtempSync(path.join(os.tmpdir(), 'queen-sess-')));
}

test('signers: EdDSA kid = hex of the first 16 bytes of sha256(raw public key); HS256 kid hs; none without keys', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const s = loadSigner({ QUEEN_PROXY_JWT_ED25519_PEM: pem, QUEEN_PROXY_JWT_SECRET: 'ignored' });
  const raw = Buffer.from((publicKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url');
  assert.equal(s?.alg, 'EdDSA');
  assert.equal(s?.kid, createHash('sha256').update(raw).digest('hex').slice(0, 32));
  assert.equal(loadSigner({ QUEEN_PROXY_JWT_ED25519_PEM: pem.replace(/\n/g, '\\n') })?.kid, s?.kid, 'escaped newlines are accepted');
  assert.deepEqual([loadSigner({ QUEEN_PROXY_JWT_SECRET: 'x' })?.alg, loadSigner({ QUEEN_PROXY_JWT_SECRET: 'x' })?.kid], ['HS256', 'hs']);
  assert.equal(loadSigner({}), undefined);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  assert.throws(() => loadSigner({ QUEEN_PROXY_JWT_ED25519_PEM: rsa }), /an Ed25519 key is required/);
});

test('tokens: claims, verification pinned to the signer, exp required, issuer, audience one-sided, deny-list pruned after expiry', async () => {
  const clock = new TestClock(Date.now());
  const store = tempStore();
  const hs = new SessionTokens(sessionConfig({}), store, clock);
  const sub = '3f0a3d4e-6b7c-4d8e-9f00-112233445566';
  const { token, claims } = await hs.mint({ sub });
  assert.equal(claims.role, 'viewer');
  assert.equal(claims.exp, Math.floor(clock.now() / 1000) + 86_400);
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string };
  assert.deepEqual([header.alg, header.kid], ['HS256', 'hs']);
  assert.equal((await hs.verify(token))?.sub, sub);

  // The EdDSA verifier refuses an HS token (no downgrade), and vice versa.
  const ed = new SessionTokens(sessionConfig({ signer: loadSigner({ QUEEN_PROXY_JWT_ED25519_PEM: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() }) }), store, clock);
  assert.equal(await ed.verify(token), undefined);
  const edToken = (await ed.mint({ sub })).token;
  assert.equal((await ed.verify(edToken))?.sub, sub);
  assert.equal(await hs.verify(edToken), undefined);

  // No exp, wrong issuer, bad role, non-UUID sub/cluster → refused.
  const secret = createSecretKey(Buffer.from('unit-secret'));
  const sign = (payload: Record<string, unknown>, exp: number | null = Math.floor(clock.now() / 1000) + 60) => {
    let j = new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: 'hs' }).setIssuedAt();
    if (exp !== null) j = j.setExpirationTime(exp);
    return j.sign(secret);
  };
  const base = { sub, iss: 'queen-proxy', jti: 'j-1', role: 'viewer' };
  assert.ok(await hs.verify(await sign(base)), 'the forged-by-hand baseline passes');
  assert.equal(await hs.verify(await sign(base, null)), undefined, 'exp required');
  assert.equal(await hs.verify(await sign({ ...base, iss: 'other' })), undefined, 'issuer');
  assert.equal(await hs.verify(await sign({ ...base, role: 'root' })), undefined, 'role');
  assert.equal(await hs.verify(await sign({ ...base, sub: 'not-a-uuid' })), undefined, 'sub');
  assert.equal(await hs.verify(await sign({ ...base, cluster: 'c1' })), undefined, 'cluster');
  assert.equal(await hs.verify(await sign({ ...base, jti: '' })), undefined, 'jti');
  assert.equal(await hs.verify(await sign(base, Math.floor(clock.now() / 1000) - 1)), undefined, 'expired');

  const aud = new SessionTokens(sessionConfig({ audience: 'Console' }), store, clock);
  assert.ok(await aud.verify(await sign(base)), 'a token naming no audience passes (one-sided)');
  assert.ok(await aud.verify(await sign({ ...base, aud: ['x', 'console'] })), 'case-insensitive match');
  assert.equal(await aud.verify(await sign({ ...base, aud: 'x' })), undefined);

  // Deny-list: the session and a bearer minted from it; pruned once expired.
  const session = await hs.mint({ sub, ttlS: 120 });
  const bearer = await hs.mint({ sub, sid: session.claims.jti, ttlS: 900, notAfter: session.claims.exp });
  assert.equal(bearer.claims.exp, session.claims.exp, 'a bearer never outlives its session');
  hs.revoke(session.claims.jti, session.claims.exp);
  assert.equal(await hs.verify(session.token), undefined);
  assert.equal(await hs.verify(bearer.token), undefined);
  clock.advance(121_000);
  assert.equal(hs.prune(), 1, 'the entry is pruned after the session expired');
  store.close();
});

test('safe next: a path on this site, else /', () => {
  for (const ok of ['/', '/console', '/console/keys?x=1#y']) assert.equal(safeNext(ok), ok);
  for (const bad of ['//evil', '/\\evil', 'https://evil', 'evil', '', '/a\nb', `/${'a'.repeat(2048)}`, 5, undefined, '/\ud800']) assert.equal(safeNext(bad), '/');
  // Location takes bytes up to 0xFF only: spaces and non-ASCII come back percent-encoded (UTF-8), a `%` stays.
  assert.equal(safeNext('/console/中文?q=é&r=%20 x'), '/console/%E4%B8%AD%E6%96%87?q=%C3%A9&r=%20%20x');
  assert.equal(safeNext('/\u3000/evil.example'), '/%E3%80%80/evil.example');
});

test('role matrix: admin, producer, consumer, viewer against each route class', () => {
  const classes: [string, RouteClass][] = [
    ['produce', { kind: 'produce' }], ['consume', { kind: 'consume' }], ['queue_admin', { kind: 'queue_admin' }], ['read', { kind: 'read' }],
    ['gated read', { kind: 'gated', feature: 'kv', op: 'read' }], ['gated grow', { kind: 'gated', feature: 'kv', op: 'grow' }],
    ['gated open', { kind: 'gated', feature: 'traces', op: 'open' }], ['operator', { kind: 'operator' }], ['blocked', { kind: 'blocked' }],
  ];
  const expected: Record<string, string[]> = {
    admin: ['produce', 'consume', 'queue_admin', 'read', 'gated read', 'gated grow', 'gated open'],
    producer: ['produce', 'read', 'gated read', 'gated grow', 'gated open'],
    consumer: ['consume', 'read', 'gated read', 'gated grow', 'gated open'],
    viewer: ['read', 'gated read'],
  };
  for (const [role, allowed] of Object.entries(expected)) {
    assert.deepEqual(classes.filter(([, c]) => roleAllows(role as 'admin', c)).map(([n]) => n), allowed, role);
  }
});

test('configuration: defaults, QUEEN_PROXY_DEFAULT_ROLE fallback, guard knobs, providers only with id and secret', async () => {
  const { loadProxyConfig } = await import('../../src/config/proxy.js');
  const c = loadProxyConfig({ QUEEN_PROXY_EMBEDDED: 'true' }, 6632)!;
  assert.equal(c.sessions.signer, undefined);
  assert.deepEqual([c.sessions.issuer, c.sessions.ttlS, c.sessions.cookieName, c.sessions.defaultRole], ['queen-proxy', 86_400, 'queen_session', 'viewer']);
  assert.deepEqual(c.sessions.guard, GUARD);
  assert.equal(c.sessions.oauth.google, undefined);
  const bad = loadProxyConfig({ QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_DEFAULT_ROLE: 'root' }, 6632)!;
  assert.deepEqual([bad.sessions.defaultRole, bad.sessions.defaultRoleInvalid], ['viewer', true]);
  const set = loadProxyConfig({
    QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_DEFAULT_ROLE: ' Producer ', GOOGLE_CLIENT_ID: 'id', GOOGLE_CLIENT_SECRET: 's', GOOGLE_ALLOWED_DOMAINS: 'A.test, b.test',
    GITHUB_CLIENT_ID: 'gh', QUEEN_LOGIN_BACKOFF_BASE_MS: '250', QUEEN_PROXY_BOOTSTRAP_TENANT: 'Acme', QUEEN_PROXY_PUBLIC_ORIGIN: 'https://q.example/',
  }, 6632)!;
  assert.equal(set.sessions.defaultRole, 'producer');
  assert.deepEqual(set.sessions.oauth.google, { clientId: 'id', clientSecret: 's', issuer: 'https://accounts.google.com', allowedDomains: ['a.test', 'b.test'] });
  assert.equal(set.sessions.oauth.github, undefined, 'no secret, no provider');
  assert.equal(set.sessions.oauth.provisionTenant, 'acme');
  assert.equal(set.sessions.guard.backoffBaseMs, 250);
  assert.deepEqual(set.sessions.publicOrigins, ['https://q.example']);
  // Compared with the browser's Origin exactly: normalised as browsers serialise it, and a non-origin is fatal.
  const cased = loadProxyConfig({ QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PUBLIC_ORIGIN: 'https://Q.Example:443/, http://LOCALHOST:6711' }, 6632)!;
  assert.deepEqual(cased.sessions.publicOrigins, ['https://q.example', 'http://localhost:6711']);
  for (const bad of ['q.example', 'https://q.example/console', 'ftp://q.example', 'https://q.example?x=1', 'https://u:p@q.example']) {
    assert.throws(() => loadProxyConfig({ QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_PUBLIC_ORIGIN: bad }, 6632), /QUEEN_PROXY_PUBLIC_ORIGIN: .* is not an origin/, bad);
  }
});
