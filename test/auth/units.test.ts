/**
 * Module-level tests of the auth layer against the tables of docs/security.md (the same rows are walked over
 * HTTP against a real broker in the other files of this directory).
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { classify, levelRoleSets, passes, ROUTE_RULES } from '../../src/auth/access-levels.js';
import { ACCEPTED_ALGS } from '../../src/model/jwt-algorithms.js';
import { checkClaims, subjectOf } from '../../src/auth/claims.js';
import { parseJwks } from '../../src/auth/jwks.js';
import { parsePublicPem } from '../../src/auth/keys.js';
import { routerPath } from '../../src/auth/request-path.js';
import { rolesOf } from '../../src/auth/roles.js';
import { compileSkipPaths, skipEntryMatches } from '../../src/auth/skip-paths.js';
import { decodeHeader, extractToken } from '../../src/auth/token.js';
import { ConfigError } from '../../src/config/env.js';
import { describeJwtConfig, loadJwtConfig, type JwtConfig } from '../../src/config/jwt.js';
import { QueenError } from '../../src/errors.js';
import { b64, edKeys, publicJwk, rawToken, rsaKeys } from '../helpers/jwt.js';
import { ROLE_HOLDINGS, SEED_ALG_TABLE, SEED_ERRORS, SEED_LEVEL_PASSED_BY, SEED_ROUTES, SEED_SKIPS, seedPasses, type Level } from './seed-tables.js';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (e instanceof QueenError) return e.code;
    throw e;
  }
}

describe('config: JWT_ALGORITHM table and boot validation', () => {
  for (const [setting, accepted] of SEED_ALG_TABLE) {
    it(`${setting} accepts exactly ${accepted.join(', ')}`, () => {
      const cfg = loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: setting, JWT_SECRET: 's', JWT_PUBLIC_KEY: 'p' });
      assert.deepEqual([...cfg.acceptedAlgs].sort(), [...accepted].sort());
      assert.deepEqual([...ACCEPTED_ALGS[setting as keyof typeof ACCEPTED_ALGS]].sort(), [...accepted].sort());
    });
  }

  const E3 = (alg: string) => `invalid JWT auth configuration: JWT_ALGORITHM=${alg} is not supported (use HS256, HS384, HS512, RS256, RS384, RS512, EdDSA, or auto)`;
  const E1 = (alg: string) =>
    `invalid JWT auth configuration: JWT_ENABLED=true with JWT_ALGORITHM=${alg} but no key material: set JWT_SECRET (HS256/HS384/HS512), or JWT_PUBLIC_KEY / JWT_JWKS_URL (RS256/EdDSA)`;
  const E2 = (alg: string) => `invalid JWT auth configuration: JWT_ENABLED=true with JWT_ALGORITHM=${alg} but neither JWT_PUBLIC_KEY nor JWT_JWKS_URL is set`;

  for (const alg of ['hs256', 'EDDSA', 'ES256', 'none', '', 'RS256 ', 'Auto']) {
    it(`JWT_ALGORITHM=${JSON.stringify(alg)} is fatal and names the whole set`, () => {
      assert.throws(() => loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: alg, JWT_SECRET: 's' }), (e: unknown) => e instanceof ConfigError && e.message === E3(alg));
    });
  }
  for (const alg of ['HS256', 'HS384', 'HS512', 'auto']) {
    it(`${alg} with no key material at all is fatal`, () => {
      assert.throws(() => loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: alg }), (e: unknown) => e instanceof ConfigError && e.message === E1(alg));
    });
    for (const [k, v] of [['JWT_SECRET', 's'], ['JWT_PUBLIC_KEY', 'pem'], ['JWT_JWKS_URL', 'https://idp.invalid/jwks']] as const) {
      it(`${alg} with only ${k} boots`, () => {
        assert.equal(loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: alg, [k]: v }).enabled, true);
      });
    }
  }
  for (const alg of ['RS256', 'RS384', 'RS512', 'EdDSA']) {
    it(`${alg} with only JWT_SECRET is fatal`, () => {
      assert.throws(() => loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: alg, JWT_SECRET: 's' }), (e: unknown) => e instanceof ConfigError && e.message === E2(alg));
    });
    for (const [k, v] of [['JWT_PUBLIC_KEY', 'pem'], ['JWT_JWKS_URL', 'https://idp.invalid/jwks']] as const) {
      it(`${alg} with only ${k} boots`, () => {
        assert.equal(loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: alg, [k]: v }).enabled, true);
      });
    }
  }
  it('default algorithm is HS256; JWT off validates nothing', () => {
    assert.equal(loadJwtConfig({ JWT_ENABLED: 'true', JWT_SECRET: 'x' }).algorithm, 'HS256');
    const off = loadJwtConfig({ JWT_ALGORITHM: 'bogus', JWT_CLOCK_SKEW: 'x' });
    assert.equal(off.enabled, false);
  });
  it('JWT_ENABLED must be a boolean', () => {
    assert.throws(() => loadJwtConfig({ JWT_ENABLED: 'maybe' }), ConfigError);
    assert.equal(loadJwtConfig({ JWT_ENABLED: '1', JWT_SECRET: 's' }).enabled, true);
  });
  it('defaults match the seed', () => {
    const c = loadJwtConfig({ JWT_ENABLED: 'true', JWT_SECRET: 's' });
    assert.equal(c.jwksRefreshIntervalSec, 3600);
    assert.equal(c.jwksTimeoutMs, 5000);
    assert.equal(c.clockSkewSec, 30);
    assert.deepEqual(c.skipPaths, ['/health', '/metrics/prometheus', '/metrics', '/']);
    assert.equal(c.rolesClaim, 'role');
    assert.equal(c.rolesArrayClaim, 'roles');
    assert.deepEqual(c.roles, { admin: 'admin', readWrite: 'read-write', readOnly: 'read-only', writeOnly: 'write-only' });
    assert.equal(c.requireExp, false);
    assert.equal(c.maxLifetimeSec, 0);
    assert.deepEqual(c.audiences, []);
    assert.equal(c.issuer, '');
  });
  it('an empty JWT_SKIP_PATHS removes every skip; lists are trimmed', () => {
    assert.deepEqual(loadJwtConfig({ JWT_ENABLED: 'true', JWT_SECRET: 's', JWT_SKIP_PATHS: '' }).skipPaths, []);
    assert.deepEqual(loadJwtConfig({ JWT_ENABLED: 'true', JWT_SECRET: 's', JWT_SKIP_PATHS: ' /a , ,/b/ ' }).skipPaths, ['/a', '/b/']);
    assert.deepEqual(loadJwtConfig({ JWT_ENABLED: 'true', JWT_SECRET: 's', JWT_AUDIENCE: 'queen, other' }).audiences, ['queen', 'other']);
  });
  it('describeJwtConfig never contains the secret or the PEM', () => {
    const c = loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_SECRET: 'supersecretvalue', JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----abc' });
    const s = JSON.stringify(describeJwtConfig(c));
    assert.ok(!s.includes('supersecretvalue') && !s.includes('BEGIN'));
    assert.match(s, /<set:16 chars>/);
  });
});

describe('route classification (seed 004 prefix table)', () => {
  for (const [method, p, level, why] of SEED_ROUTES) {
    it(`${method} ${p} → ${level} (${why})`, () => {
      assert.equal(classify(method, p.split('?')[0]!), level);
    });
  }
  it('every rule of the table is exercised by a seed row', () => {
    const used = new Set<number>();
    for (const [method, p] of SEED_ROUTES) {
      const i = ROUTE_RULES.findIndex((r) => (r.method === undefined || r.method === method) && (r.exact?.includes(p.split('?')[0]!) || r.prefix?.some((x) => p.startsWith(x))));
      if (i >= 0) used.add(i);
    }
    assert.deepEqual([...ROUTE_RULES.keys()].filter((i) => !used.has(i)), []);
  });
});

describe('access levels are role sets, not a ladder', () => {
  const sets = levelRoleSets({ admin: 'admin', readWrite: 'read-write', readOnly: 'read-only', writeOnly: 'write-only' });
  for (const level of Object.keys(SEED_LEVEL_PASSED_BY) as Level[]) {
    for (const held of ROLE_HOLDINGS) {
      const want = seedPasses(level, held);
      it(`${level} × [${held.join(', ')}] → ${want ? 'pass' : 'refuse'}`, () => {
        assert.equal(passes(level, new Set(held), sets), want);
      });
    }
  }
  it('remapped names replace the defaults; empty names match nothing', () => {
    const m = levelRoleSets({ admin: '', readWrite: 'rw', readOnly: 'read-only', writeOnly: 'queen.write' });
    assert.equal(passes('write-only', new Set(['queen.write']), m), true);
    assert.equal(passes('write-only', new Set(['write-only']), m), false);
    assert.equal(passes('admin', new Set(['']), m), false);
    assert.equal(passes('admin', new Set(['admin']), m), false);
  });
});

describe('skip paths', () => {
  for (const [entries, p, skipped, why] of SEED_SKIPS) {
    it(`${entries} vs ${p} → ${skipped} (${why})`, () => {
      const list = entries.split(',').map((e) => e.trim()).filter(Boolean);
      assert.equal(compileSkipPaths(list)(p), skipped);
      assert.equal(list.some((e) => skipEntryMatches(e, p)), skipped);
    });
  }
});

describe('token extraction and header decode', () => {
  const cases: [string | undefined, string | undefined][] = [
    [undefined, undefined],
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['bEaReR abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['abc', 'abc'],
    ['Bearer  abc', ' abc'],
    ['Bearer ', 'Bearer '],
    ['', ''],
    ['Basic dXNlcjpw', 'Basic dXNlcjpw'],
    ['Bearer \u00e9', undefined],
  ];
  for (const [header, token] of cases) {
    it(`Authorization ${JSON.stringify(header)} → ${JSON.stringify(token)}`, () => assert.equal(extractToken(header), token));
  }
  const bad: [string, string][] = [
    ['two segments', 'a.b'],
    ['four segments', 'a.b.c.d'],
    ['empty', ''],
    ['header not base64url', '***.e30.x'],
    ['header padded', `${b64({ alg: 'HS256' })}=.e30.x`],
    ['header not JSON', `${b64('nope')}.e30.x`],
    ['header an array', `${b64([1])}.e30.x`],
    ['alg missing', rawToken({ typ: 'JWT' }, {})],
    ['alg not a string', rawToken({ alg: 256 }, {})],
    ['alg none', rawToken({ alg: 'none' }, {})],
    ['alg None', rawToken({ alg: 'None' }, {})],
    ['alg NONE', rawToken({ alg: 'NONE' }, {})],
    ['alg nOnE with signature', rawToken({ alg: 'nOnE' }, {}, 'c2ln')],
    ['alg hs256 lower case', rawToken({ alg: 'hs256' }, {})],
    ['alg ES512', rawToken({ alg: 'ES512' }, {})],
    ['kid a number', rawToken({ alg: 'HS256', kid: 7 }, {})],
  ];
  for (const [why, t] of bad) it(`Bad token header: ${why}`, () => assert.equal(code(() => decodeHeader(t)), 'bad_token_header'));
  it('decodable header: alg and kid', () => {
    assert.deepEqual({ ...decodeHeader(rawToken({ alg: 'RS384', kid: 'k1' }, {})), raw: undefined }, { alg: 'RS384', kid: 'k1', raw: undefined });
    assert.equal(decodeHeader(rawToken({ alg: 'PS256' }, {})).kid, '');
    assert.equal(decodeHeader(rawToken({ alg: 'HS256', kid: null }, {})).kid, '');
  });
});

describe('claims (skew on all three temporal checks)', () => {
  const base = loadJwtConfig({ JWT_ENABLED: 'true', JWT_SECRET: 's' });
  const cfg = (over: Partial<JwtConfig>): JwtConfig => ({ ...base, ...over });
  const now = 1_700_000_000;
  for (const skew of [0, 30, 120]) {
    const c = cfg({ clockSkewSec: skew });
    const rows: [string, Record<string, unknown>, string | undefined][] = [
      ['no exp accepted', {}, undefined],
      ['exp = now + skew accepted', { exp: now - skew }, undefined],
      ['exp one past the skew', { exp: now - skew - 1 }, 'token_expired'],
      ['nbf = now + skew accepted', { nbf: now + skew }, undefined],
      ['nbf one past', { nbf: now + skew + 1 }, 'token_not_yet_valid'],
      ['iat = now + skew accepted', { iat: now + skew }, undefined],
      ['iat one past', { iat: now + skew + 1 }, 'token_issued_in_future'],
      ['fractional exp floored', { exp: now - skew + 0.9 }, undefined],
      ['string exp is absent', { exp: '1' }, undefined],
      ['expired and future iat: exp first', { exp: now - skew - 1, iat: now + skew + 1 }, 'token_expired'],
      ['nbf before iat', { nbf: now + skew + 1, iat: now + skew + 1 }, 'token_not_yet_valid'],
    ];
    for (const [why, claims, want] of rows) {
      it(`skew ${skew}: ${why}`, () => assert.equal(code(() => checkClaims(claims, c, now)), want));
    }
  }
  const rows: [string, Partial<JwtConfig>, Record<string, unknown>, string | undefined][] = [
    ['iss unchecked when JWT_ISSUER empty', {}, { iss: 'x' }, undefined],
    ['iss exact', { issuer: 'https://idp/' }, { iss: 'https://idp/' }, undefined],
    ['iss trailing slash differs', { issuer: 'https://idp/' }, { iss: 'https://idp' }, 'invalid_token_issuer'],
    ['iss missing', { issuer: 'https://idp/' }, {}, 'invalid_token_issuer'],
    ['iss case-sensitive', { issuer: 'A' }, { iss: 'a' }, 'invalid_token_issuer'],
    ['aud string', { audiences: ['queen'] }, { aud: 'queen' }, undefined],
    ['aud array one match', { audiences: ['queen'] }, { aud: ['x', 'queen'] }, undefined],
    ['aud array no match', { audiences: ['queen'] }, { aud: ['x', 1] }, 'invalid_token_audience'],
    ['aud missing', { audiences: ['queen'] }, {}, 'invalid_token_audience'],
    ['aud list configured', { audiences: ['a', 'queen'] }, { aud: 'queen' }, undefined],
    ['iss before aud', { issuer: 'i', audiences: ['a'] }, { iss: 'x', aud: 'y' }, 'invalid_token_issuer'],
    ['expired before wrong issuer', { issuer: 'i' }, { iss: 'x', exp: now - 1000 }, 'token_expired'],
    ['JWT_REQUIRE_EXP: no exp', { requireExp: true }, {}, 'token_no_expiry'],
    ['JWT_REQUIRE_EXP: exp present', { requireExp: true }, { exp: now + 10 }, undefined],
    ['JWT_MAX_LIFETIME: within', { maxLifetimeSec: 3600 }, { iat: now, exp: now + 3600 }, undefined],
    ['JWT_MAX_LIFETIME: over', { maxLifetimeSec: 3600 }, { iat: now, exp: now + 3601 }, 'token_lifetime_too_long'],
    ['JWT_MAX_LIFETIME: no iat, measured from now', { maxLifetimeSec: 60 }, { exp: now + 61 }, 'token_lifetime_too_long'],
    ['JWT_MAX_LIFETIME: no exp', { maxLifetimeSec: 60 }, {}, 'token_no_expiry'],
  ];
  for (const [why, over, claims, want] of rows) it(why, () => assert.equal(code(() => checkClaims(claims, cfg(over), now)), want));
  it('sub: non-empty string only', () => {
    assert.equal(subjectOf({ sub: 'svc' }), 'svc');
    assert.equal(subjectOf({ sub: '' }), undefined);
    assert.equal(subjectOf({ sub: 7 }), undefined);
  });
});

describe('roles: both claims, top-level keys only', () => {
  const rows: [string, Record<string, unknown>, string[]][] = [
    ['single claim', { role: 'admin' }, ['admin']],
    ['array claim', { roles: ['read-only', 'write-only', 3] }, ['read-only', 'write-only']],
    ['both claims', { role: 'admin', roles: ['read-only'] }, ['admin', 'read-only']],
    ['nested path invisible', { realm_access: { roles: ['admin'] } }, []],
    ['no splitting on spaces', { role: 'read-only admin' }, ['read-only admin']],
    ['single claim must be a string', { role: ['admin'] }, []],
    ['array claim must be an array', { roles: 'admin' }, []],
  ];
  for (const [why, claims, want] of rows) it(why, () => assert.deepEqual([...rolesOf(claims, 'role', 'roles')].sort(), want.sort()));
  it('remapped claim names', () => {
    assert.deepEqual([...rolesOf({ scope: 'queen.write', role: 'admin' }, 'scope', 'groups')], ['queen.write']);
  });
});

describe('JWKS document parsing', () => {
  it('reads RSA n/e and OKP Ed25519 x only, in document order, kid default ""', async () => {
    const rsa = await publicJwk(rsaKeys(), 'r1');
    const ed = await publicJwk(edKeys(), 'e1');
    const keys = await parseJwks(
      Buffer.from(
        JSON.stringify({
          keys: [
            { kty: 'EC', crv: 'P-256', x: 'AA', y: 'AA', kid: 'ec' },
            { kty: 'oct', k: 'AAAA', kid: 'oct' },
            { kty: 'RSA', n: rsa.n, kid: 'no-e' },
            { kty: 'OKP', crv: 'X25519', x: ed.x, kid: 'x25519' },
            { kty: 'OKP', crv: 'Ed25519', x: 'AAAA', kid: 'short' },
            { ...rsa, use: 'enc', alg: 'RS512' },
            ed,
            { kty: 'RSA', n: rsa.n, e: rsa.e },
            'garbage',
          ],
        }),
      ),
    );
    assert.deepEqual(keys.map((k) => [k.kid, k.kty]), [['r1', 'RSA'], ['e1', 'OKP'], ['', 'RSA']]);
    assert.deepEqual(Object.keys(keys[0]!.jwk).sort(), ['e', 'kty', 'n']);
  });
  it('no keys array is a failed fetch', async () => {
    await assert.rejects(parseJwks(Buffer.from('{"nokeys":[]}')), /no `keys` array/);
    await assert.rejects(parseJwks(Buffer.from('nope')), /not JSON/);
  });
});

describe('PEM parsing', () => {
  it('SPKI, PKCS#1 and escaped newlines', () => {
    const k = rsaKeys();
    assert.equal(parsePublicPem(k.publicPem)?.asymmetricKeyType, 'rsa');
    assert.equal(parsePublicPem(k.pkcs1Pem)?.asymmetricKeyType, 'rsa');
    assert.equal(parsePublicPem(k.publicPem.replace(/\n/g, '\\n'))?.asymmetricKeyType, 'rsa');
    assert.equal(parsePublicPem(edKeys().publicPem)?.asymmetricKeyType, 'ed25519');
    assert.equal(parsePublicPem('not a pem'), undefined);
  });
});

describe('error registry carries the seed messages byte for byte', () => {
  for (const [status, message, c] of SEED_ERRORS) {
    it(`${c}: ${status} ${message}`, () => {
      const e = new QueenError(c as ConstructorParameters<typeof QueenError>[0]);
      assert.equal(e.status, status);
      assert.deepEqual(e.toJSON(), { error: message, code: c });
    });
  }
});

describe('the path judged is the path the router dispatches on', () => {
  const require = createRequire(import.meta.url);
  const fmw = require('find-my-way/lib/url-sanitizer.js') as { safeDecodeURI(p: string, semi?: boolean): { path: string } };
  const paths = [
    '/api/v1/push', '/api/v1/push?x=1', '/api/v1/resources/%71ueues/x', '/api/v1/resources/queues%2Fx', '/api/v1/resources/queues/a%252Fb',
    '/%61pi/v1/system/x', '/api/v1/kv/ns/k%20v', '/api/v1/kv/%E2%82%AC', '/a%3Fb?c', '/a%23b', '/metric%73', '/x#frag', '/%25%25',
  ];
  for (const p of paths) {
    it(`${p} → same as find-my-way`, () => assert.equal(routerPath(p), fmw.safeDecodeURI(p).path));
  }
  it('malformed percent-encoding: the router refuses it, we judge the raw path', () => {
    assert.throws(() => fmw.safeDecodeURI('/bad%E2%82'));
    assert.equal(routerPath('/bad%E2%82'), '/bad%E2%82');
  });
  const levels: [string, string, string][] = [
    ['DELETE', '/api/v1/resources/%71ueues/x', 'admin'],
    ['GET', '/%61pi/v1/system/x', 'admin'],
    ['DELETE', '/api/v1/resources/queues%2Fx', 'read-write'],
  ];
  for (const [m, p, level] of levels) it(`${m} ${p} → ${level}`, () => assert.equal(classify(m, routerPath(p)), level));
});
