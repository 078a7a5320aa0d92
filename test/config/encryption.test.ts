import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { loadEncryptionConfig } from '../../src/config/encryption.js';
import { ConfigError } from '../../src/config/env.js';

const K1 = 'a'.repeat(64);
const K2 = '0123456789ABCDEF'.repeat(4);

function fails(env: Record<string, string>, re: RegExp, secret?: string): void {
  assert.throws(() => loadEncryptionConfig(env), (e: unknown) => {
    assert.ok(e instanceof ConfigError, 'ConfigError');
    assert.match(e.message, re);
    if (secret) assert.ok(!e.message.includes(secret), 'the value is never echoed');
    return true;
  });
}

test('unset or empty key: encryption off', () => {
  assert.deepEqual(loadEncryptionConfig({}), { key: null, previous: [] });
  assert.deepEqual(loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: '' }), { key: null, previous: [] });
  assert.deepEqual(loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: '  ' }), { key: null, previous: [] });
});

test('a 64-hex key (either case) loads as a 32-byte secret that does not print', () => {
  for (const k of [K1, K2, K2.toLowerCase(), `  ${K1}\n`]) {
    const cfg = loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: k });
    assert.equal(cfg.key?.symmetricKeySize, 32);
    assert.equal(cfg.key?.export().toString('hex'), k.trim().toLowerCase());
    const shown = inspect(cfg, { depth: 10 }) + JSON.stringify(cfg);
    assert.ok(!shown.toLowerCase().includes(k.trim().toLowerCase()), 'key material never printed');
  }
});

test('malformed current key is fatal, names the variable and the format, never the value', () => {
  const short = 'b'.repeat(63);
  fails({ QUEEN_ENCRYPTION_KEY: short }, /^QUEEN_ENCRYPTION_KEY must be 64 hex characters \(32 bytes\); got 63 characters$/, short);
  fails({ QUEEN_ENCRYPTION_KEY: 'c'.repeat(65) }, /got 65 characters/);
  fails({ QUEEN_ENCRYPTION_KEY: 'secret' }, /QUEEN_ENCRYPTION_KEY must be 64 hex/, 'secret');
  const nonHex = 'g'.repeat(64);
  fails({ QUEEN_ENCRYPTION_KEY: nonHex }, /^QUEEN_ENCRYPTION_KEY is not valid hex/, nonHex);
  fails({ QUEEN_ENCRYPTION_KEY: 'a'.repeat(62) + ' a' }, /QUEEN_ENCRYPTION_KEY is not valid hex/);
  // base64 of 32 bytes (44 chars) is a classic mistake
  fails({ QUEEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }, /got 44 characters/);
});

test('previous keys: comma-separated, whitespace and empty entries ignored, order kept', () => {
  const cfg = loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: K1, QUEEN_ENCRYPTION_KEY_PREVIOUS: ` ${K2} ,, ${'1'.repeat(64)},` });
  assert.equal(cfg.previous.length, 2);
  assert.equal(cfg.previous[0]!.export().toString('hex'), K2.toLowerCase());
  assert.equal(cfg.previous[1]!.export().toString('hex'), '1'.repeat(64));
  assert.equal(loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: K1, QUEEN_ENCRYPTION_KEY_PREVIOUS: '' }).previous.length, 0);
});

test('malformed previous key is fatal and names the entry', () => {
  fails({ QUEEN_ENCRYPTION_KEY: K1, QUEEN_ENCRYPTION_KEY_PREVIOUS: 'abc' }, /^QUEEN_ENCRYPTION_KEY_PREVIOUS must be 64 hex characters \(32 bytes\); got 3 characters$/);
  fails({ QUEEN_ENCRYPTION_KEY: K1, QUEEN_ENCRYPTION_KEY_PREVIOUS: `${K2},${'z'.repeat(64)}` }, /^QUEEN_ENCRYPTION_KEY_PREVIOUS entry 2 is not valid hex/, 'z'.repeat(64));
});

test('previous keys without a current key are refused', () => {
  fails({ QUEEN_ENCRYPTION_KEY_PREVIOUS: K2 }, /QUEEN_ENCRYPTION_KEY_PREVIOUS is set but QUEEN_ENCRYPTION_KEY is not/);
});
