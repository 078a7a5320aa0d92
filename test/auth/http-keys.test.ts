/**
 * Broker JWT (docs/security.md#jwt) against a real broker over HTTP: the accepted-alg table (every row, every token alg),
 * key selection and its 500s, a static PEM winning over JWKS, and the algorithm-confusion attack.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  bearer, edKeys, hsKey, JwksServer, mint, publicJwk, request, rsaKeys, spawnBroker, type HttpAnswer, type SigningKey, type SpawnedBroker,
} from '../helpers/jwt.js';
import { ALL_TOKEN_ALGS, SEED_ALG_TABLE, seedError } from './seed-tables.js';

const SECRET = randomBytes(24).toString('hex');
const RSA = rsaKeys();
const ED = edKeys();
const EC = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ADMIN = { sub: 'svc', roles: ['admin'] };
const PATH = '/api/v1/resources/queues';

function keyFor(alg: string): { key: SigningKey; kid?: string } {
  if (alg.startsWith('HS')) return { key: hsKey(SECRET) };
  if (alg === 'EdDSA') return { key: ED.privateKey, kid: 'ed-1' };
  if (alg === 'ES256') return { key: EC.privateKey, kid: 'ec-1' };
  return { key: RSA.privateKey, kid: 'rsa-1' };
}

async function tokenFor(alg: string, claims: Record<string, unknown> = ADMIN): Promise<string> {
  const { key, kid } = keyFor(alg);
  return mint(alg, key, claims, kid === undefined ? {} : { kid });
}

function assertRefused(a: HttpAnswer, code: string, what = ''): void {
  const want = seedError(code);
  assert.equal(a.status, want.status, `${what}: ${a.text}`);
  assert.deepEqual(a.json, want.body, what);
}

describe('JWT_ALGORITHM: every row of the seed table, every token alg', () => {
  const jwks = new JwksServer();
  before(async () => {
    await jwks.start();
    jwks.doc = { keys: [await publicJwk(RSA, 'rsa-1'), await publicJwk(ED, 'ed-1')] };
  });
  after(async () => jwks.close());

  for (const [setting, accepted] of SEED_ALG_TABLE) {
    describe(`JWT_ALGORITHM=${setting}`, () => {
      let b: SpawnedBroker;
      before(async () => {
        b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: setting, JWT_SECRET: SECRET, JWT_JWKS_URL: jwks.url });
      });
      after(async () => b?.stop());
      it('boot line names the setting and its accepted set', () => {
        const [line] = b.logLines('JWT auth ENABLED');
        assert.equal(line?.algorithm, setting);
        assert.deepEqual(line?.acceptedAlgs, [...accepted]);
      });
      for (const alg of ALL_TOKEN_ALGS) {
        const ok = accepted.includes(alg);
        it(`token alg ${alg} → ${ok ? 'accepted' : '401 Unsupported token algorithm'}`, async () => {
          const r = await request(b.url, 'GET', PATH, bearer(await tokenFor(alg)));
          if (ok) assert.equal(r.status, 200, r.text);
          else assertRefused(r, 'unsupported_token_algorithm', alg);
        });
      }
    });
  }
});

describe('key selection per token alg (seed table "Where the verification key comes from")', () => {
  const confusion = (): Promise<string> => mint('HS256', hsKey(RSA.publicPem), ADMIN);

  describe('auto, RSA PEM, no secret', () => {
    let b: SpawnedBroker;
    before(async () => {
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_PUBLIC_KEY: RSA.publicPem });
    });
    after(async () => b?.stop());
    it('HS256 → 500 HS secret not configured (not a 401)', async () => assertRefused(await request(b.url, 'GET', PATH, bearer(await tokenFor('HS256'))), 'hs_secret_not_configured'));
    for (const alg of ['RS256', 'RS384', 'RS512']) {
      it(`${alg} verified with the PEM`, async () => assert.equal((await request(b.url, 'GET', PATH, bearer(await tokenFor(alg)))).status, 200));
    }
    it('the PEM is used whatever the kid says', async () => {
      const t = await mint('RS256', RSA.privateKey, ADMIN, { kid: 'whatever' });
      assert.equal((await request(b.url, 'GET', PATH, bearer(t))).status, 200);
    });
    it('an RSA token from another key pair → 401 Invalid token signature', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('RS256', rsaKeys().privateKey, ADMIN))), 'invalid_token_signature');
    });
    it('EdDSA with an RSA PEM → 500 invalid Ed public key PEM', async () => assertRefused(await request(b.url, 'GET', PATH, bearer(await tokenFor('EdDSA'))), 'invalid_ed_pem'));
    it('attack: HS256 signed with the RSA public PEM as secret → 500 HS secret not configured', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await confusion())), 'hs_secret_not_configured');
    });
    it('the broker survives its 500s', async () => assert.equal((await request(b.url, 'GET', '/health')).status, 200));
  });

  describe('auto, secret and a PKCS#1 RSA PEM', () => {
    let b: SpawnedBroker;
    before(async () => {
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET, JWT_PUBLIC_KEY: RSA.pkcs1Pem });
    });
    after(async () => b?.stop());
    it('both families verify', async () => {
      for (const alg of ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512']) {
        assert.equal((await request(b.url, 'GET', PATH, bearer(await tokenFor(alg)))).status, 200, alg);
      }
    });
    it('attack: HS256 signed with the RSA public PEM as secret → 401 Invalid token signature', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await confusion())), 'invalid_token_signature');
      assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('HS256', hsKey(RSA.pkcs1Pem), ADMIN))), 'invalid_token_signature');
    });
    it('the PEM never appears in the log', () => assert.ok(!b.logs().join('\n').includes('MII')));
  });

  describe('RS256 with an RSA PEM', () => {
    let b: SpawnedBroker;
    before(async () => {
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: RSA.publicPem });
    });
    after(async () => b?.stop());
    it('attack: HS256 signed with the RSA public PEM as secret → 401 Unsupported token algorithm', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await confusion())), 'unsupported_token_algorithm');
    });
  });

  describe('a bad PEM: no fallback to JWKS', () => {
    const jwks = new JwksServer();
    let b: SpawnedBroker;
    let afterBoot = 0;
    before(async () => {
      await jwks.start();
      jwks.doc = { keys: [await publicJwk(RSA, 'rsa-1'), await publicJwk(ED, 'ed-1')] };
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET, JWT_PUBLIC_KEY: 'not a pem', JWT_JWKS_URL: jwks.url });
      afterBoot = jwks.fetches;
    });
    after(async () => {
      await b?.stop();
      await jwks.close();
    });
    it('RS256 → 500 invalid RSA public key PEM', async () => assertRefused(await request(b.url, 'GET', PATH, bearer(await tokenFor('RS256'))), 'invalid_rsa_pem'));
    it('EdDSA → 500 invalid Ed public key PEM', async () => assertRefused(await request(b.url, 'GET', PATH, bearer(await tokenFor('EdDSA'))), 'invalid_ed_pem'));
    it('unknown kid with a bad PEM is still the PEM error, and JWKS is never consulted', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('RS256', RSA.privateKey, ADMIN, { kid: 'nope' }))), 'invalid_rsa_pem');
      assert.equal(jwks.fetches, afterBoot);
    });
    it('HS tokens still verify; boot went on', async () => assert.equal((await request(b.url, 'GET', PATH, bearer(await tokenFor('HS256')))).status, 200));
  });

  describe('Ed25519 PEM', () => {
    let b: SpawnedBroker;
    before(async () => {
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET, JWT_PUBLIC_KEY: ED.publicPem });
    });
    after(async () => b?.stop());
    it('EdDSA verified with the PEM', async () => assert.equal((await request(b.url, 'GET', PATH, bearer(await tokenFor('EdDSA')))).status, 200));
    it('RS256 with an Ed PEM → 500 invalid RSA public key PEM', async () => assertRefused(await request(b.url, 'GET', PATH, bearer(await tokenFor('RS256'))), 'invalid_rsa_pem'));
    it('EdDSA from another key → 401 Invalid token signature', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('EdDSA', edKeys().privateKey, ADMIN))), 'invalid_token_signature');
    });
  });

  describe('HS256 with only a PEM (boots, fails per request)', () => {
    let b: SpawnedBroker;
    before(async () => {
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_PUBLIC_KEY: RSA.publicPem });
    });
    after(async () => b?.stop());
    it('HS256 → 500 HS secret not configured', async () => assertRefused(await request(b.url, 'GET', PATH, bearer(await tokenFor('HS256'))), 'hs_secret_not_configured'));
    it('attack: HS256 signed with the PEM → 500 HS secret not configured, never 200', async () => {
      assertRefused(await request(b.url, 'GET', PATH, bearer(await confusion())), 'hs_secret_not_configured');
    });
  });
});
