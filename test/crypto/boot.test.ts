import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { plainCodec } from '../../src/model/codec.js';
import { loadEncryptionConfig } from '../../src/config/encryption.js';
import { ConfigError } from '../../src/config/env.js';
import { BOOT_LINE, DISABLED_LINE, initEncryption, scanKeyIds } from '../../src/crypto/boot.js';
import { EncryptingCodec } from '../../src/crypto/codec.js';
import { seal } from '../../src/crypto/envelope.js';
import { KCV_SETTING_PREFIX, RETIRED_PREFIX } from '../../src/crypto/keycheck.js';
import { KeyRing } from '../../src/crypto/keyring.js';
import type { DlqRow, MessageRow, Store, StoreTx } from '../../src/storage/store.js';

const hexKey = () => randomBytes(32).toString('hex');

/** A store fake with just what boot uses: snapshot, run/setSetting, readMessages, listDlq, timers (none). */
function fakeStore(parts: Map<number, MessageRow[]>, dlq: DlqRow[] = [], settings = new Map<string, string>()) {
  let reads = 0;
  const store = {
    loadSnapshot: () => ({
      queues: [], cursors: [], subscriptions: [], settings: new Map(settings),
      partitions: [...parts.keys()].map((pk) => ({ pk, id: `p${pk}`, queuePk: 1, name: `p${pk}`, headOffset: parts.get(pk)!.length, firstOffset: 0, lastMessageAt: null, createdAt: 0 })),
    }),
    run: async <T>(work: (tx: StoreTx) => T) => work({ setSetting: (k: string, v: string) => void settings.set(k, v) } as unknown as StoreTx),
    readMessages: (pk: number, from: number, limit: number) => { reads++; return (parts.get(pk) ?? []).filter((m) => m.offset >= from).slice(0, limit); },
    listDlq: (f: { limit: number; offset: number }) => dlq.slice(f.offset, f.offset + f.limit),
    timers: { scanTimers: () => [] },
  };
  return { store: store as unknown as Store, settings, reads: () => reads };
}

const msg = (offset: number, payload: string | Buffer, encrypted: boolean): MessageRow => ({
  partitionPk: 1, offset, id: `m${offset}`, transactionId: `t${offset}`, payload, encrypted, traceId: null, producerSub: null, createdAt: 0,
});

function captureLog() {
  const chunks: string[] = [];
  const log = pino({ level: 'info' }, new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } }));
  return { log, text: () => chunks.join('') };
}

test('with a key: boot line with the key id, key-check value recorded, no key material logged', async () => {
  const k = hexKey();
  const prev = hexKey();
  const config = loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: k, QUEEN_ENCRYPTION_KEY_PREVIOUS: prev });
  const { store, settings } = fakeStore(new Map());
  const { log, text } = captureLog();
  const codec = await initEncryption({ config, store, log });
  assert.ok(codec instanceof EncryptingCodec);
  const id = codec.ring.current.id;
  assert.equal(settings.get(KCV_SETTING_PREFIX + id), codec.ring.current.kcv);
  const line = JSON.parse(text().trim().split('\n').at(-1)!);
  assert.equal(line.msg, BOOT_LINE);
  assert.equal(line.msg, 'encryption service initialized (AES-256-GCM)');
  assert.equal(line.keyId, id);
  assert.deepEqual(line.previousKeyIds, [codec.ring.previous[0]!.id]);
  for (const secret of [k, prev, Buffer.from(k, 'hex').toString('base64')]) assert.ok(!text().includes(secret));
});

test('without a key: the plain codec and the disabled line', async () => {
  const { store, settings } = fakeStore(new Map());
  const { log, text } = captureLog();
  const codec = await initEncryption({ config: loadEncryptionConfig({}), store, log });
  assert.equal(codec, plainCodec);
  assert.equal(settings.size, 0);
  assert.match(text(), new RegExp(DISABLED_LINE.replace(/[()]/g, '\\$&')));
});

test('changed key with encrypted payloads stored: boot refused, naming the old key id', async () => {
  const old = loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: hexKey() });
  const oldRing = KeyRing.fromConfig(old)!;
  const parts = new Map([[1, [msg(0, '{"a":1}', false), msg(1, seal(oldRing.current, '{"s":1}'), true)]]]);
  const { store, settings } = fakeStore(parts);
  await initEncryption({ config: old, store, log: captureLog().log });
  await assert.rejects(initEncryption({ config: loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: hexKey() }), store, log: captureLog().log }),
    (e: unknown) => e instanceof ConfigError && e.message.includes(`key id ${oldRing.current.id}`));
  await assert.rejects(initEncryption({ config: loadEncryptionConfig({}), store, log: captureLog().log }),
    (e: unknown) => e instanceof ConfigError && /holds encrypted payloads but QUEEN_ENCRYPTION_KEY is not set/.test(e.message));
  assert.equal(settings.size, 1, 'a refused boot records nothing');
});

test('changed key, and the old key no longer used by any stored payload: boots, the old key id is retired', async () => {
  const old = loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: hexKey() });
  const oldId = KeyRing.fromConfig(old)!.current.id;
  const { store, settings } = fakeStore(new Map([[1, [msg(0, '{"plain":true}', false)]]]));
  await initEncryption({ config: old, store, log: captureLog().log });
  const { log, text } = captureLog();
  const codec = await initEncryption({ config: loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: hexKey() }), store, log });
  assert.ok(codec instanceof EncryptingCodec);
  assert.ok(settings.get(KCV_SETTING_PREFIX + oldId)!.startsWith(RETIRED_PREFIX));
  assert.match(text(), new RegExp(`encryption key id ${oldId} retired`));
});

test('a dead letter under the old key keeps that key required', async () => {
  const old = loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: hexKey() });
  const ring = KeyRing.fromConfig(old)!;
  const dl = { ...msg(0, seal(ring.current, '{}'), true), messageId: 'm0' } as unknown as DlqRow;
  const { store } = fakeStore(new Map(), [dl]);
  await initEncryption({ config: old, store, log: captureLog().log });
  await assert.rejects(initEncryption({ config: loadEncryptionConfig({ QUEEN_ENCRYPTION_KEY: hexKey() }), store, log: captureLog().log }),
    new RegExp(ring.current.id));
});

test('scanKeyIds pages through partitions and dead letters', () => {
  const a = new KeyRing(createSecretKey(randomBytes(32)));
  const b = new KeyRing(createSecretKey(randomBytes(32)));
  const rows: MessageRow[] = [];
  for (let i = 0; i < 1500; i++) rows.push(msg(i, i === 1400 ? seal(b.current, '{}') : i % 2 ? seal(a.current, '{}') : '{}', i % 2 === 1 || i === 1400));
  rows.push(msg(1500, Buffer.from('garbage'), true));
  const dl = Array.from({ length: 700 }, (_, i) => ({ payload: '{}', encrypted: false, i }) as unknown as DlqRow);
  const c = new KeyRing(createSecretKey(randomBytes(32)));
  dl.push({ payload: seal(c.current, '{}'), encrypted: true } as unknown as DlqRow);
  const { store, reads } = fakeStore(new Map([[1, rows]]), dl);
  const snap = store.loadSnapshot();
  assert.deepEqual([...scanKeyIds(store, snap.partitions)].sort(), [a.current.id, b.current.id, c.current.id].sort());
  assert.equal(reads(), 3);
});
