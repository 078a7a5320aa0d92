/**
 * Every boolean environment variable refuses a value outside its accepted forms at boot, and the
 * fatal message lists every form the parser accepts. The variables are found by reading the
 * compiled config readers (every `bool(env, 'NAME', …)` call), so a new boolean variable is
 * covered without editing this test.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { bool, ConfigError } from '../../src/config/env.js';
import { runBrokerExpectingExit } from '../helpers/broker.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const srcDir = path.resolve(here, '../../src');

function booleanVariables(): string[] {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) {
        for (const m of fs.readFileSync(p, 'utf8').matchAll(/\bbool\(env, '([A-Z0-9_]+)'/g)) names.add(m[1]!);
      }
    }
  };
  walk(srcDir);
  return [...names].sort();
}

const FORMS = '(expected true/false, 1/0, yes/no, on/off)';

describe('boolean environment variables', () => {
  const vars = booleanVariables();
  it('are found in the config readers', () => {
    assert.ok(vars.includes('JWT_ENABLED') && vars.includes('JWT_REQUIRE_EXP'), vars.join(','));
  });
  for (const name of vars) {
    it(`${name}=maybe stops the boot listing every accepted form`, async () => {
      // JWT variables are read only with JWT on: turn it on so each is actually parsed.
      const env: Record<string, string> = { JWT_ENABLED: 'true', JWT_SECRET: 's', [name]: 'maybe' };
      const r = await runBrokerExpectingExit(env);
      assert.notEqual(r.code, 0, r.output);
      assert.ok(r.output.includes(`fatal: ${name}="maybe" is not a boolean ${FORMS}`), r.output);
    });
  }
  it('the parser accepts exactly those forms, case-insensitively', () => {
    for (const [v, want] of [['true', true], ['1', true], ['YES', true], ['On', true], ['false', false], ['0', false], ['No', false], ['OFF', false]] as const) {
      assert.equal(bool({ X: v }, 'X', !want), want, v);
    }
    for (const v of ['maybe', 't', 'y', '2', 'enabled', 'truefalse']) {
      assert.throws(() => bool({ X: v }, 'X', false), (e: unknown) => e instanceof ConfigError && e.message.endsWith(FORMS), v);
    }
  });
});
