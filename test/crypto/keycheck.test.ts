import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { ConfigError } from '../../src/config/env.js';
import { KCV_SETTING_PREFIX, RETIRED_PREFIX, checkDataDirectoryKeys, readRecordedKeys } from '../../src/crypto/keycheck.js';
import { KeyRing } from '../../src/crypto/keyring.js';

const key = () => createSecretKey(randomBytes(32));
const settingsOf = (...ring: KeyRing[]) => new Map(ring.map((r) => [KCV_SETTING_PREFIX + r.current.id, r.current.kcv]));
const apply = (settings: Map<string, string>, record: Array<[string, string]>) => {
  for (const [k, v] of record) settings.set(k, v);
  return settings;
};
const refused = (fn: () => unknown, ...res: RegExp[]) =>
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ConfigError, `ConfigError, got ${String(e)}`);
    for (const re of res) assert.match(e.message, re);
    return true;
  });

test('a fresh data directory records the current key check value; the next boot records nothing', () => {
  const ring = new KeyRing(key());
  const settings = new Map<string, string>();
  const r1 = checkDataDirectoryKeys({ ring, settings });
  assert.deepEqual(r1.record, [[KCV_SETTING_PREFIX + ring.current.id, ring.current.kcv]]);
  apply(settings, r1.record);
  assert.deepEqual(checkDataDirectoryKeys({ ring, settings }).record, []);
  assert.deepEqual(readRecordedKeys(settings), [{ id: ring.current.id, kcv: ring.current.kcv, retired: false }]);
});

test('no key and nothing recorded: boots, records nothing', () => {
  assert.deepEqual(checkDataDirectoryKeys({ ring: null, settings: new Map() }), { record: [], retired: [] });
});

test('changed key without the old one listed: refused, naming the old key id', () => {
  const old = new KeyRing(key());
  const now = new KeyRing(key());
  refused(() => checkDataDirectoryKeys({ ring: now, settings: settingsOf(old) }),
    /^QUEEN_ENCRYPTION_KEY does not match the key this data directory was encrypted with/,
    new RegExp(`payloads were written under key id ${old.current.id}`),
    new RegExp(`neither QUEEN_ENCRYPTION_KEY \\(key id ${now.current.id}\\) nor listed in QUEEN_ENCRYPTION_KEY_PREVIOUS`));
});

test('rotation: the old key listed as previous boots and records the new key', () => {
  const k1 = key();
  const old = new KeyRing(k1);
  const rotated = new KeyRing(key(), [k1]);
  const settings = settingsOf(old);
  const r = checkDataDirectoryKeys({ ring: rotated, settings });
  assert.deepEqual(r.record, [[KCV_SETTING_PREFIX + rotated.current.id, rotated.current.kcv]]);
  apply(settings, r.record);
  // dropping the old key again is refused (its payloads may still be stored)
  refused(() => checkDataDirectoryKeys({ ring: new KeyRing(rotated.current.key), settings }), new RegExp(old.current.id));
});

test('no key while encrypted payloads are recorded: refused, naming the key id', () => {
  const old = new KeyRing(key());
  refused(() => checkDataDirectoryKeys({ ring: null, settings: settingsOf(old) }),
    new RegExp(`^this data directory holds encrypted payloads but QUEEN_ENCRYPTION_KEY is not set \\(payloads were written under key id ${old.current.id}\\)$`));
});

test('several missing keys are all named', () => {
  const a = new KeyRing(key());
  const b = new KeyRing(key());
  refused(() => checkDataDirectoryKeys({ ring: null, settings: settingsOf(a, b) }), /key ids /, new RegExp(a.current.id), new RegExp(b.current.id));
});

test('the scan decides: a missing key still named by stored envelopes is required', () => {
  const old = new KeyRing(key());
  const now = new KeyRing(key());
  let calls = 0;
  refused(() => checkDataDirectoryKeys({
    ring: now, settings: settingsOf(old), findKeyIdsInUse: () => { calls++; return new Set([old.current.id, now.current.id]); },
  }), new RegExp(old.current.id));
  assert.equal(calls, 1);
});

test('the scan decides: a missing key no stored envelope uses is retired, and stays retired', () => {
  const old = new KeyRing(key());
  const now = new KeyRing(key());
  const settings = settingsOf(old);
  const r = checkDataDirectoryKeys({ ring: now, settings, findKeyIdsInUse: () => new Set() });
  assert.deepEqual(r.retired, [old.current.id]);
  assert.deepEqual(new Map(r.record), new Map([
    [KCV_SETTING_PREFIX + old.current.id, RETIRED_PREFIX + old.current.kcv],
    [KCV_SETTING_PREFIX + now.current.id, now.current.kcv],
  ]));
  apply(settings, r.record);
  const r2 = checkDataDirectoryKeys({ ring: now, settings, findKeyIdsInUse: () => assert.fail('no scan when nothing is missing') });
  assert.deepEqual(r2, { record: [], retired: [] });
  // also without any key at all
  const noKey = new Map(settings);
  noKey.set(KCV_SETTING_PREFIX + now.current.id, RETIRED_PREFIX + now.current.kcv);
  assert.deepEqual(checkDataDirectoryKeys({ ring: null, settings: noKey }), { record: [], retired: [] });
  // a retired key that becomes current again is recorded active again
  const back = checkDataDirectoryKeys({ ring: new KeyRing(old.current.key, [now.current.key]), settings });
  assert.deepEqual(back.record, [[KCV_SETTING_PREFIX + old.current.id, old.current.kcv]]);
});

test('the scan finding an unrecorded key id that the ring lacks is refused too', () => {
  const old = new KeyRing(key());
  const now = new KeyRing(key());
  refused(() => checkDataDirectoryKeys({ ring: now, settings: settingsOf(old), findKeyIdsInUse: () => new Set(['0badf00d']) }), /key id 0badf00d/);
});

test('a configured key with a recorded id but another key-check value is refused', () => {
  const ring = new KeyRing(key());
  const forged = ring.current.id + 'f'.repeat(56);
  assert.notEqual(forged, ring.current.kcv);
  const settings = new Map([[KCV_SETTING_PREFIX + ring.current.id, forged]]);
  refused(() => checkDataDirectoryKeys({ ring, settings }), /does not match the key this data directory was encrypted with/, new RegExp(`key id ${ring.current.id}`));
  // the same for a previous key
  const cur = new KeyRing(key(), [ring.current.key]);
  refused(() => checkDataDirectoryKeys({ ring: cur, settings }), /the key in QUEEN_ENCRYPTION_KEY_PREVIOUS has key id/);
});

test('unrelated and malformed settings are ignored', () => {
  const settings = new Map([
    ['something.else', 'x'],
    [KCV_SETTING_PREFIX + 'XYZ', 'a'.repeat(64)],
    [KCV_SETTING_PREFIX + '12345678', 'not-a-kcv'],
    [KCV_SETTING_PREFIX + '12345678', 'a'.repeat(64)], // id does not match the kcv prefix
  ]);
  assert.deepEqual(readRecordedKeys(settings), []);
  assert.deepEqual(checkDataDirectoryKeys({ ring: null, settings }), { record: [], retired: [] });
});
