import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { KeyRing, keyCheckValue, keyIdOfKcv } from '../../src/crypto/keyring.js';

test('key id and key-check value: HMAC-derived, stable, short, never the key', () => {
  const raw = randomBytes(32);
  const k = createSecretKey(raw);
  const kcv = keyCheckValue(k);
  assert.match(kcv, /^[0-9a-f]{64}$/);
  assert.equal(kcv, createHmac('sha256', raw).update('queen-ts key check v1').digest('hex'));
  assert.equal(keyCheckValue(createSecretKey(Buffer.from(raw))), kcv);
  assert.notEqual(kcv, raw.toString('hex'));
  const ring = new KeyRing(k);
  assert.equal(ring.current.id, keyIdOfKcv(kcv));
  assert.match(ring.current.id, /^[0-9a-f]{8}$/);
  assert.equal(ring.current.idNum, Number.parseInt(ring.current.id, 16));
  assert.ok(!inspect(ring, { depth: 10 }).includes(raw.toString('hex')));
});

test('ring lookup by id; previous keys deduplicated, current listed again is ignored', () => {
  const a = createSecretKey(randomBytes(32));
  const b = createSecretKey(randomBytes(32));
  const ring = new KeyRing(a, [b, a, createSecretKey(b.export())]);
  assert.equal(ring.previous.length, 1);
  assert.equal(ring.all().length, 2);
  assert.equal(ring.get(ring.current.id), ring.current);
  assert.equal(ring.get(ring.previous[0]!.id), ring.previous[0]);
  assert.equal(ring.byIdNum(ring.previous[0]!.idNum), ring.previous[0]);
  assert.equal(ring.get('00000000') === undefined || ring.get('00000000')!.id === '00000000', true);
  assert.equal(ring.get('not-an-id'), undefined);
  assert.equal(KeyRing.fromConfig({ key: null, previous: [] }), null);
});
