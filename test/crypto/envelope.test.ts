import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { PayloadIntegrityError } from '../../src/crypto/codec.js';
import { ENVELOPE_OVERHEAD, HEADER_BYTES, NONCE_BYTES, TAG_BYTES, envelopeKeyId, open, seal } from '../../src/crypto/envelope.js';
import { KeyRing } from '../../src/crypto/keyring.js';

const key = () => createSecretKey(randomBytes(32));
const ring = new KeyRing(key());
const JSON_TEXT = JSON.stringify({ secret: 'TOP-SECRET-PLAINTEXT-4242', n: 1, s: 'ünïcødé ✓ 🐝' });

const integrity = (fn: () => unknown, re?: RegExp) =>
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof PayloadIntegrityError, `PayloadIntegrityError, got ${String(e)}`);
    if (re) assert.match(e.message, re);
    return true;
  });

test('round trip: small, unicode, empty and 1 MiB payloads', () => {
  const big = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) });
  for (const text of [JSON_TEXT, '', '"a"', big]) assert.equal(open(ring, seal(ring.current, text)), text);
});

test('layout: version 1, the key id, a 12-byte nonce, ciphertext as long as the plaintext, a 16-byte tag', () => {
  const env = seal(ring.current, JSON_TEXT);
  assert.equal(env[0], 1);
  assert.equal(env.toString('hex', 1, HEADER_BYTES), ring.current.id);
  assert.equal(envelopeKeyId(env), ring.current.id);
  assert.equal(env.length, ENVELOPE_OVERHEAD + Buffer.byteLength(JSON_TEXT));
  assert.equal(ENVELOPE_OVERHEAD, 5 + 12 + 16);
  assert.ok(!env.includes('TOP-SECRET'), 'plaintext absent from the envelope');
});

test('a fresh nonce per payload: same plaintext never gives the same bytes', () => {
  const nonces = new Set<string>();
  const bodies = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const env = seal(ring.current, JSON_TEXT);
    nonces.add(env.toString('hex', HEADER_BYTES, HEADER_BYTES + NONCE_BYTES));
    bodies.add(env.toString('hex'));
  }
  assert.equal(nonces.size, 2000);
  assert.equal(bodies.size, 2000);
});

test('tamper detection: flipping any single bit of any byte (header, nonce, ciphertext, tag) is detected', () => {
  const env = seal(ring.current, JSON_TEXT);
  for (let i = 0; i < env.length; i++) {
    for (const bit of [0x01, 0x80]) {
      const t = Buffer.from(env);
      t[i]! ^= bit;
      integrity(() => open(ring, t));
    }
  }
  // sanity: the untouched copy still opens
  assert.equal(open(ring, env), JSON_TEXT);
});

test('tampering named by region gives the integrity error, never plaintext', () => {
  const env = seal(ring.current, JSON_TEXT);
  const flip = (i: number) => { const t = Buffer.from(env); t[i]! ^= 0xff; return t; };
  integrity(() => open(ring, flip(HEADER_BYTES + 3)), /failed authentication/); // nonce
  integrity(() => open(ring, flip(HEADER_BYTES + NONCE_BYTES + 5)), /failed authentication/); // ciphertext
  integrity(() => open(ring, flip(env.length - 1)), /failed authentication/); // tag
  integrity(() => open(ring, flip(0)), /unknown envelope version/); // version
  integrity(() => open(ring, flip(2)), /not loaded/); // key id
});

test('truncated, extended and non-envelope payloads are refused', () => {
  const env = seal(ring.current, JSON_TEXT);
  integrity(() => open(ring, env.subarray(0, env.length - 1)));
  integrity(() => open(ring, env.subarray(0, ENVELOPE_OVERHEAD - 1)), /truncated/);
  integrity(() => open(ring, Buffer.concat([env, Buffer.from([0])])));
  integrity(() => open(ring, JSON_TEXT), /not an envelope/);
  integrity(() => open(ring, Buffer.alloc(0)), /truncated/);
  // the tag of another envelope does not fit this one
  const other = seal(ring.current, JSON_TEXT);
  const spliced = Buffer.concat([env.subarray(0, env.length - TAG_BYTES), other.subarray(other.length - TAG_BYTES)]);
  integrity(() => open(ring, spliced));
  assert.equal(envelopeKeyId(JSON_TEXT), undefined);
  assert.equal(envelopeKeyId(Buffer.alloc(10)), undefined);
});

test('an envelope written under a key the ring lacks names the key id, not the key', () => {
  const k = key();
  const other = new KeyRing(k);
  const env = seal(other.current, JSON_TEXT);
  integrity(() => open(ring, env), new RegExp(`key id ${other.current.id}, which is not loaded`));
  try { open(ring, env); } catch (e) {
    assert.ok(!(e as Error).message.includes(k.export().toString('hex')));
  }
});
