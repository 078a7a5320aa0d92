/**
 * JWKS (docs/security.md#jwks), against a real broker over HTTP and a real JWKS server on 127.0.0.1
 * that counts its fetches: pre-fetch log lines and key count, key types read, lookup by kid, the
 * empty kid, the unknown-kid re-fetch throttle under a 500-token stampede, rotation, failed
 * pre-fetch, no redirects, the 1 MiB cap (Content-Length and chunked), the timeout, the background
 * refresh and the http:// warning. Plus the cache's replace semantics at module level.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { JwksCache } from '../../src/auth/jwks.js';
import { createLogger } from '../../src/observability/logger.js';
import { TestClock } from '../../src/util/clock.js';
import { Scheduler } from '../../src/util/scheduler.js';
import {
  bearer, edKeys, JwksServer, mint, publicJwk, request, rsaKeys, spawnBroker, type HttpAnswer, type SpawnedBroker,
} from '../helpers/jwt.js';
import { waitFor } from '../helpers/wait.js';
import { seedError } from './seed-tables.js';

const ADMIN = { sub: 'svc', roles: ['admin'] };
const PATH = '/api/v1/resources/queues';
const PREFETCH_FAILED = 'JWKS pre-fetch failed (will retry on demand)';
const HTTP_WARNING = 'JWT_JWKS_URL is plaintext http:// — signing keys fetched over cleartext are MITM-forgeable; use https://';

function assertRefused(a: HttpAnswer, code: string, what = ''): void {
  const want = seedError(code);
  assert.equal(a.status, want.status, `${what}: ${a.text}`);
  assert.deepEqual(a.json, want.body, what);
}

describe('JWKS: lookup, key types, throttle, rotation (RS256 + auto brokers)', () => {
  const R1 = rsaKeys();
  const R2 = rsaKeys();
  const ED = edKeys();
  const jwks = new JwksServer();
  let b: SpawnedBroker;
  let docKeys: unknown[];
  before(async () => {
    await jwks.start();
    docKeys = [
      await publicJwk(R1, 'k1'),
      { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'ec' },
      { kty: 'oct', k: 'c2VjcmV0', kid: 'oct' },
      { kty: 'OKP', crv: 'X25519', x: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo', kid: 'x25519' },
      { kty: 'RSA', n: (await publicJwk(R2)).n, kid: 'rsa-no-e' },
      await publicJwk(ED, 'e1'),
    ];
    jwks.doc = { keys: docKeys };
    b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_SECRET: 'unused-secret', JWT_JWKS_URL: jwks.url });
  });
  after(async () => {
    await b?.stop();
    await jwks.close();
  });

  it('boot: one pre-fetch, `JWKS pre-fetch OK` with the usable key count (2 of 6), the http:// warning', () => {
    assert.equal(jwks.fetches, 1);
    const ok = b.logLines('JWKS pre-fetch OK');
    assert.equal(ok.length, 1, b.logs().join('\n'));
    assert.equal(ok[0]!.keys, 2);
    assert.equal(b.logLines(HTTP_WARNING).length, 1);
  });
  it('RS256/384/512 tokens verify against kid k1 without a fetch', async () => {
    for (const alg of ['RS256', 'RS384', 'RS512']) {
      assert.equal((await request(b.url, 'GET', PATH, bearer(await mint(alg, R1.privateKey, ADMIN, { kid: 'k1' })))).status, 200, alg);
    }
    assert.equal(jwks.fetches, 1);
  });
  it('EdDSA token verifies against the OKP Ed25519 key', async () => {
    assert.equal((await request(b.url, 'GET', PATH, bearer(await mint('EdDSA', ED.privateKey, ADMIN, { kid: 'e1' })))).status, 200);
  });
  it('an empty kid matches the first key in the cache', async () => {
    assert.equal((await request(b.url, 'GET', PATH, bearer(await mint('RS256', R1.privateKey, ADMIN)))).status, 200);
    assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('EdDSA', ED.privateKey, ADMIN))), 'invalid_token_signature', 'EdDSA vs first (RSA) key');
  });
  it('a key of the wrong type for the token is a signature failure, not a miss', async () => {
    const before = jwks.fetches;
    assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('EdDSA', ED.privateKey, ADMIN, { kid: 'k1' }))), 'invalid_token_signature');
    assert.equal(jwks.fetches, before);
  });
  it('skipped entries are not keys: their kids are unknown', async () => {
    // Whether this miss may re-fetch depends on the throttle window; the re-fetch that still finds
    // no key is asserted on a fake clock in 'JwksCache (module level, fake clock)'.
    assertRefused(await request(b.url, 'GET', PATH, bearer(await mint('RS256', R2.privateKey, ADMIN, { kid: 'rsa-no-e' }))), 'unknown_key_id');
  });
});

describe('JWKS: an unknown-kid stampede on a fresh broker whose pre-fetch failed', () => {
  // A failed pre-fetch does not start the miss throttle window, so the first unknown kid may fetch
  // at once: the stampede meets an open window without waiting one out. The throttle's arithmetic
  // (one fetch per 5 s window, shared by concurrent misses, rotation picked up with exactly one
  // fetch) is asserted on a fake clock in 'JwksCache (module level, fake clock)'.
  const K = rsaKeys();
  const jwks = new JwksServer();
  let down = true;
  let b: SpawnedBroker;
  before(async () => {
    await jwks.start();
    jwks.doc = { keys: [await publicJwk(K, 'k')] };
    const serve = jwks.responder;
    jwks.responder = (q, res) => {
      if (!down) return serve(q, res);
      res.writeHead(500);
      res.end('down');
    };
    b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_JWKS_URL: jwks.url });
  });
  after(async () => {
    await b?.stop();
    await jwks.close();
  });

  it('attack: 500 tokens with random unknown kids cause at most two fetches per throttle window', async () => {
    assert.equal(b.logLines(PREFETCH_FAILED).length, 1, b.logs().join('\n'));
    down = false;
    const tokens = await Promise.all(Array.from({ length: 500 }, () => mint('RS256', K.privateKey, ADMIN, { kid: randomBytes(8).toString('hex') })));
    const before = jwks.fetches;
    const t0 = Date.now();
    const answers: HttpAnswer[] = [];
    for (let i = 0; i < tokens.length; i += 50) {
      answers.push(...(await Promise.all(tokens.slice(i, i + 50).map((t) => request(b.url, 'GET', PATH, bearer(t))))));
    }
    // Not a speed claim: a slow machine that spreads the stampede over more 5 s windows is allowed
    // one more fetch per window; on any machine that sends it within one window the bound is 2.
    const windows = Math.floor((Date.now() - t0) / 5000);
    for (const a of answers) assertRefused(a, 'unknown_key_id');
    const during = jwks.fetches - before;
    assert.ok(during >= 1 && during <= 2 + windows, `fetches during the stampede: ${during} over ${windows + 1} throttle window(s)`);
    // the key the fetches brought is in use
    assert.equal((await request(b.url, 'GET', PATH, bearer(await mint('RS256', K.privateKey, ADMIN, { kid: 'k' })))).status, 200);
  });
});

describe('JWKS transport failures (each a fresh broker)', () => {
  const K = rsaKeys();
  let goodDoc: { keys: unknown[] };
  before(async () => {
    goodDoc = { keys: [await publicJwk(K, 'k')] };
  });
  const token = (): Promise<string> => mint('RS256', K.privateKey, ADMIN, { kid: 'k' });

  async function withBroker(setup: (s: JwksServer) => void, env: Record<string, string>, body: (b: SpawnedBroker, s: JwksServer) => Promise<void>): Promise<void> {
    const s = new JwksServer();
    await s.start();
    s.doc = goodDoc;
    setup(s);
    let b: SpawnedBroker | undefined;
    try {
      b = await spawnBroker({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_JWKS_URL: s.url, ...env });
      await body(b, s);
    } finally {
      await b?.stop();
      await s.close();
    }
  }

  it('failed pre-fetch (HTTP 500) is not fatal; the first token pays the fetch', async () => {
    let down = true;
    await withBroker((s) => {
      const serve = s.responder;
      s.responder = (q, res) => {
        if (!down) return serve(q, res);
        res.writeHead(500);
        res.end('down');
      };
    }, {}, async (b, s) => {
      assert.equal(b.logLines(PREFETCH_FAILED).length, 1, b.logs().join('\n'));
      assert.equal(b.logLines('JWKS pre-fetch OK').length, 0);
      down = false;
      const before = s.fetches;
      assert.equal((await request(b.url, 'GET', PATH, bearer(await token()))).status, 200);
      assert.equal(s.fetches - before, 1);
    });
  });
  it('unreachable endpoint: pre-fetch failed, requests answer Unknown key ID', async () => {
    await withBroker((s) => { s.responder = (q) => q.socket.destroy(); }, {}, async (b) => {
      assert.equal(b.logLines(PREFETCH_FAILED).length, 1);
      assertRefused(await request(b.url, 'GET', PATH, bearer(await token())), 'unknown_key_id');
    });
  });
  it('redirects are not followed', async () => {
    await withBroker((s) => {
      const serve = s.responder;
      s.responder = (q, res) => {
        if (q.url === '/real') return serve(q, res);
        res.writeHead(302, { location: `${s.base}/real` });
        res.end();
      };
    }, {}, async (b, s) => {
      assert.equal(b.logLines(PREFETCH_FAILED).length, 1, b.logs().join('\n'));
      assert.ok(!s.paths.includes('/real'), `followed: ${s.paths.join(',')}`);
    });
  });
  it('body over 1 MiB with Content-Length is refused', async () => {
    await withBroker((s) => {
      s.responder = (_q, res) => {
        const body = JSON.stringify({ ...goodDoc, pad: 'x'.repeat(1024 * 1024) });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
    }, {}, async (b) => assert.equal(b.logLines(PREFETCH_FAILED).length, 1, b.logs().join('\n')));
  });
  it('chunked body over 1 MiB is refused', async () => {
    await withBroker((s) => {
      s.responder = (_q, res) => {
        res.writeHead(200, { 'content-type': 'application/json' }); // no length: chunked
        res.write(`{"keys":${JSON.stringify(goodDoc.keys)},"pad":"`);
        const chunk = 'x'.repeat(64 * 1024);
        for (let i = 0; i < 17; i++) res.write(chunk);
        res.end('"}');
      };
    }, {}, async (b) => assert.equal(b.logLines(PREFETCH_FAILED).length, 1, b.logs().join('\n')));
  });
  it('chunked body just under 1 MiB is read', async () => {
    await withBroker((s) => {
      s.responder = (_q, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const head = `{"keys":${JSON.stringify(goodDoc.keys)},"pad":"`;
        res.write(head);
        res.write('x'.repeat(1024 * 1024 - Buffer.byteLength(head) - 2));
        res.end('"}');
      };
    }, {}, async (b) => {
      assert.equal(b.logLines('JWKS pre-fetch OK')[0]?.keys, 1, b.logs().join('\n'));
      assert.equal((await request(b.url, 'GET', PATH, bearer(await token()))).status, 200);
    });
  });
  it('JWT_JWKS_TIMEOUT_MS bounds the fetch', async () => {
    // The endpoint would answer a good document after 60 s: a broker that waited for it would not
    // boot within startBroker's 30 s, and one that got it would log a successful pre-fetch.
    await withBroker((s) => {
      s.responder = (_q, res) => {
        const t = setTimeout(() => res.end(JSON.stringify(goodDoc)), 60_000);
        res.on('close', () => clearTimeout(t));
      };
    }, { JWT_JWKS_TIMEOUT_MS: '300' }, async (b) => {
      assert.equal(b.logLines(PREFETCH_FAILED).length, 1, b.logs().join('\n'));
      assert.equal(b.logLines('JWKS pre-fetch OK').length, 0, b.logs().join('\n'));
    });
  });
  it('a document without `keys` is a failed fetch; zero usable keys is a successful one', async () => {
    await withBroker((s) => { s.doc = { nokeys: [] }; }, {}, async (b) => assert.equal(b.logLines(PREFETCH_FAILED).length, 1));
    await withBroker((s) => { s.doc = { keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }] }; }, {}, async (b) => assert.equal(b.logLines('JWKS pre-fetch OK')[0]?.keys, 0));
  });
  it('background refresh every JWT_JWKS_REFRESH_INTERVAL seconds picks up a rotated key without a miss', async () => {
    await withBroker(() => undefined, { JWT_JWKS_REFRESH_INTERVAL: '1' }, async (b, s) => {
      const K2 = rsaKeys();
      s.doc = { keys: [await publicJwk(K2, 'k2')] };
      await waitFor(() => s.fetches >= 3, { what: `three JWKS fetches at a 1 s refresh interval (so far ${s.fetches})` });
      assert.equal((await request(b.url, 'GET', PATH, bearer(await mint('RS256', K2.privateKey, ADMIN, { kid: 'k2' })))).status, 200);
    });
  });
});

describe('JwksCache (module level, fake clock)', () => {
  const log = createLogger('silent');
  it('the background refresh runs on the scheduler it is given, every interval of its clock, until stopped', async () => {
    const s = new JwksServer();
    await s.start();
    s.doc = { keys: [await publicJwk(rsaKeys(), 'a')] };
    const clock = new TestClock(3_000_000);
    const scheduler = new Scheduler(clock);
    const c = new JwksCache({ url: s.url, timeoutMs: 2000, refreshIntervalSec: 600, log, now: () => clock.now(), scheduler });
    try {
      c.start();
      assert.equal(scheduler.lane('jwks-refresh').size, 1, 'one entry, no timer of its own');
      clock.advance(599_999);
      assert.equal(s.fetches, 0, 'not before the interval');
      clock.advance(1);
      // The server counts the request before the cache has read the answer: wait for both.
      await waitFor(() => s.fetches === 1 && c.size === 1, { what: 'the first background refresh, fetched and applied' });
      assert.equal(c.size, 1);
      clock.advance(600_000);
      await waitFor(() => s.fetches === 2, { what: 'the second background refresh' });
      c.stop();
      assert.equal(scheduler.size, 0, 'stopped: nothing left scheduled');
      clock.advance(600_000);
      assert.equal(s.fetches, 2);
    } finally {
      c.stop();
      await s.close();
    }
  });
  it('a successful fetch replaces the whole cache; misses are throttled to one fetch per 5 s and shared', async () => {
    const s = new JwksServer();
    await s.start();
    const A = rsaKeys();
    const B = rsaKeys();
    s.doc = { keys: [await publicJwk(A, 'a')] };
    let now = 1_000_000;
    const c = new JwksCache({ url: s.url, timeoutMs: 2000, refreshIntervalSec: 3600, log, now: () => now });
    try {
      assert.equal(await c.prefetch(), true);
      assert.equal(s.fetches, 1);
      assert.equal((await c.lookup('a'))?.kid, 'a');
      assert.equal(await c.lookup('b'), undefined); // throttled: no fetch
      assert.equal(s.fetches, 1);
      s.doc = { keys: [await publicJwk(B, 'b')] };
      now += 5000;
      const all = await Promise.all(Array.from({ length: 20 }, () => c.lookup('b')));
      assert.ok(all.every((k) => k?.kid === 'b'));
      assert.equal(s.fetches, 2);
      now += 5000;
      assert.equal(await c.lookup('a'), undefined); // 'a' is gone after the replace, one more fetch
      assert.equal(s.fetches, 3);
      assert.equal(c.size, 1);
    } finally {
      c.stop();
      await s.close();
    }
  });
  it('skipped entries are not keys: a miss on their kid after the window re-fetches and still finds nothing', async () => {
    const s = new JwksServer();
    await s.start();
    const A = rsaKeys();
    const R = rsaKeys();
    s.doc = {
      keys: [
        await publicJwk(A, 'a'),
        { kty: 'oct', k: 'c2VjcmV0', kid: 'oct' },
        { kty: 'OKP', crv: 'X25519', x: 'hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo', kid: 'x25519' },
        { kty: 'RSA', n: (await publicJwk(R)).n, kid: 'rsa-no-e' },
      ],
    };
    let now = 2_000_000;
    const c = new JwksCache({ url: s.url, timeoutMs: 2000, refreshIntervalSec: 3600, log, now: () => now });
    try {
      assert.equal(await c.prefetch(), true);
      assert.equal(c.size, 1);
      now += 5000;
      assert.equal(await c.lookup('rsa-no-e'), undefined);
      assert.equal(s.fetches, 2, 'the miss re-fetched');
      now += 5000;
      assert.equal(await c.lookup('oct'), undefined);
      assert.equal(s.fetches, 3, 'the miss re-fetched');
      assert.equal(c.size, 1);
    } finally {
      c.stop();
      await s.close();
    }
  });
  it('a stampede of 500 distinct unknown kids in one window is one fetch; a key published later is picked up with exactly one', async () => {
    const s = new JwksServer();
    await s.start();
    const A = rsaKeys();
    const N = rsaKeys();
    s.doc = { keys: [await publicJwk(A, 'a')] };
    let now = 3_000_000;
    const c = new JwksCache({ url: s.url, timeoutMs: 2000, refreshIntervalSec: 3600, log, now: () => now });
    try {
      assert.equal(await c.prefetch(), true);
      now += 5000; // the window is open: the first miss may fetch
      const kids = Array.from({ length: 500 }, () => randomBytes(8).toString('hex'));
      const found = await Promise.all(kids.map((k) => c.lookup(k)));
      assert.ok(found.every((k) => k === undefined));
      assert.equal(s.fetches, 2, 'one shared fetch for the whole stampede');
      now += 4999; // still inside the window the stampede opened
      assert.equal(await c.lookup(randomBytes(8).toString('hex')), undefined);
      assert.equal(s.fetches, 2, 'no fetch inside the window');
      // rotation: a new key is published; a token for it inside the window is not found ...
      s.doc = { keys: [await publicJwk(A, 'a'), await publicJwk(N, 'n')] };
      assert.equal(await c.lookup('n'), undefined);
      assert.equal(s.fetches, 2);
      // ... and once the window has passed, exactly one fetch picks it up; later lookups hit the cache
      now += 1;
      assert.equal((await c.lookup('n'))?.kid, 'n');
      assert.equal(s.fetches, 3);
      assert.equal((await c.lookup('n'))?.kid, 'n');
      assert.equal(s.fetches, 3);
    } finally {
      c.stop();
      await s.close();
    }
  });
  it('a failed pre-fetch does not start the throttle window; a failed fetch keeps the cache', async () => {
    const s = new JwksServer();
    await s.start();
    const A = rsaKeys();
    let up = false;
    const serve = s.responder;
    s.responder = (q, res) => {
      if (up) return serve(q, res);
      res.writeHead(503);
      res.end();
    };
    s.doc = { keys: [await publicJwk(A, 'a')] };
    let now = 5_000_000;
    const c = new JwksCache({ url: s.url, timeoutMs: 2000, refreshIntervalSec: 3600, log, now: () => now });
    try {
      assert.equal(await c.prefetch(), false);
      up = true;
      assert.equal((await c.lookup('a'))?.kid, 'a');
      assert.equal(s.fetches, 2);
      up = false;
      now += 6000;
      assert.equal(await c.lookup('zzz'), undefined);
      assert.equal(s.fetches, 3);
      assert.equal((await c.lookup('a'))?.kid, 'a');
    } finally {
      c.stop();
      await s.close();
    }
  });
});
