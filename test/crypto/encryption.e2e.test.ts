/**
 * Encryption at rest, black box: a real broker process over real HTTP, its data directory read
 * byte for byte while it runs and after it stops (docs/security.md#encryption-at-rest).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { KeyRing } from '../../src/crypto/keyring.js';
import { runBrokerExpectingExit, startBroker, tempDir } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

const hexKey = () => randomBytes(32).toString('hex');
const keyId = (hex: string) => new KeyRing(createSecretKey(Buffer.from(hex, 'hex'))).current.id;
const marker = (tag: string) => `${tag}-${randomBytes(8).toString('hex')}`;

/** Every regular file under `dir`, recursively, with its bytes. */
function filesOf(dir: string): Array<{ file: string; bytes: Buffer; mode: number }> {
  const out: Array<{ file: string; bytes: Buffer; mode: number }> = [];
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) out.push(...filesOf(p));
    else if (ent.isFile()) out.push({ file: p, bytes: fs.readFileSync(p), mode: fs.statSync(p).mode & 0o777 });
  }
  return out;
}

function assertAtRest(dir: string, hidden: string[], visible: string[]): string[] {
  const files = filesOf(dir);
  assert.ok(files.length > 0);
  for (const h of hidden) {
    for (const f of files) assert.equal(f.bytes.includes(h), false, `${h} found in clear in ${f.file}`);
  }
  for (const v of visible) assert.ok(files.some((f) => f.bytes.includes(v)), `${v} (plain queue) should be stored in clear`);
  return files.map((f) => path.basename(f.file));
}

/** Stored rows of a queue, read with the broker stopped. */
function storedRows(dataDir: string, queue: string): Array<{ payload: Buffer | string; encrypted: number; id: string }> {
  const db = new Database(path.join(dataDir, 'queen.db'), { readonly: true });
  try {
    return db.prepare('SELECT m.payload, m.encrypted, m.id FROM messages m JOIN queues q ON q.pk = m.queue_pk WHERE q.name = ? ORDER BY m.offset').all(queue) as never;
  } finally {
    db.close();
  }
}

async function configure(url: string, queue: string, encryptionEnabled: boolean) {
  return call(url, 'POST', '/api/v1/configure', { queue, options: { encryptionEnabled } });
}

async function push(url: string, queue: string, payloads: unknown[]) {
  return call(url, 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue, payload })) });
}

async function popAll(url: string, queue: string) {
  return call(url, 'GET', `/api/v1/pop/queue/${queue}?batch=100&wait=false`);
}

test('encrypted payloads never reach the disk in clear (db and WAL), plain ones do; all pop back after a restart', async () => {
  const key = hexKey();
  const encQ = uniqueName('enc');
  const plainQ = uniqueName('plain');
  const ENC = marker('ENCRYPTED-SECRET');
  const TXN = marker('TXN-SECRET');
  const PLAIN = marker('PLAIN-VISIBLE');
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key, LOG_LEVEL: 'info' } });
  try {
    assert.match(b.output(), /"msg":"encryption service initialized \(AES-256-GCM\)"/);
    assert.ok(b.output().includes(`"keyId":"${keyId(key)}"`));
    assert.equal((await configure(b.url, encQ, true)).status, 200);
    assert.equal((await configure(b.url, plainQ, false)).status, 200);
    assert.equal((await push(b.url, encQ, [{ secret: ENC, n: 1 }])).status, 201);
    assert.equal((await push(b.url, plainQ, [{ visible: PLAIN }])).status, 201);
    const tx = await call(b.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: encQ, payload: { secret: TXN } }] }] });
    assert.equal(tx.status, 200, tx.text);
    assert.equal(tx.body.success, true, tx.text);

    // while running, the WAL holds the recent commits
    const live = assertAtRest(b.dataDir, [ENC, TXN], [PLAIN]);
    assert.ok(live.includes('queen.db-wal'), `WAL present while running: ${live.join(', ')}`);
    assert.equal(fs.statSync(b.dataDir).mode & 0o777, 0o700);
    for (const f of filesOf(b.dataDir)) assert.equal(f.mode, 0o600, `${f.file} mode ${f.mode.toString(8)}`);
  } finally {
    assert.equal(await b.stop(), 0);
  }
  assert.ok(!b.output().includes(key), 'the key never appears in the logs');
  assertAtRest(b.dataDir, [ENC, TXN], [PLAIN]);
  const rows = storedRows(b.dataDir, encQ);
  assert.equal(rows.length, 2);
  for (const r of rows) {
    assert.equal(r.encrypted, 1);
    assert.ok(Buffer.isBuffer(r.payload));
    assert.equal((r.payload as Buffer)[0], 1, 'envelope version');
    assert.equal((r.payload as Buffer).toString('hex', 1, 5), keyId(key), 'envelope names the key id');
  }
  assert.deepEqual(storedRows(b.dataDir, plainQ).map((r) => r.encrypted), [0]);

  const b2 = await startBroker({ dataDir: b.dataDir, env: { QUEEN_ENCRYPTION_KEY: key } });
  try {
    const enc = await popAll(b2.url, encQ);
    assert.equal(enc.status, 200, enc.text);
    assert.deepEqual(enc.body.messages.map((m: { data: unknown }) => m.data), [{ secret: ENC, n: 1 }, { secret: TXN }]);
    assert.ok(!enc.body.messages.some((m: { error?: unknown }) => m.error));
    const plain = await popAll(b2.url, plainQ);
    assert.deepEqual(plain.body.messages.map((m: { data: unknown }) => m.data), [{ visible: PLAIN }]);
  } finally {
    assert.equal(await b2.stop(), 0);
  }
});

