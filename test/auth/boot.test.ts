/**
 * Fatal JWT boot validation (docs/configuration.md#jwt): the real process, started with each bad configuration,
 * exits non-zero naming the problem, before any port is bound (the test holds the port it hands
 * the broker, so a broker that got as far as binding would report a bind error instead).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runUntilExit } from '../helpers/jwt.js';

const SET = 'use HS256, HS384, HS512, RS256, RS384, RS512, EdDSA, or auto';
const cases: [string, Record<string, string>, string][] = [
  ...['hs256', 'EDDSA', 'ES256', 'none', '', 'Auto'].map((alg): [string, Record<string, string>, string] => [
    `JWT_ALGORITHM=${JSON.stringify(alg)} outside the set`,
    { JWT_ENABLED: 'true', JWT_ALGORITHM: alg, JWT_SECRET: 's' },
    `invalid JWT auth configuration: JWT_ALGORITHM=${alg} is not supported (${SET})`,
  ]),
  ...['HS256', 'HS384', 'HS512', 'auto'].map((alg): [string, Record<string, string>, string] => [
    `${alg} with none of JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URL`,
    { JWT_ENABLED: 'true', JWT_ALGORITHM: alg },
    `invalid JWT auth configuration: JWT_ENABLED=true with JWT_ALGORITHM=${alg} but no key material: set JWT_SECRET (HS256/HS384/HS512), or JWT_PUBLIC_KEY / JWT_JWKS_URL (RS256/EdDSA)`,
  ]),
  ...['RS256', 'RS384', 'RS512', 'EdDSA'].map((alg): [string, Record<string, string>, string] => [
    `${alg} with neither JWT_PUBLIC_KEY nor JWT_JWKS_URL`,
    { JWT_ENABLED: 'true', JWT_ALGORITHM: alg, JWT_SECRET: 'only-a-secret' },
    `invalid JWT auth configuration: JWT_ENABLED=true with JWT_ALGORITHM=${alg} but neither JWT_PUBLIC_KEY nor JWT_JWKS_URL is set`,
  ]),
  ['JWT_ENABLED not a boolean', { JWT_ENABLED: 'maybe', JWT_SECRET: 's' }, 'JWT_ENABLED="maybe" is not a boolean'],
];

describe('boot validation is fatal, before the listener binds', () => {
  for (const [why, env, message] of cases) {
    it(why, async () => {
      const r = await runUntilExit(env);
      assert.notEqual(r.code, 0, r.output);
      assert.equal(r.signal, null, r.output);
      assert.ok(r.output.includes(message), `expected ${JSON.stringify(message)} in:\n${r.output}`);
      assert.equal(r.portTouched, false, r.output);
      assert.ok(!r.output.includes('only-a-secret'), 'the secret leaked into the output');
    });
  }
});
