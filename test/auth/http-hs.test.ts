/**
 * Broker JWT (docs/security.md#jwt) against a real broker over HTTP, HS256 family: the error table, the token on the wire,
 * claims at and just past each skew boundary, the route table × role sets, skip paths, role
 * remapping, producerSub, the stricter claim switches (docs/security.md#claims), and the alg-none attacks.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  b64, bearer, flipSignatureBit, freshSecond, hsKey, mint, nowSec, passedAuth, rawToken, request, rsaKeys, signRaw, spawnBroker,
  type HttpAnswer, type SpawnedBroker,
} from '../helpers/jwt.js';
import { ROLE_HOLDINGS, SEED_ROUTES, SEED_SKIPS, seedError, seedPasses } from './seed-tables.js';

const SECRET = randomBytes(32).toString('hex');
const KEY = hsKey(SECRET);
const ISS = 'https://idp.test/';
const AUD = 'queen';

/** A token passing every check unless `claims` says otherwise. */
function tok(claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  return mint('HS256', KEY, { iss: ISS, aud: AUD, sub: 'svc-test', roles: ['admin'], ...claims }, header);
}

function assertRefused(a: HttpAnswer, code: string, what = ''): void {
  const want = seedError(code);
  assert.equal(a.status, want.status, `${what} status (body ${a.text})`);
  assert.deepEqual(a.json, want.body, what);
}

/** A request made within the second it was minted in (the broker's Date header proves it); bounded retries. */
async function sameSecond(b: SpawnedBroker, mintAt: (now: number) => Promise<string>, pathAndQuery = '/api/v1/resources/queues'): Promise<HttpAnswer> {
  for (let i = 0; i < 4; i++) {
    const now = await freshSecond();
    const t = await mintAt(now);
    const r = await request(b.url, 'GET', pathAndQuery, bearer(t));
    if (Math.floor(Date.parse(String(r.headers.date)) / 1000) === now) return r;
  }
  throw new Error('could not fit a request in one second');
}