test('no key: configure refuses encryptionEnabled (400), pushes into a flagged queue are refused (503), nothing stored', async () => {
  const key = hexKey();
  const flagged = uniqueName('flagged');
  const plainQ = uniqueName('plain');
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key } });
  try {
    assert.equal((await configure(b.url, flagged, true)).status, 200);
  } finally {
    await b.stop();
  }
  // restart without the key: no envelope was ever stored, so the recorded key is retired
  const b2 = await startBroker({ dataDir: b.dataDir, env: { LOG_LEVEL: 'info' } });
  try {
    assert.match(b2.output(), /encryption disabled: QUEEN_ENCRYPTION_KEY is not set/);
    assert.match(b2.output(), new RegExp(`encryption key id ${keyId(key)} retired`));
    const conf = await configure(b2.url, uniqueName('new'), true);
    assert.equal(conf.status, 400);
    assert.equal(conf.body.code, 'encryption_key_missing');
    assert.match(conf.body.error, /QUEEN_ENCRYPTION_KEY/);
    // a merge that keeps the flag of an already flagged queue is refused too
    assert.equal((await call(b2.url, 'POST', '/api/v1/configure', { queue: flagged, options: { leaseTime: 30 } })).status, 400);

    const p = await push(b2.url, flagged, [{ a: 'MUST-NOT-BE-STORED' }]);
    assert.equal(p.status, 503, p.text);
    assert.equal(p.body.code, 'encryption_unavailable');
    assert.match(p.body.error, /QUEEN_ENCRYPTION_KEY/);
    // a mixed request is refused whole
    const mixed = await call(b2.url, 'POST', '/api/v1/push', { items: [{ queue: plainQ, payload: { ok: 1 } }, { queue: flagged, payload: { a: 2 } }] });
    assert.equal(mixed.status, 503);
    const tx = await call(b2.url, 'POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: flagged, payload: { t: 'MUST-NOT-BE-STORED' } }] }] });
    assert.equal(tx.status, 503, tx.text);
    assert.equal(tx.body.code, 'encryption_unavailable');
    assert.match(tx.body.error, /QUEEN_ENCRYPTION_KEY/);
    // plain queues keep working
    assert.equal((await push(b2.url, plainQ, [{ ok: true }])).status, 201);
  } finally {
    assert.equal(await b2.stop(), 0);
  }
  assert.equal(storedRows(b.dataDir, flagged).length, 0);
  assert.equal(storedRows(b.dataDir, plainQ).length, 1);
  for (const f of filesOf(b.dataDir)) assert.equal(f.bytes.includes('MUST-NOT-BE-STORED'), false);
});

test('a malformed key fails boot before listening, naming the variable and the format, never the value', async () => {
  const cases: Array<[Record<string, string>, RegExp, string]> = [
    [{ QUEEN_ENCRYPTION_KEY: 'abc123' }, /fatal: QUEEN_ENCRYPTION_KEY must be 64 hex characters \(32 bytes\); got 6 characters/, 'abc123'],
    [{ QUEEN_ENCRYPTION_KEY: 'x'.repeat(64) }, /fatal: QUEEN_ENCRYPTION_KEY is not valid hex/, 'x'.repeat(64)],
    [{ QUEEN_ENCRYPTION_KEY: hexKey(), QUEEN_ENCRYPTION_KEY_PREVIOUS: 'deadbeef' }, /fatal: QUEEN_ENCRYPTION_KEY_PREVIOUS must be 64 hex characters/, 'deadbeef'],
  ];
  for (const [env, re, secret] of cases) {
    const r = await runBrokerExpectingExit(env);
    assert.notEqual(r.code, 0);
    assert.match(r.output, re);
    assert.ok(!r.output.includes(secret));
    assert.doesNotMatch(r.output, /listening/);
  }
});

test('a data directory writable by others is refused at boot', { skip: process.platform === 'win32' }, async () => {
  const dir = path.join(tempDir(), 'data');
  fs.mkdirSync(dir);
  fs.chmodSync(dir, 0o777);
  const r = await runBrokerExpectingExit({ QUEEN_DATA_DIR: dir });
  assert.notEqual(r.code, 0);
  assert.match(r.output, /fatal: data directory .* is writable by group or others \(mode 0777\)/);
});

