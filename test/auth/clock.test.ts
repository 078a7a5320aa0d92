/**
 * JWT time claims judged at an injected clock (a test clock here, the broker's clock in
 * production): `exp` and `nbf` with JWT_CLOCK_SKEW, to the second, without sleeping.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { loadKeyMaterial } from '../../src/auth/keys.js';
import { createAuthenticator, type Authenticator } from '../../src/auth/verifier.js';
import { loadJwtConfig } from '../../src/config/jwt.js';
import { isQueenError } from '../../src/errors.js';
import { TestClock } from '../../src/util/clock.js';
import { hsKey, mint } from '../helpers/jwt.js';

const SECRET = 'clock-test-secret';
const SKEW = 30;

async function setup(): Promise<{ auth: Authenticator; clock: TestClock; start: number }> {
  const cfg = loadJwtConfig({ JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET, JWT_CLOCK_SKEW: String(SKEW) });
  const keys = await loadKeyMaterial(cfg, undefined, pino({ level: 'silent' }));
  const clock = new TestClock(Date.UTC(2031, 5, 1));
  return { auth: createAuthenticator(cfg, keys, clock), clock, start: clock.now() / 1000 };
}

/** The refusal code for `token` on a read-write route, or 'ok'. */
async function verdict(auth: Authenticator, token: string): Promise<string> {
  try {
    await auth.authenticate('GET', '/api/v1/resources/queues', `Bearer ${token}`);
    return 'ok';
  } catch (e) {
    if (!isQueenError(e)) throw e;
    return e.code;
  }
}

describe('JWT time claims on an injected clock', () => {
  test('exp: accepted until exp + skew, refused one second later', async () => {
    const { auth, clock, start } = await setup();
    const token = await mint('HS256', hsKey(SECRET), { sub: 'w', role: 'admin', iat: start, exp: start + 60 });
    assert.equal(await verdict(auth, token), 'ok');
    clock.set((start + 60 + SKEW) * 1000);
    assert.equal(await verdict(auth, token), 'ok', 'exactly exp + skew');
    clock.advance(1000);
    assert.equal(await verdict(auth, token), 'token_expired');
  });

  test('nbf: refused while now + skew < nbf, accepted from nbf − skew', async () => {
    const { auth, clock, start } = await setup();
    const token = await mint('HS256', hsKey(SECRET), { sub: 'w', role: 'admin', nbf: start + 100 });
    assert.equal(await verdict(auth, token), 'token_not_yet_valid');
    clock.set((start + 100 - SKEW - 1) * 1000);
    assert.equal(await verdict(auth, token), 'token_not_yet_valid', 'one second too early');
    clock.advance(1000);
    assert.equal(await verdict(auth, token), 'ok');
  });

  test('iat in the future beyond the skew is refused at the injected clock', async () => {
    const { auth, clock, start } = await setup();
    const token = await mint('HS256', hsKey(SECRET), { sub: 'w', role: 'admin', iat: start + SKEW + 1 });
    assert.equal(await verdict(auth, token), 'token_issued_in_future');
    clock.advance(1000);
    assert.equal(await verdict(auth, token), 'ok');
  });
  test('a token accepted once (its signature cached) is refused once past exp + skew, while the cache entry is still live', async () => {
    // The verified-signature cache keeps a verification for 60 s; exp + skew falls at 41 s, so the
    // refusal below is judged on the cached signature result: the cache never extends a token.
    const { auth, clock, start } = await setup();
    const token = await mint('HS256', hsKey(SECRET), { sub: 'w', role: 'read-write', exp: start + 11 });
    assert.equal(await verdict(auth, token), 'ok');
    clock.set((start + 11 + SKEW) * 1000);
    assert.equal(await verdict(auth, token), 'ok', 'exactly exp + skew, from the cache');
    clock.advance(1000);
    assert.equal(await verdict(auth, token), 'token_expired');
  });
});
