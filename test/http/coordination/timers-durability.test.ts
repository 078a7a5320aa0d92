/**
 * Timers across restarts and at rest: pending timers survive SIGKILL and fire exactly once after
 * boot (also those due while the broker was down); an encrypted queue's timer payloads are never
 * stored in clear and are delivered in clear; without a key, scheduling into such a queue is 503.
 */
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { KeyRing } from '../../../src/crypto/keyring.js';
import { runBrokerExpectingExit, startBroker } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';
import { afterTimersDueBefore, b64json, messagesOf, popWait, schedule, timers } from './timer-helpers.js';

/** True when any file under `dir` contains `needle` in its raw bytes. */
function foundInFiles(dir: string, needle: string): string | undefined {
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) {
      const hit = foundInFiles(p, needle);
      if (hit) return hit;
    } else if (ent.isFile() && fs.readFileSync(p).includes(needle)) {
      return p;
    }
  }
  return undefined;
}

test('SIGKILL with pending timers: after restart, the one due during the downtime and the one due later each fire exactly once', async () => {
  const q = uniqueName('tr');
  const booting = Date.now();
  const b = await startBroker();
  // 'after' must still be pending when the restarted broker is up, or both fire together at boot
  // and the re-arming of a timer due later goes unproven: leave room for a restart slower than
  // this first boot (a loaded machine).
  const afterMs = 2500 + 2 * (Date.now() - booting);
  let dataDir = b.dataDir;
  let duringAt = Infinity;
  try {
    const s = await timers(b.url, [schedule(q, 'during', { delayMs: 400 }), schedule(q, 'after', { delayMs: afterMs })]);
    assert.equal(s.status, 200, s.text);
    duringAt = Date.parse(s.body.results[0].deliverAt);
  } finally {
    await b.kill();
  }
  await waitFor(() => Date.now() > duringAt, { what: "'during' to fall due while the broker is down" });
  const b2 = await startBroker({ dataDir });
  try {
    const first = await popWait(b2.url, q, 3000, '&autoAck=true');
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.messages.map((m: any) => m.transactionId), ['txn-during']);
    const second = await popWait(b2.url, q, afterMs + 5000, '&autoAck=true');
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body.messages.map((m: any) => m.transactionId), ['txn-after']);
    dataDir = b2.dataDir;
  } finally {
    await b2.kill();
  }
  // and after one more crash and restart nothing fires again
  const b3 = await startBroker({ dataDir });
  try {
    await afterTimersDueBefore(b3.url, 0); // anything this boot would (wrongly) fire again is due before it
    const all = await messagesOf(b3.url, q);
    assert.deepEqual(all.map((m: any) => m.transactionId).sort(), ['txn-after', 'txn-during']);
    assert.deepEqual((await call(b3.url, 'GET', `/api/v1/timers/${q}`)).body.rows, []);
  } finally {
    await b3.stop();
  }
});

test('encrypted queue: timer payloads are stored encrypted and delivered in clear', async () => {
  const key = randomBytes(32).toString('hex');
  const q = uniqueName('te');
  const pendingMarker = `pending-${randomBytes(8).toString('hex')}`;
  const firedMarker = `fired-${randomBytes(8).toString('hex')}`;
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key } });
  try {
    assert.equal((await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { encryptionEnabled: true } })).status, 200);
    const s = await timers(b.url, [
      schedule(q, 'pending', { payload: b64json({ secret: pendingMarker }), delayMs: 3_600_000 }),
      schedule(q, 'fires', { payload: b64json({ secret: firedMarker }), delayMs: 200 }),
    ]);
    assert.equal(s.status, 200, s.text);
    const peek = await call(b.url, 'GET', `/api/v1/timers/${q}/pending`);
    assert.equal(peek.body.encryptedAtRest, true);
    assert.deepEqual(JSON.parse(Buffer.from(peek.body.payload, 'base64').toString('utf8')), { secret: pendingMarker });
    const p = await popWait(b.url, q, 3000);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body.messages[0].data, { secret: firedMarker });
  } finally {
    await b.stop();
  }
  assert.equal(foundInFiles(b.dataDir, pendingMarker), undefined, 'pending timer payload stored in clear');
  assert.equal(foundInFiles(b.dataDir, firedMarker), undefined, 'fired timer payload stored in clear');
});