test('changed key: boot refused naming the old key id; rotation with the old key listed reads old payloads and writes with the new key', async () => {
  const k1 = hexKey();
  const k2 = hexKey();
  const q = uniqueName('rot');
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: k1 } });
  try {
    assert.equal((await configure(b.url, q, true)).status, 200);
    assert.equal((await push(b.url, q, [{ v: 'old' }])).status, 201);
  } finally {
    await b.stop();
  }
  const changed = await runBrokerExpectingExit({ QUEEN_DATA_DIR: b.dataDir, QUEEN_ENCRYPTION_KEY: k2 });
  assert.notEqual(changed.code, 0);
  assert.match(changed.output, /fatal: QUEEN_ENCRYPTION_KEY does not match the key this data directory was encrypted with/);
  assert.ok(changed.output.includes(`key id ${keyId(k1)}`), changed.output);
  assert.ok(!changed.output.includes(k1) && !changed.output.includes(k2));
  const none = await runBrokerExpectingExit({ QUEEN_DATA_DIR: b.dataDir });
  assert.notEqual(none.code, 0);
  assert.match(none.output, new RegExp(`fatal: this data directory holds encrypted payloads but QUEEN_ENCRYPTION_KEY is not set \\(payloads were written under key id ${keyId(k1)}\\)`));

  const env = { QUEEN_ENCRYPTION_KEY: k2, QUEEN_ENCRYPTION_KEY_PREVIOUS: k1 };
  const b2 = await startBroker({ dataDir: b.dataDir, env });
  try {
    assert.equal((await push(b2.url, q, [{ v: 'new' }])).status, 201);
  } finally {
    await b2.stop();
  }
  assert.deepEqual(storedRows(b.dataDir, q).map((r) => (r.payload as Buffer).toString('hex', 1, 5)), [keyId(k1), keyId(k2)]);
  // dropping the old key while its payloads are stored is still refused
  const dropped = await runBrokerExpectingExit({ QUEEN_DATA_DIR: b.dataDir, QUEEN_ENCRYPTION_KEY: k2 });
  assert.notEqual(dropped.code, 0);
  assert.ok(dropped.output.includes(`key id ${keyId(k1)}`));

  const b3 = await startBroker({ dataDir: b.dataDir, env });
  try {
    const r = await popAll(b3.url, q);
    assert.deepEqual(r.body.messages.map((m: { data: unknown }) => m.data), [{ v: 'old' }, { v: 'new' }]);
  } finally {
    await b3.stop();
  }
});

test('a tampered envelope is detected: delivered as data:null with an error inside the lease, counted and logged', async () => {
  const key = hexKey();
  const q = uniqueName('tamper');
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key } });
  try {
    assert.equal((await configure(b.url, q, true)).status, 200);
    assert.equal((await push(b.url, q, [{ i: 0 }, { i: 1 }, { i: 2 }])).status, 201);
  } finally {
    await b.stop();
  }
  const db = new Database(path.join(b.dataDir, 'queen.db'));
  let badId: string;
  try {
    const row = db.prepare('SELECT m.partition_pk, m.offset, m.id, m.payload FROM messages m JOIN queues q ON q.pk = m.queue_pk WHERE q.name = ? ORDER BY m.offset LIMIT 1 OFFSET 1').get(q) as { partition_pk: number; offset: number; id: string; payload: Buffer };
    badId = row.id;
    const t = Buffer.from(row.payload);
    t[20]! ^= 0x01; // one bit of the ciphertext
    db.prepare('UPDATE messages SET payload = ? WHERE partition_pk = ? AND offset = ?').run(t, row.partition_pk, row.offset);
  } finally {
    db.close();
  }
  const b2 = await startBroker({ dataDir: b.dataDir, env: { QUEEN_ENCRYPTION_KEY: key } });
  try {
    const r = await popAll(b2.url, q);
    assert.equal(r.status, 200);
    const msgs = r.body.messages as Array<{ id: string; data: unknown; leaseId: string; transactionId: string; partitionId: string; error?: { code: string; error: string } }>;
    assert.equal(msgs.length, 3, 'the bad message keeps its place in the batch');
    assert.deepEqual(msgs[0]!.data, { i: 0 });
    assert.deepEqual(msgs[2]!.data, { i: 2 });
    assert.equal(msgs[1]!.id, badId);
    assert.equal(msgs[1]!.data, null);
    assert.deepEqual(msgs[1]!.error, { code: 'payload_integrity_failed', error: `cannot decrypt message ${badId}` });
    assert.ok(msgs.every((m) => m.leaseId === r.body.leaseId && m.leaseId !== ''), 'one lease covers the batch');
    const metrics = await call(b2.url, 'GET', '/metrics');
    assert.equal(metrics.body.encryption.integrityFailures, 1);
    // the log line travels on the broker's stdout pipe, which may deliver it after the HTTP answer
    const logged = new RegExp(`cannot decrypt message ${badId} in queue ${q} partition `);
    await waitFor(() => logged.test(b2.output()), { what: `the log line ${logged}` });
    // the consumer settles the batch as usual
    const ack = await call(b2.url, 'POST', '/api/v1/ack/batch', {
      acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })),
    });
    assert.equal(ack.status, 200, ack.text);
    assert.equal((await popAll(b2.url, q)).status, 204);
  } finally {
    await b2.stop();
  }
});
