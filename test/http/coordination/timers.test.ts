/**
 * Timers (scheduled messages, docs/http-api.md#timers), black box over real HTTP: delivery after the
 * delay and not before, reschedule / cancel / absent / too_late, keyset listing, peek, the DELETE
 * route, dedup on `txn`, and producerSub from the scheduler's token.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { bearer, hsKey, mint } from '../../helpers/jwt.js';
import { parkWitness, waitFor } from '../../helpers/wait.js';
import { afterTimersDueBefore, b64json, messagesOf, popWait, schedule, timers } from './timer-helpers.js';

// One default broker for 'timers over HTTP' and 'timers and queue deletion' (each test has its own
// queue names); the describes that need another configuration start their own.
let shared: BrokerHandle;
before(async () => { shared = await startBroker(); });
after(async () => { await shared?.stop(); });

describe('timers over HTTP', () => {
  let b: BrokerHandle;
  before(() => { b = shared; });

  it('delivers the message after the delay, not before, with the announced id, txn and payload; wakes a parked consumer', async () => {
    const q = uniqueName('tm');
    const t0 = Date.now();
    const s = await timers(b.url, [schedule(q, 'k1', { delayMs: 700, txn: 'order-1', payload: b64json({ hello: 'timer', n: 7 }) })]);
    assert.equal(s.status, 200, s.text);
    const [r] = s.body.results;
    assert.equal(r.ok, true);
    assert.equal(r.status, 'scheduled');
    assert.equal(r.queue, q);
    assert.equal(r.timerKey, 'k1');
    assert.equal(r.txn, 'order-1');
    const deliverAt = Date.parse(r.deliverAt);
    assert.ok(deliverAt >= t0 + 700 && deliverAt <= Date.now() + 700, r.deliverAt);
    // nothing before the due time
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=false`)).status, 204);
    // a consumer parked before the due time is woken by the firing (before a witness pop parked
    // earlier with the same timeout times out, so not by its own timeout's re-check)
    const witness = await parkWitness(b.url, 20_000);
    const p = await popWait(b.url, q, 20_000);
    const got = Date.now();
    assert.ok(witness.parked(), 'the firing woke the parked consumer');
    await witness.release();
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.messages.length, 1);
    const m = p.body.messages[0];
    assert.deepEqual(m.data, { hello: 'timer', n: 7 });
    assert.equal(m.transactionId, 'order-1');
    assert.equal(m.id, r.messageId);
    assert.equal(m.partition, 'Default');
    assert.equal(m.producerSub, null);
    assert.ok(Date.parse(m.createdAt) >= deliverAt, `created ${m.createdAt} before deliverAt ${r.deliverAt}`);
    assert.ok(got >= deliverAt, 'delivered before deliverAt');
    // the timer is gone once fired
    const peek = await call(b.url, 'GET', `/api/v1/timers/${q}/k1`);
    assert.equal(peek.body.found, false);
  });

  it('delivers into the named partition; delayMs ≤ 0 fires on the next cycle', async () => {
    const q = uniqueName('tm');
    const s = await timers(b.url, [schedule(q, 'now', { delayMs: -5000, partition: 'p-1' })]);
    assert.equal(s.body.results[0].status, 'scheduled');
    assert.ok(Date.parse(s.body.results[0].deliverAt) <= Date.now());
    const p = await popWait(b.url, q, 3000);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.messages[0].partition, 'p-1');
  });

  it('reschedule moves the due time (earlier and later); cancel removes it; absent and too_late are ok:false verdicts', async () => {
    const q = uniqueName('tm');
    await timers(b.url, [schedule(q, 'early', { delayMs: 60_000 }), schedule(q, 'late', { delayMs: 200 }), schedule(q, 'gone', { delayMs: 300 })]);
    const r = await timers(b.url, [
      { op: 'reschedule', queue: q, timerKey: 'early', delayMs: 100 },
      { op: 'reschedule', queue: q, timerKey: 'late', delayMs: 60_000 },
      { op: 'cancel', queue: q, timerKey: 'gone' },
      { op: 'cancel', queue: q, timerKey: 'never-was' },
      { op: 'reschedule', queue: q, timerKey: 'never-was', delayMs: 10 },
    ]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.results.map((x: any) => [x.ok, x.status]), [
      [true, 'rescheduled'], [true, 'rescheduled'], [true, 'cancelled'], [false, 'absent'], [false, 'absent'],
    ]);
    const p = await popWait(b.url, q, 3000, '&autoAck=true');
    assert.equal(p.status, 200);
    assert.deepEqual(p.body.messages.map((m: any) => m.transactionId), ['txn-early']);
    await afterTimersDueBefore(b.url, 400); // due after the cancelled (300 ms) and the postponed (200 ms) ones
    assert.equal((await messagesOf(b.url, q)).length, 1, 'the cancelled and the postponed timers did not fire');
    const late = await call(b.url, 'GET', `/api/v1/timers/${q}/late`);
    assert.equal(late.body.found, true);
    assert.ok(Date.parse(late.body.deliverAt) > Date.now() + 50_000);

    // a timer already due is being delivered: cancel and reschedule answer too_late
    const tl = await timers(b.url, [schedule(q, 'due', { delayMs: 0 }), { op: 'cancel', queue: q, timerKey: 'due' },
      { op: 'reschedule', queue: q, timerKey: 'due', delayMs: 5000 }]);
    assert.deepEqual(tl.body.results.map((x: any) => [x.ok, x.status]), [[true, 'scheduled'], [false, 'too_late'], [false, 'too_late']]);
    const d = await popWait(b.url, q, 3000, '&autoAck=true');
    assert.equal(d.status, 200);
    assert.equal(d.body.messages[0].transactionId, 'txn-due');
  });

  it('schedule over a pending key replaces it (rescheduled) with a new message id', async () => {
    const q = uniqueName('tm');
    const a = await timers(b.url, [schedule(q, 'k', { payload: b64json('v1') })]);
    const c = await timers(b.url, [schedule(q, 'k', { payload: b64json('v2'), delayMs: 50, txn: 'second' })]);
    assert.equal(c.body.results[0].status, 'rescheduled');
    assert.notEqual(c.body.results[0].messageId, a.body.results[0].messageId);
    const p = await popWait(b.url, q, 3000);
    assert.equal(p.body.messages[0].data, 'v2');
    assert.equal(p.body.messages[0].transactionId, 'second');
  });

  it('DELETE /api/v1/timers/:queue/*key cancels; a second DELETE answers absent', async () => {
    const q = uniqueName('tm');
    await timers(b.url, [schedule(q, 'a/b c')]);
    const d1 = await call(b.url, 'DELETE', `/api/v1/timers/${q}/a/b%20c`);
    assert.equal(d1.status, 200, d1.text);
    assert.equal(d1.body.status, 'cancelled');
    assert.equal(d1.body.ok, true);
    const d2 = await call(b.url, 'DELETE', `/api/v1/timers/${q}/a/b%20c`);
    assert.equal(d2.status, 200);
    assert.deepEqual([d2.body.ok, d2.body.status], [false, 'absent']);
  });

  it('peek: every field of a timer; keys with "/" and percent-encoded segments; unknown key ⇒ found:false', async () => {
    const q = uniqueName('tm q');
    const s = await timers(b.url, [schedule(q, 'user/42/reminder', { partition: 'u42', payload: b64json({ x: [1, 2] }) })]);
    const r = s.body.results[0];
    const p = await call(b.url, 'GET', `/api/v1/timers/${encodeURIComponent(q)}/user/42/reminder`);
    assert.equal(p.status, 200, p.text);
    for (const f of ['found', 'queue', 'timerKey', 'partition', 'deliverAt', 'txn', 'messageId', 'payload', 'payloadZstd', 'encrypted',
      'producerSub', 'attempts', 'lastError', 'claimed', 'createdAt', 'updatedAt']) {
      assert.ok(f in p.body, `peek lacks ${f}`);
    }
    assert.equal(p.body.found, true);
    assert.equal(p.body.queue, q);
    assert.equal(p.body.timerKey, 'user/42/reminder');
    assert.equal(p.body.partition, 'u42');
    assert.equal(p.body.deliverAt, r.deliverAt);
    assert.equal(p.body.messageId, r.messageId);
    assert.deepEqual(JSON.parse(Buffer.from(p.body.payload, 'base64').toString('utf8')), { x: [1, 2] });
    assert.equal(p.body.attempts, 0);
    assert.equal(p.body.claimed, false);
    const enc = await call(b.url, 'GET', `/api/v1/timers/${encodeURIComponent(q)}/${encodeURIComponent('user/42/reminder')}`);
    assert.equal(enc.body.found, true);
    const none = await call(b.url, 'GET', `/api/v1/timers/${encodeURIComponent(q)}/nope`);
    assert.equal(none.status, 200);
    assert.equal(none.body.found, false);
  });

  it('keyset listing by key: limit, truncated, nextAfter, after=', async () => {
    const q = uniqueName('tm');
    const keys = ['k05', 'k01', 'k03', 'k02', 'k04'];
    await timers(b.url, keys.map((k) => schedule(q, k)));
    await timers(b.url, [schedule(uniqueName('other'), 'k00')]);
    const seen: string[] = [];
    let afterKey: string | null = null;
    let pages = 0;
    for (;;) {
      const r: any = await call(b.url, 'GET', `/api/v1/timers/${q}?limit=2${afterKey ? `&after=${afterKey}` : ''}`);
      assert.equal(r.status, 200, r.text);
      pages++;
      seen.push(...r.body.rows.map((x: any) => x.timerKey));
      if (!r.body.truncated) {
        assert.equal(r.body.nextAfter, null);
        break;
      }
      afterKey = r.body.nextAfter;
      assert.equal(afterKey, seen[seen.length - 1]);
    }
    assert.deepEqual(seen, ['k01', 'k02', 'k03', 'k04', 'k05']);
    assert.equal(pages, 3);
    const empty = await call(b.url, 'GET', `/api/v1/timers/${uniqueName('none')}`);
    assert.deepEqual(empty.body, { rows: [], truncated: false, nextAfter: null });
    assert.equal((await call(b.url, 'GET', `/api/v1/timers/${q}?limit=0`)).body.code, 'invalid_request');
  });

  it('two timers with the same txn on one partition deliver one message (dedup)', async () => {
    const q = uniqueName('tm');
    await timers(b.url, [schedule(q, 'a', { delayMs: 50, txn: 'same' }), schedule(q, 'b', { delayMs: 100, txn: 'same' })]);
    await waitFor(async () => (await call(b.url, 'GET', `/api/v1/timers/${q}`)).body.rows.length === 0, { what: 'both timers to be consumed' });
    const all = await messagesOf(b.url, q);
    assert.equal(all.length, 1);
  });
});

describe('timers: bad input', () => {
  let b: BrokerHandle;
  before(async () => { b = await startBroker({ env: { QUEEN_MAX_PUSH_ITEMS: '3', QUEEN_MAX_PAYLOAD_BYTES: '64', QUEEN_MAX_NAME_BYTES: '32', QUEEN_MAX_JSON_DEPTH: '10' } }); });
  /** An array `levels` deep around 1. */
  const nested = (levels: number): unknown => JSON.parse('['.repeat(levels) + '1' + ']'.repeat(levels));
  after(async () => { await b?.stop(); });

  const cases: [string, () => unknown, number, string][] = [
    ['no operations', () => ({}), 400, 'operations_required'],
    ['operations not an array', () => ({ operations: 'x' }), 400, 'operations_required'],
    ['too many operations', () => ({ operations: [1, 2, 3, 4].map((i) => schedule('q', `k${i}`)) }), 400, 'batch_too_large'],
    ['unknown op', () => ({ operations: [{ ...schedule('q', 'k'), op: 'fire' }] }), 400, 'invalid_request'],
    ['queue missing', () => ({ operations: [{ op: 'cancel', timerKey: 'k' }] }), 400, 'invalid_request'],
    ['empty queue', () => ({ operations: [schedule('', 'k')] }), 400, 'invalid_request'],
    ['empty timerKey', () => ({ operations: [schedule('q', '')] }), 400, 'invalid_request'],
    ['empty partition', () => ({ operations: [schedule('q', 'k', { partition: '' })] }), 400, 'invalid_request'],
    ['delayMs missing on schedule', () => ({ operations: [schedule('q', 'k', { delayMs: undefined })] }), 400, 'invalid_request'],
    ['delayMs missing on reschedule', () => ({ operations: [{ op: 'reschedule', queue: 'q', timerKey: 'k' }] }), 400, 'invalid_request'],
    ['delayMs on cancel', () => ({ operations: [{ op: 'cancel', queue: 'q', timerKey: 'k', delayMs: 5 }] }), 400, 'invalid_request'],
    ['delayMs not a number', () => ({ operations: [schedule('q', 'k', { delayMs: '100' })] }), 400, 'invalid_request'],
    ['delayMs fractional', () => ({ operations: [schedule('q', 'k', { delayMs: 1.5 })] }), 400, 'invalid_request'],
    ['txn missing on schedule', () => ({ operations: [schedule('q', 'k', { txn: undefined })] }), 400, 'invalid_request'],
    ['payload missing on schedule', () => ({ operations: [schedule('q', 'k', { payload: undefined })] }), 400, 'invalid_request'],
    ['payload not base64', () => ({ operations: [schedule('q', 'k', { payload: '{"a":1}' })] }), 400, 'invalid_request'],
    ['payload not JSON', () => ({ operations: [schedule('q', 'k', { payload: Buffer.from('not json').toString('base64') })] }), 400, 'invalid_request'],
    ['payload a JSON object instead of base64', () => ({ operations: [schedule('q', 'k', { payload: { a: 1 } })] }), 400, 'invalid_request'],
    ['payload too large', () => ({ operations: [schedule('q', 'k', { payload: b64json('x'.repeat(100)) })] }), 413, 'payload_too_large'],
    // Outside check: a base64 payload 100,000 levels deep was scheduled and then popped, past the
    // depth limit every other body is held to.
    ['payload nested deeper than QUEEN_MAX_JSON_DEPTH', () => ({ operations: [schedule('q', 'k', { payload: b64json(nested(11)) })] }), 400, 'json_too_deep'],
    ['beyond the 90-day horizon', () => ({ operations: [schedule('q', 'k', { delayMs: 90 * 86_400_000 + 1 })] }), 400, 'timer_horizon_exceeded'],
    ['payloadZstd', () => ({ operations: [schedule('q', 'k', { payloadZstd: true })] }), 400, 'timer_unsupported'],
    ['client-encrypted payload', () => ({ operations: [schedule('q', 'k', { encrypted: true })] }), 400, 'timer_unsupported'],
    ['producerSub in the request', () => ({ operations: [schedule('q', 'k', { producerSub: 'me' })] }), 400, 'invalid_request'],
    ['messageId in the request', () => ({ operations: [schedule('q', 'k', { messageId: 'x' })] }), 400, 'invalid_request'],
    ['tenant in the request', () => ({ operations: [schedule('q', 'k', { tenant: 't' })] }), 400, 'invalid_request'],
    ['deliverAt in the request', () => ({ operations: [schedule('q', 'k', { deliverAt: '2030-01-01T00:00:00Z' })] }), 400, 'invalid_request'],
    ['timerKey too long', () => ({ operations: [schedule('q', 'k'.repeat(33))] }), 400, 'name_too_long'],
    ['queue name too long', () => ({ operations: [schedule('q'.repeat(33), 'k')] }), 400, 'name_too_long'],
    ['malformed JSON body', () => '{"operations": [', 400, 'bad_json'],
  ];
  for (const [name, body, status, code] of cases) {
    it(`${name} ⇒ ${status} ${code}`, async () => {
      const raw = body();
      const r = await call(b.url, 'POST', '/api/v1/timers', raw);
      assert.equal(r.status, status, r.text);
      assert.equal(r.body.code, code, r.text);
      assert.equal(typeof r.body.error, 'string');
    });
  }

  it('a payload exactly QUEEN_MAX_JSON_DEPTH deep is scheduled; one level more in a transaction rider is refused with the failure shape', async () => {
    const q = uniqueName('t');
    const r = await timers(b.url, [schedule(q, 'k', { payload: b64json(nested(10)) })]);
    assert.equal(r.status, 200, r.text);
    const t = await call(b.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'push', queue: q, payload: 1 }], timers: [schedule(q, 'k2', { payload: b64json(nested(11)) })],
    });
    assert.equal(t.status, 400, t.text);
    assert.equal(t.body.code, 'json_too_deep');
    assert.equal(t.body.success, false);
    assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`)).status, 204, 'the push rolled back with the refused rider');
  });

  it('a batch with one bad operation schedules nothing (all or nothing)', async () => {
    const q = uniqueName('t');
    const r = await timers(b.url, [schedule(q, 'good'), schedule(q, 'bad', { delayMs: 91 * 86_400_000 })]);
    assert.equal(r.status, 400);
    assert.equal((await call(b.url, 'GET', `/api/v1/timers/${q}`)).body.rows.length, 0);
  });

  it('a bare array body is accepted like {operations}; an empty batch answers no results', async () => {
    const q = uniqueName('t');
    const r = await call(b.url, 'POST', '/api/v1/timers', [schedule(q, 'k')]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.results[0].status, 'scheduled');
    assert.deepEqual((await timers(b.url, [])).body, { results: [] });
  });
});

describe('timers with JWT', () => {
  const SECRET = randomBytes(32).toString('hex');
  const KEY = hsKey(SECRET);
  let b: BrokerHandle;
  before(async () => { b = await startBroker({ env: { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET } }); });
  after(async () => { await b?.stop(); });

  it('producerSub of the delivered message is the scheduler’s sub; write-only may schedule, not peek; read-only may peek, not schedule', async () => {
    const q = uniqueName('tj');
    const writer = bearer(await mint('HS256', KEY, { sub: 'svc-scheduler', role: 'write-only' }));
    const reader = bearer(await mint('HS256', KEY, { sub: 'svc-reader', role: 'read-only' }));
    const admin = bearer(await mint('HS256', KEY, { sub: 'svc-admin', role: 'admin' }));
    assert.equal((await timers(b.url, [schedule(q, 'x')], reader)).status, 403);
    assert.equal((await timers(b.url, [schedule(q, 'x')])).status, 401);
    const s = await timers(b.url, [schedule(q, 'k', { delayMs: 300 })], writer);
    assert.equal(s.status, 200, s.text);
    assert.equal((await call(b.url, 'GET', `/api/v1/timers/${q}/k`, undefined, writer)).status, 403);
    const peek = await call(b.url, 'GET', `/api/v1/timers/${q}/k`, undefined, reader);
    assert.equal(peek.status, 200);
    assert.equal(peek.body.producerSub, 'svc-scheduler');
    assert.equal((await call(b.url, 'DELETE', `/api/v1/timers/${q}/k`, undefined, reader)).status, 403);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=3000`, undefined, admin);
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.messages[0].producerSub, 'svc-scheduler');
  });
});

describe('timers and queue deletion', () => {
  it('deleting a queue cancels its pending timers: they never recreate it', async () => {
    const b = shared;
    const q = uniqueName('deleted');
    await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'exists' }] });
    const s = await timers(b.url, [schedule(q, 'k', { delayMs: 400, txn: 'later', payload: b64json({ late: true }) })]);
    assert.equal(s.status, 200, s.text);
    assert.equal((await call(b.url, 'DELETE', `/api/v1/resources/queues/${q}`)).body.deleted, true);
    await afterTimersDueBefore(b.url, 600); // due after the deleted queue's timer (400 ms)
    assert.equal((await call(b.url, 'GET', `/api/v1/resources/queues/${q}`)).status, 404);
    assert.equal((await call(b.url, 'GET', `/api/v1/timers/${q}`)).body.rows.length, 0);
  });
});
