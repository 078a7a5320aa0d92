import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { plainCodec } from '../../src/model/codec.js';
import { EncryptingCodec, PayloadIntegrityError, createPayloadCodec } from '../../src/crypto/codec.js';
import { envelopeKeyId, seal } from '../../src/crypto/envelope.js';
import { KeyRing } from '../../src/crypto/keyring.js';
import { QueenError } from '../../src/errors.js';

const key = () => createSecretKey(randomBytes(32));
const JSON_TEXT = JSON.stringify({ card: '4111-DISTINCTIVE-PLAINTEXT' });

test('plain queues pass through; encrypted queues get an envelope that decodes back', () => {
  const codec = new EncryptingCodec(new KeyRing(key()));
  assert.equal(codec.canEncrypt, true);
  assert.deepEqual(codec.encode(false, JSON_TEXT), { payload: JSON_TEXT, encrypted: false });
  const enc = codec.encode(true, JSON_TEXT);
  assert.equal(enc.encrypted, true);
  assert.ok(Buffer.isBuffer(enc.payload));
  assert.ok(!(enc.payload as Buffer).includes('DISTINCTIVE'));
  assert.equal(codec.decode(enc.payload, true), JSON_TEXT);
  assert.equal(codec.decode(JSON_TEXT, false), JSON_TEXT);
  assert.equal(codec.decode(Buffer.from(JSON_TEXT), false), JSON_TEXT);
});

test('no envelope sniffing: a payload stored in clear is never decrypted, even if it is an envelope', () => {
  const ring = new KeyRing(key());
  const codec = new EncryptingCodec(ring);
  const env = seal(ring.current, JSON_TEXT);
  assert.notEqual(codec.decode(env, false), JSON_TEXT);
  assert.equal(codec.decode(env, false), env.toString('utf8'));
});

test('tampered envelopes throw PayloadIntegrityError and are counted', () => {
  const codec = new EncryptingCodec(new KeyRing(key()));
  const enc = codec.encode(true, JSON_TEXT).payload as Buffer;
  const t = Buffer.from(enc);
  t[t.length - 20]! ^= 1;
  assert.throws(() => codec.decode(t, true), PayloadIntegrityError);
  assert.throws(() => codec.decode(JSON_TEXT, true), PayloadIntegrityError);
  assert.equal(codec.integrityFailures, 2);
});

test('rotation: the old key as previous reads old envelopes; writes use the new key id', () => {
  const k1 = key();
  const k2 = key();
  const old = new EncryptingCodec(new KeyRing(k1));
  const e1 = old.encode(true, '{"v":1}').payload;
  const rotated = new EncryptingCodec(new KeyRing(k2, [k1]));
  assert.equal(rotated.decode(e1, true), '{"v":1}');
  const e2 = rotated.encode(true, '{"v":2}').payload;
  assert.equal(envelopeKeyId(e2), rotated.ring.current.id);
  assert.notEqual(envelopeKeyId(e2), envelopeKeyId(e1));
  assert.equal(envelopeKeyId(e1), old.ring.current.id);
  // the new key alone cannot read the old envelope, and says which key is missing
  const newOnly = new EncryptingCodec(new KeyRing(k2));
  assert.throws(() => newOnly.decode(e1, true), new RegExp(`key id ${old.ring.current.id}`));
  // the old key cannot read what the new one wrote
  assert.throws(() => old.decode(e2, true), PayloadIntegrityError);
});

test('without a key: flagged queues are refused with 503 naming the variable, clear queues work', () => {
  const codec = createPayloadCodec({ key: null, previous: [] });
  assert.equal(codec, plainCodec);
  assert.equal(codec.canEncrypt, false);
  assert.throws(() => codec.encode(true, JSON_TEXT), (e: unknown) => {
    assert.ok(e instanceof QueenError);
    assert.equal(e.code, 'encryption_unavailable');
    assert.equal(e.status, 503);
    assert.match(e.message, /QUEEN_ENCRYPTION_KEY/);
    return true;
  });
  assert.deepEqual(codec.encode(false, JSON_TEXT), { payload: JSON_TEXT, encrypted: false });
  assert.throws(() => codec.decode(Buffer.alloc(40), true), PayloadIntegrityError);
});

test('createPayloadCodec with a key gives an encrypting codec', () => {
  const codec = createPayloadCodec({ key: key(), previous: [] });
  assert.ok(codec instanceof EncryptingCodec);
});