describe('HS256 broker (JWT_ISSUER, JWT_AUDIENCE set)', () => {
  let b: SpawnedBroker;
  before(async () => {
    b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET, JWT_ISSUER: ISS, JWT_AUDIENCE: AUD });
  });
  after(async () => b?.stop());

  it('boot line: JWT auth ENABLED with the algorithm set and the skip list; no secret in the log', () => {
    const [line] = b.logLines('JWT auth ENABLED');
    assert.ok(line, b.logs().join('\n'));
    assert.equal(line.algorithm, 'HS256');
    assert.deepEqual(line.acceptedAlgs, ['HS256']);
    assert.deepEqual(line.skipPaths, ['/health', '/metrics/prometheus', '/metrics', '/']);
    assert.ok(!b.logs().join('\n').includes(SECRET));
  });

  describe('error table rows reachable with HS keys', () => {
    const cases: [string, () => Promise<Record<string, string>>, string][] = [
      ['no Authorization header', async () => ({}), 'auth_required'],
      ['not a JWT', async () => bearer('garbage'), 'bad_token_header'],
      ['Basic credentials', async () => ({ authorization: 'Basic dXNlcjpwYXNz' }), 'bad_token_header'],
      ['empty Authorization value', async () => ({ authorization: '' }), 'bad_token_header'],
      ['two spaces after Bearer', async () => ({ authorization: `Bearer  ${await tok()}` }), 'bad_token_header'],
      ['header not JSON', async () => bearer(`${b64('x')}.${b64({})}.sig`), 'bad_token_header'],
      ['alg outside the set (HS384)', async () => bearer(await mint('HS384', KEY, { roles: ['admin'] })), 'unsupported_token_algorithm'],
      ['alg outside the set (RS256)', async () => bearer(await mint('RS256', rsaKeys().privateKey, { roles: ['admin'] })), 'unsupported_token_algorithm'],
      ['alg PS256', async () => bearer(await mint('PS256', rsaKeys().privateKey, { roles: ['admin'] })), 'unsupported_token_algorithm'],
      ['wrong secret', async () => bearer(await mint('HS256', hsKey('not-the-secret'), { roles: ['admin'] })), 'invalid_token_signature'],
      ['bit-flipped signature', async () => bearer(flipSignatureBit(await tok())), 'invalid_token_signature'],
      ['tampered payload', async () => {
        const [h, , s] = (await tok({ roles: ['read-only'] })).split('.');
        return bearer(`${h}.${b64({ iss: ISS, aud: AUD, roles: ['admin'] })}.${s}`);
      }, 'invalid_token_signature'],
      ['payload not an object', async () => bearer(await signRaw('HS256', KEY, '[1,2]')), 'invalid_token_signature'],
      ['payload not JSON', async () => bearer(await signRaw('HS256', KEY, 'hello')), 'invalid_token_signature'],
      ['expired', async () => bearer(await tok({ exp: nowSec() - 3600 })), 'token_expired'],
      ['not yet valid', async () => bearer(await tok({ nbf: nowSec() + 3600 })), 'token_not_yet_valid'],
      ['issued in the future', async () => bearer(await tok({ iat: nowSec() + 3600 })), 'token_issued_in_future'],
      ['wrong issuer', async () => bearer(await tok({ iss: 'https://evil.test/' })), 'invalid_token_issuer'],
      ['missing issuer', async () => bearer(await tok({ iss: undefined })), 'invalid_token_issuer'],
      ['wrong audience', async () => bearer(await tok({ aud: 'other' })), 'invalid_token_audience'],
      ['audience array without a match', async () => bearer(await tok({ aud: ['a', 'b'] })), 'invalid_token_audience'],
      ['no role', async () => bearer(await tok({ roles: [] })), 'insufficient_permissions'],
      ['expired token with a bad signature: signature first', async () => bearer(flipSignatureBit(await tok({ exp: nowSec() - 3600 }))), 'invalid_token_signature'],
      ['expired token with a wrong issuer: exp first', async () => bearer(await tok({ exp: nowSec() - 3600, iss: 'x' })), 'token_expired'],
    ];
    for (const [why, headers, code] of cases) {
      it(`${why} → ${seedError(code).status} ${seedError(code).body.error}`, async () => {
        assertRefused(await request(b.url, 'GET', '/api/v1/resources/queues', await headers()), code, why);
      });
    }
    it('401 answers carry WWW-Authenticate: Bearer and JSON', async () => {
      const r = await request(b.url, 'GET', '/api/v1/resources/queues');
      assert.equal(r.headers['www-authenticate'], 'Bearer');
      assert.match(String(r.headers['content-type']), /^application\/json/);
    });
  });

  describe('attacks: alg none in any casing, with or without a signature', () => {
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      for (const sig of ['', 'c2lnbmF0dXJl']) {
        it(`alg ${alg}${sig ? ' with' : ' without'} a signature → Bad token header`, async () => {
          const t = rawToken({ alg, typ: 'JWT' }, { iss: ISS, aud: AUD, roles: ['admin'] }, sig);
          assertRefused(await request(b.url, 'GET', '/api/v1/resources/queues', bearer(t)), 'bad_token_header');
          assertRefused(await request(b.url, 'GET', '/api/v1/system/x', bearer(t)), 'bad_token_header');
        });
      }
    }
  });

  describe('the token on the wire', () => {
    for (const prefix of ['Bearer ', 'bearer ', 'BEARER ', 'bEaReR ', '']) {
      it(`Authorization: ${JSON.stringify(prefix)}<token> is accepted`, async () => {
        const r = await request(b.url, 'GET', '/api/v1/resources/queues', { authorization: `${prefix}${await tok()}` });
        assert.equal(r.status, 200, r.text);
      });
    }
    it('an unauthorised request with a malformed body is 401, never 400', async () => {
      const r = await request(b.url, 'POST', '/api/v1/push', {}, '{not json');
      assertRefused(r, 'auth_required');
    });
    const encoded: [string, string, string[], boolean][] = [
      ['DELETE', '/api/v1/resources/%71ueues/auth-enc-q', ['read-write'], false],
      ['GET', '/%61pi/v1/system/x', ['read-write'], false],
      ['GET', '/api/v1/resource%73/queues', ['write-only'], false],
      ['POST', '/api/v1/pus%68', ['write-only'], true],
      ['GET', '/metric%73', [], true],
    ];
    for (const [method, p, roles, ok] of encoded) {
      it(`percent-encoding cannot move a request to another level: ${method} ${p} with [${roles.join(', ')}] → ${ok ? 'passes' : 'refused'}`, async () => {
        const r = await request(b.url, method, p, roles.length === 0 ? {} : bearer(await tok({ roles })));
        assert.equal(passedAuth(r), ok, `${r.status} ${r.text}`);
      });
    }
    it('an unknown path with a valid read-write token passes auth (the route answers 404)', async () => {
      const r = await request(b.url, 'GET', '/no/such/route', bearer(await tok({ roles: ['read-write'] })));
      assert.equal(r.status, 404);
    });
  });

  describe('claims at and just past each skew boundary (JWT_CLOCK_SKEW=30)', () => {
    const rows: [string, (now: number) => Record<string, unknown>, string | undefined][] = [
      ['no exp: accepted (exp is optional)', () => ({}), undefined],
      ['exp = now - 30 (now == exp + skew): accepted', (n) => ({ exp: n - 30 }), undefined],
      ['exp = now - 31: Token has expired', (n) => ({ exp: n - 31 }), 'token_expired'],
      ['nbf = now + 30: accepted', (n) => ({ nbf: n + 30 }), undefined],
      ['nbf = now + 31: Token not yet valid', (n) => ({ nbf: n + 31 }), 'token_not_yet_valid'],
      ['iat = now + 30: accepted', (n) => ({ iat: n + 30 }), undefined],
      ['iat = now + 31: Token issued in the future', (n) => ({ iat: n + 31 }), 'token_issued_in_future'],
    ];
    for (const [why, claims, code] of rows) {
      it(why, async () => {
        const r = await sameSecond(b, (n) => tok(claims(n)));
        if (code === undefined) assert.equal(r.status, 200, r.text);
        else assertRefused(r, code);
      });
    }
    it('aud array with one match is enough; sub optional', async () => {
      const r = await request(b.url, 'GET', '/api/v1/resources/queues', bearer(await tok({ aud: ['x', AUD], sub: undefined })));
      assert.equal(r.status, 200, r.text);
    });
  });

  describe('route classification × role sets (every row of the seed table)', () => {
    for (const [method, p, level, why] of SEED_ROUTES) {
      it(`${method} ${p} is ${level} (${why})`, async () => {
        const passed = (a: HttpAnswer): boolean => (method === 'HEAD' ? a.status !== 401 && a.status !== 403 : passedAuth(a));
        const anon = await request(b.url, method, p);
        if (level === 'public') {
          assert.ok(passed(anon), `anonymous refused: ${anon.status} ${anon.text}`);
        } else {
          assert.equal(anon.status, 401, anon.text);
          if (method !== 'HEAD') assert.deepEqual(anon.json, seedError('auth_required').body);
        }
        for (const held of ROLE_HOLDINGS) {
          const a = await request(b.url, method, p, bearer(await tok({ roles: held })));
          const want = seedPasses(level, held);
          assert.equal(passed(a), want, `roles [${held.join(', ')}]: ${a.status} ${a.text}`);
          if (!want) {
            assert.equal(a.status, 403);
            if (method !== 'HEAD') assert.deepEqual(a.json, seedError('insufficient_permissions').body);
          }
        }
      });
    }
    it('a garbage token on a public route is never examined', async () => {
      assert.equal((await request(b.url, 'GET', '/health', bearer('garbage'))).status, 200);
      assert.equal((await request(b.url, 'GET', '/metrics', bearer('garbage'))).status, 200);
    });
  });

  describe('dashboard with JWT on', () => {
    it('/auth/me answers 401 from its own handler', async () => {
      const r = await request(b.url, 'GET', '/auth/me');
      assert.equal(r.status, 401);
      assert.deepEqual(r.json, { error: 'auth_required', code: 'auth_required' });
    });
    it('/auth/login serves a static page pointing at the proxy', async () => {
      const r = await request(b.url, 'GET', '/auth/login');
      assert.equal(r.status, 200);
      assert.match(String(r.headers['content-type']), /^text\/html/);
      assert.match(r.text, /This broker requires authentication/);
      assert.match(r.text, /proxy/);
    });
    it('/auth/logout answers ok', async () => {
      const r = await request(b.url, 'POST', '/auth/logout');
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, { ok: true });
    });
  });

  describe('producerSub comes from the token only', () => {
    it('read-write pushes and consumes; sub stamped, a body producerSub ignored', async () => {
      const q = `auth-sub-${randomBytes(4).toString('hex')}`;
      const rw = await tok({ sub: 'svc-producer', roles: ['read-write'] });
      const push = await request(b.url, 'POST', '/api/v1/push', bearer(rw), JSON.stringify({ items: [{ queue: q, payload: { n: 1 }, producerSub: 'forged' }] }));
      assert.equal(push.status, 201, push.text);
      const pop = await request(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=false`, bearer(rw));
      assert.equal(pop.status, 200, pop.text);
      assert.equal(pop.json.messages[0].producerSub, 'svc-producer');
    });
    it('write-only pushes and receives 403 Insufficient permissions on pop', async () => {
      const q = `auth-wo-${randomBytes(4).toString('hex')}`;
      const wo = await tok({ sub: 'svc-wo', roles: ['write-only'] });
      const push = await request(b.url, 'POST', '/api/v1/push', bearer(wo), JSON.stringify({ items: [{ queue: q, payload: { n: 1 } }] }));
      assert.equal(push.status, 201, push.text);
      assertRefused(await request(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=false`, bearer(wo)), 'insufficient_permissions');
      assertRefused(await request(b.url, 'POST', '/api/v1/ack', bearer(wo), '{}'), 'insufficient_permissions');
      assertRefused(await request(b.url, 'POST', '/api/v1/transaction', bearer(wo), '{}'), 'insufficient_permissions');
      assertRefused(await request(b.url, 'GET', '/api/v1/resources/queues', bearer(wo)), 'insufficient_permissions');
    });
  });
});

