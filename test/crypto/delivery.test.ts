import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { plainCodec } from '../../src/model/codec.js';
import { EncryptingCodec } from '../../src/crypto/codec.js';
import { decodeForDelivery } from '../../src/crypto/delivery.js';
import { KeyRing } from '../../src/crypto/keyring.js';
import { RawJson } from '../../src/util/json.js';

function logSpy() {
  const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  return { lines, log: { error: (obj: Record<string, unknown>, msg: string) => void lines.push({ obj, msg }) } as never };
}

test('intact payloads are decrypted to their exact JSON text; clear payloads pass through', () => {
  const codec = new EncryptingCodec(new KeyRing(createSecretKey(randomBytes(32))));
  const { log, lines } = logSpy();
  const enc = codec.encode(true, '{"x":[1,2]}');
  assert.deepEqual(decodeForDelivery(codec, { id: 'm1', ...enc }, { queue: 'q', partition: 'p' }, log), { data: new RawJson('{"x":[1,2]}') });
  assert.deepEqual(decodeForDelivery(codec, { id: 'm2', payload: '"s"', encrypted: false }, { queue: 'q', partition: 'p' }, log), { data: new RawJson('"s"') });
  assert.equal(lines.length, 0);
});

test('a tampered payload is delivered as data:null with an error, logged with queue, partition and id, counted', () => {
  const codec = new EncryptingCodec(new KeyRing(createSecretKey(randomBytes(32))));
  const { log, lines } = logSpy();
  const enc = codec.encode(true, '{"secret":"DO-NOT-LEAK"}');
  const bad = Buffer.from(enc.payload as Buffer);
  bad[20]! ^= 0x40;
  const counter = { payloadIntegrityFailures: 0 };
  const d = decodeForDelivery(codec, { id: 'm9', payload: bad, encrypted: true }, { queue: 'orders', partition: 'eu', consumerGroup: 'g' }, log, counter);
  assert.deepEqual(d, { data: null, error: { code: 'payload_integrity_failed', error: 'cannot decrypt message m9' } });
  assert.equal(counter.payloadIntegrityFailures, 1);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!.msg, /cannot decrypt message m9 in queue orders partition eu/);
  assert.equal(lines[0]!.obj.queue, 'orders');
  assert.equal(lines[0]!.obj.partition, 'eu');
  assert.equal(lines[0]!.obj.messageId, 'm9');
  assert.ok(!JSON.stringify(lines).includes('DO-NOT-LEAK'));
});

test('an encrypted payload on a broker without a key is an integrity issue too', () => {
  const { log } = logSpy();
  const d = decodeForDelivery(plainCodec, { id: 'm3', payload: Buffer.alloc(40), encrypted: true }, { queue: 'q', partition: 'p' }, log);
  assert.equal(d.data, null);
  assert.equal(d.error?.code, 'payload_integrity_failed');
});