test('no key: scheduling into an encryptionEnabled queue answers 503 encryption_unavailable and stores nothing', async () => {
  const key = randomBytes(32).toString('hex');
  const q = uniqueName('tk');
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: key } });
  try {
    assert.equal((await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { encryptionEnabled: true } })).status, 200);
  } finally {
    await b.stop();
  }
  const b2 = await startBroker({ dataDir: b.dataDir });
  try {
    const r = await timers(b2.url, [schedule(uniqueName('plain'), 'ok'), schedule(q, 'k')]);
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.code, 'encryption_unavailable');
    assert.deepEqual((await call(b2.url, 'GET', `/api/v1/timers/${q}`)).body.rows, []);
    // cancel needs no key
    assert.equal((await timers(b2.url, [{ op: 'cancel', queue: q, timerKey: 'k' }])).body.results[0].status, 'absent');
  } finally {
    await b2.stop();
  }
});

test('a pending encrypted timer keeps its key in use: boot without it is refused naming the key id; listed as previous, it still fires', async () => {
  const k1 = randomBytes(32).toString('hex');
  const k2 = randomBytes(32).toString('hex');
  const q = uniqueName('tkey');
  const b = await startBroker({ env: { QUEEN_ENCRYPTION_KEY: k1 } });
  try {
    assert.equal((await call(b.url, 'POST', '/api/v1/configure', { queue: q, options: { encryptionEnabled: true } })).status, 200);
    assert.equal((await timers(b.url, [schedule(q, 'k', { delayMs: 2500, payload: b64json({ kept: true }) })])).status, 200);
  } finally {
    await b.stop();
  }
  const keyId = new KeyRing(createSecretKey(Buffer.from(k1, 'hex'))).current.id;
  const refused = await runBrokerExpectingExit({ QUEEN_DATA_DIR: b.dataDir });
  assert.notEqual(refused.code, 0);
  assert.match(refused.output, new RegExp(keyId), refused.output);
  const b2 = await startBroker({ dataDir: b.dataDir, env: { QUEEN_ENCRYPTION_KEY: k2, QUEEN_ENCRYPTION_KEY_PREVIOUS: k1 } });
  try {
    const p = await popWait(b2.url, q, 5000);
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body.messages[0].data, { kept: true });
  } finally {
    await b2.stop();
  }
});

test('a firing that fails is recorded (attempts, lastError) and retried later; it fires once the cause is gone', async () => {
  const q = uniqueName('tf');
  const b = await startBroker();
  try {
    assert.equal((await timers(b.url, [schedule(q, 'big', { delayMs: 300, payload: b64json('x'.repeat(200)) })])).status, 200);
  } finally {
    await b.stop();
  }
  // restarted with a payload limit the timer's message exceeds: every firing attempt is refused
  const b2 = await startBroker({ dataDir: b.dataDir, env: { QUEEN_MAX_PAYLOAD_BYTES: '64' } });
  try {
    // The backoff itself (no retry before it has passed, growing gaps, no hot loop) is a time rule,
    // asserted on a test clock in test/broker/coordination/clock.test.ts; here: the wiring.
    await waitFor(async () => (await call(b2.url, 'GET', `/api/v1/timers/${q}/big`)).body.attempts >= 1, { what: 'a first failed firing attempt' });
    const peek = await call(b2.url, 'GET', `/api/v1/timers/${q}/big`);
    assert.equal(peek.body.found, true);
    assert.ok(Date.parse(peek.body.deliverAt) > Date.parse(peek.body.updatedAt), `the retry is due after the failure was recorded: ${peek.text}`);
    assert.match(peek.body.lastError, /exceeds 64 bytes/);
    assert.equal((await call(b2.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 204, 'nothing was pushed');
  } finally {
    await b2.stop();
  }
  const b3 = await startBroker({ dataDir: b.dataDir });
  try {
    const p = await popWait(b3.url, q, 5000);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.messages[0].data, 'x'.repeat(200));
  } finally {
    await b3.stop();
  }
});