describe('skip paths and role remapping (custom broker)', () => {
  let b: SpawnedBroker;
  before(async () => {
    b = await spawnBroker({
      JWT_ENABLED: 'true', JWT_SECRET: SECRET,
      JWT_SKIP_PATHS: '/assets/,/api/v1/system/,/api/v1/push,/',
      JWT_ROLES_CLAIM: 'scope', JWT_ROLES_ARRAY_CLAIM: 'groups', JWT_ROLE_WRITE_ONLY: 'queen.write', JWT_ROLE_ADMIN: 'queen.admin',
    });
  });
  after(async () => b?.stop());

  for (const [entries, p, skipped, why] of SEED_SKIPS.filter(([e]) => e === '/assets/,/api/v1/system/,/api/v1/push,/'.split(',').find((x) => x === e))) {
    it(`${entries}: ${p} skipped=${skipped} (${why})`, async () => {
      const r = await request(b.url, 'GET', p);
      assert.equal(passedAuth(r), skipped, r.text);
    });
  }
  const rows: [string, string, boolean][] = [
    ['GET', '/assets/x/y.js', true],
    ['GET', '/api/v1/system/maintenance', true],
    ['POST', '/api/v1/push', true],
    ['POST', '/api/v1/push/x', false],
    ['GET', '/api/v1/systemx', false],
    ['GET', '/health', true], // public by the route table even though no longer in the skip list
    ['GET', '/api/v1/resources/queues', false],
  ];
  for (const [method, p, open] of rows) {
    it(`${method} ${p} without a token → ${open ? 'passes' : '401'}`, async () => {
      const r = await request(b.url, method, p);
      assert.equal(passedAuth(r), open, `${r.status} ${r.text}`);
      if (!open) assertRefused(r, 'auth_required');
    });
  }
  it('a skipped push carries no identity: producerSub null even with a valid token', async () => {
    const q = `auth-skip-${randomBytes(4).toString('hex')}`;
    const t = await mint('HS256', KEY, { sub: 'svc-skip', scope: 'queen.admin' });
    const push = await request(b.url, 'POST', '/api/v1/push', bearer(t), JSON.stringify({ items: [{ queue: q, payload: 1, producerSub: 'forged' }] }));
    assert.equal(push.status, 201, push.text);
    const pop = await request(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=false`, bearer(t));
    assert.equal(pop.status, 200, pop.text);
    assert.equal(pop.json.messages[0].producerSub ?? null, null);
  });
  const remap: [string, Record<string, unknown>, string, string, boolean][] = [
    ['scope=queen.write passes write-only', { scope: 'queen.write' }, 'POST', '/api/v1/timers', true],
    ['scope=queen.write fails read-only', { scope: 'queen.write' }, 'GET', '/api/v1/resources/queues', false],
    ['default name write-only no longer counts', { scope: 'write-only' }, 'POST', '/api/v1/timers', false],
    ['groups array claim read', { groups: ['queen.admin'] }, 'GET', '/internal/x', true],
    ['default claims role/roles no longer read', { role: 'queen.admin', roles: ['queen.admin'] }, 'GET', '/internal/x', false],
    ['unchanged read-write name still counts', { groups: ['read-write'] }, 'GET', '/api/v1/resources/queues', true],
    ['nested claim invisible', { realm_access: { roles: ['queen.admin'] } }, 'GET', '/internal/x', false],
  ];
  for (const [why, claims, method, p, ok] of remap) {
    it(why, async () => {
      const r = await request(b.url, method, p, bearer(await mint('HS256', KEY, claims)));
      assert.equal(passedAuth(r), ok, `${r.status} ${r.text}`);
      if (!ok) assertRefused(r, 'insufficient_permissions');
    });
  }
});

describe('beyond the seeds: JWT_REQUIRE_EXP and JWT_MAX_LIFETIME', () => {
  let b: SpawnedBroker;
  before(async () => {
    b = await spawnBroker({ JWT_ENABLED: 'true', JWT_SECRET: SECRET, JWT_REQUIRE_EXP: 'true', JWT_MAX_LIFETIME: '3600' });
  });
  after(async () => b?.stop());
  const rows: [string, () => Record<string, unknown>, number, string?][] = [
    ['no exp → 401 Token has no expiry', () => ({}), 401, 'Token has no expiry'],
    ['exp within the lifetime → 200', () => ({ iat: nowSec(), exp: nowSec() + 600 }), 200],
    ['exp - iat over the lifetime → 401 Token lifetime too long', () => ({ iat: nowSec(), exp: nowSec() + 7200 }), 401, 'Token lifetime too long'],
  ];
  for (const [why, claims, status, message] of rows) {
    it(why, async () => {
      const r = await request(b.url, 'GET', '/api/v1/resources/queues', bearer(await mint('HS256', KEY, { roles: ['admin'], ...claims() })));
      assert.equal(r.status, status, r.text);
      if (message) assert.equal(r.json.error, message);
    });
  }
});

describe('JWT off', () => {
  let b: SpawnedBroker;
  before(async () => {
    b = await spawnBroker({ JWT_ALGORITHM: 'not-validated-when-off' });
  });
  after(async () => b?.stop());
  it('every route answers without a token; /auth/me is the standalone identity; /auth/login redirects', async () => {
    assert.equal((await request(b.url, 'GET', '/api/v1/resources/queues')).status, 200);
    assert.equal((await request(b.url, 'GET', '/api/v1/resources/queues', bearer('garbage'))).status, 200);
    const me = await request(b.url, 'GET', '/auth/me');
    assert.equal(me.status, 200);
    assert.equal(me.json.standalone, true);
    const login = await request(b.url, 'GET', '/auth/login');
    assert.equal(login.status, 303);
    assert.equal(login.headers.location, '/');
    assert.equal(b.logLines('JWT auth disabled — API and dashboard are open (standalone); set JWT_ENABLED=true to require tokens').length, 1);
  });
  it('push ignores a body producerSub (empty identity)', async () => {
    const q = `auth-off-${randomBytes(4).toString('hex')}`;
    await request(b.url, 'POST', '/api/v1/push', {}, JSON.stringify({ items: [{ queue: q, payload: 1, producerSub: 'forged' }] }));
    const pop = await request(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=false`);
    assert.equal(pop.json.messages[0].producerSub ?? null, null);
  });
});
