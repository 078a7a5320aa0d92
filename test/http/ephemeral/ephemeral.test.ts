/**
 * Ephemeral (RAM-only) queues over HTTP (docs/ephemeral.md#tests):
 * fan-out, per-message leases, redelivery, retry limit, lease expiry, TTL, bounds, restart, long
 * polls, windows and the kill switch, each against a real broker.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

const push = (url: string, queue: string, payloads: unknown[], partition?: string) =>
  call(url, 'POST', '/api/v1/ephemeral/push', { queue, ...(partition ? { partition } : {}), messages: payloads.map((payload) => ({ payload })) });
const pop = (url: string, queue: string, qs = '') => call(url, 'GET', `/api/v1/ephemeral/pop?queue=${encodeURIComponent(queue)}${qs}`);
const ack = (url: string, queue: string, acks: { id: string; status?: string }[], group?: string) =>
  call(url, 'POST', '/api/v1/ephemeral/ack', { queue, ...(group ? { group } : {}), acks });
const configure = (url: string, queue: string, options?: unknown) => call(url, 'POST', '/api/v1/ephemeral/configure', { queue, ...(options !== undefined ? { options } : {}) });

describe('ephemeral queues', () => {
  let b: BrokerHandle;
  before(async () => { b = await startBroker(); });
  after(async () => { await b.stop(); });

  test('push 3, pop batch 10 returns them in order with attempts 1; another group sees all 3 (fan-out)', async () => {
    const q = uniqueName('eph');
    const p = await call(b.url, 'POST', '/api/v1/ephemeral/push', `{"queue":"${q}","messages":[{"payload":{"n":1}},{"payload":{"n":2,"x":[1.50,"a"]}},{"payload":null}]}`);
    assert.equal(p.status, 201);
    assert.deepEqual(p.body, { pushed: 3 });
    const a = await pop(b.url, q, '&group=g1&batch=10');
    assert.equal(a.status, 200);
    assert.equal(a.body.queue, q);
    assert.deepEqual(a.body.messages.map((m: any) => [m.payload, m.attempts, m.partition]), [[{ n: 1 }, 1, 'Default'], [{ n: 2, x: [1.5, 'a'] }, 1, 'Default'], [null, 1, 'Default']]);
    assert.ok(a.text.includes('"x":[1.50,"a"]'), 'payload text returned byte-exact');
    const g2 = await pop(b.url, q, '&group=g2&batch=10');
    assert.equal(g2.body.messages.length, 3);
    const again = await pop(b.url, q, '&group=g1&batch=10');
    assert.deepEqual(again.body, { queue: q, messages: [] }, 'empty is 200 with no messages');
  });

  test('per-message leases: the same group twice with batch=1 gets two different messages', async () => {
    const q = uniqueName('eph');
    await push(b.url, q, ['a', 'b']);
    const x = await pop(b.url, q, '&group=w&batch=1');
    const y = await pop(b.url, q, '&group=w&batch=1');
    assert.deepEqual([x.body.messages[0].payload, y.body.messages[0].payload], ['a', 'b']);
    assert.notEqual(x.body.messages[0].id, y.body.messages[0].id);
  });

  test('ack retry redelivers at once with attempts 2; after retryLimit nacks the message is dropped (drops.retry)', async () => {
    const q = uniqueName('eph');
    assert.equal((await configure(b.url, q, { retryLimit: 2 })).status, 201);
    await push(b.url, q, [{ k: 1 }]);
    const first = (await pop(b.url, q, '&group=g')).body.messages[0];
    const r1 = await ack(b.url, q, [{ id: first.id, status: 'retry' }], 'g');
    assert.deepEqual(r1.body.results, [{ id: first.id, outcome: 'redelivered' }]);
    const second = (await pop(b.url, q, '&group=g')).body.messages[0];
    assert.equal(second.attempts, 2);
    const r2 = await ack(b.url, q, [{ id: second.id, status: 'failed' }], 'g');
    assert.equal(r2.body.results[0].outcome, 'acked');
    assert.deepEqual((await pop(b.url, q, '&group=g')).body.messages, []);
    const row = (await call(b.url, 'GET', '/api/v1/ephemeral/queues')).body.queues.find((r: any) => r.queue === q);
    assert.equal(row.drops.retry, 1);
    assert.equal(row.depth, 0, 'memory released once every group is past it');
    const again = await ack(b.url, q, [{ id: second.id }], 'g');
    assert.equal(again.body.results[0].outcome, 'unknown');
    const stale = await ack(b.url, q, [{ id: 'e:00000000deadbeef:Default:268435456' }], 'g');
    assert.equal(stale.body.results[0].outcome, 'stale');
  });

  test('an expired lease redelivers the message', async () => {
    const q = uniqueName('eph');
    await configure(b.url, q, { leaseSeconds: 1 });
    await push(b.url, q, ['x']);
    const m = (await pop(b.url, q)).body.messages[0];
    assert.equal(m.attempts, 1);
    const again = await waitFor(async () => (await pop(b.url, q)).body.messages[0], { timeoutMs: 10_000, what: 'redelivery after lease expiry' });
    assert.equal(again.attempts, 2);
    assert.equal(again.payload, 'x');
    assert.equal((await ack(b.url, q, [{ id: again.id }])).body.results[0].outcome, 'acked');
    assert.deepEqual((await pop(b.url, q)).body.messages, [], 'settled');
  });

  test('ttlSeconds drops unconsumed messages', async () => {
    const q = uniqueName('eph');
    await configure(b.url, q, { ttlSeconds: 1 });
    await push(b.url, q, [1, 2]);
    await waitFor(async () => (await call(b.url, 'GET', '/api/v1/ephemeral/queues')).body.queues.find((r: any) => r.queue === q).drops.ttl === 2 || undefined,
      { timeoutMs: 10_000, what: 'ttl drops' });
    assert.deepEqual((await pop(b.url, q)).body.messages, []);
  });

  test('maxLength 2 with reject: the third push is 429 queue_full and nothing is written; dropOldest keeps the newest', async () => {
    const q = uniqueName('eph');
    await configure(b.url, q, { maxLength: 2 });
    assert.equal((await push(b.url, q, [1, 2])).status, 201);
    const full = await push(b.url, q, [3]);
    assert.equal(full.status, 429);
    assert.equal(full.body.code, 'queue_full');
    assert.deepEqual((await pop(b.url, q, '&batch=10')).body.messages.map((m: any) => m.payload), [1, 2]);

    const d = uniqueName('eph');
    await configure(b.url, d, { maxLength: 2, policy: 'dropOldest' });
    await push(b.url, d, [1, 2]);
    assert.equal((await push(b.url, d, [3])).status, 201);
    assert.deepEqual((await pop(b.url, d, '&batch=10')).body.messages.map((m: any) => m.payload), [2, 3]);
    const row = (await call(b.url, 'GET', '/api/v1/ephemeral/queues')).body.queues.find((r: any) => r.queue === d);
    assert.equal(row.drops.bounds, 1);
  });

  test('configure refuses unknown options and bad values with ephemeral_bad_request; answers the stored row', async () => {
    const q = uniqueName('eph');
    for (const [options, msg] of [[{ ttlSecond: 1 }, /unknown option `ttlSecond`/], [{ maxLength: 1.5 }, /maxLength must be a non-negative integer/], [{ policy: 'x' }, /policy must be/], [[1], /options must be an object/], [{ windowBuffer: { size: 1 } }, /unknown windowBuffer field/]] as const) {
      const r = await configure(b.url, q, options);
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'ephemeral_bad_request');
      assert.match(r.body.error, msg);
    }
    const ok = await configure(b.url, q, { maxLength: 999_999_999, policy: 'dropOldest' });
    assert.equal(ok.status, 201);
    assert.deepEqual(ok.body.options, { maxLength: 999_999_999, policy: 'dropOldest' });
    assert.ok(!Number.isNaN(Date.parse(ok.body.updatedAt)));
    const row = (await call(b.url, 'GET', '/api/v1/ephemeral/queues')).body.queues.find((r: any) => r.queue === q);
    assert.equal(row.tier, 'declared');
    assert.equal(row.options.maxLength, 10_000, 'clamped to QUEEN_EPHEMERAL_QUEUE_MAX_LENGTH in force');
  });

  test('bad input answers ephemeral_bad_request', async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ['POST', '/api/v1/ephemeral/push', '{"queue":', /bad body/],
      ['POST', '/api/v1/ephemeral/push', { queue: '', messages: [] }, /queue must not be empty/],
      ['POST', '/api/v1/ephemeral/push', { queue: 'a\u0001', messages: [] }, /control characters are not allowed in queue/],
      ['POST', '/api/v1/ephemeral/push', { queue: 'x'.repeat(513), messages: [] }, /queue is longer than 512 bytes/],
      ['POST', '/api/v1/ephemeral/push', { queue: 'a', messages: Array.from({ length: 10_001 }, () => ({ payload: 1 })) }, /at most 10000 messages per push/],
      // A lone UTF-16 surrogate cannot be stored as UTF-8: a declared queue so named came back
      // under another name after a restart (docs/ephemeral.md#common-rules).
      ['POST', '/api/v1/ephemeral/configure', '{"queue":"lone\\ud800x","options":{}}', /lone UTF-16 surrogate.*queue/],
      ['POST', '/api/v1/ephemeral/push', '{"queue":"a","partition":"\\udc00","messages":[]}', /lone UTF-16 surrogate.*partition/],
      ['GET', '/api/v1/ephemeral/pop', undefined, /queue is required/],
      ['POST', '/api/v1/ephemeral/ack', { queue: 'a', acks: Array.from({ length: 10_001 }, () => ({ id: 'x' })) }, /at most 10000 acks per call/],
    ];
    for (const [method, path, body, msg] of cases) {
      const r = await call(b.url, method, path, body);
      assert.equal(r.status, 400, `${method} ${path}`);
      assert.equal(r.body.code, 'ephemeral_bad_request');
      assert.match(r.body.error, msg);
    }
    assert.deepEqual((await push(b.url, uniqueName('eph'), [])).body, { pushed: 0 });
  });

  test('the relay routes between nodes answer 403 internal_only', async () => {
    for (const [method, path] of [['POST', '/api/v1/ephemeral/_adopt'], ['POST', '/api/v1/ephemeral/_leaving'], ['GET', '/api/v1/ephemeral/_ready']] as const) {
      const r = await call(b.url, method, path, method === 'POST' ? { rings: [] } : undefined);
      assert.equal(r.status, 403, path);
      assert.equal(r.body.code, 'internal_only');
    }
  });

  test('a long poll is woken by a push; a window {count:5} holds the pop until 5 arrive', async () => {
    const q = uniqueName('eph');
    const parked = pop(b.url, q, '&wait=true&timeout=20000');
    await waitFor(async () => (await call(b.url, 'GET', `/metrics/prometheus`)).text.match(/queen_ephemeral_parked_consumers (\d+)/)?.[1] !== '0' || undefined, { timeoutMs: 10_000, what: 'parked pop' });
    const t0 = Date.now();
    await push(b.url, q, ['wake']);
    const r = await parked;
    assert.deepEqual(r.body.messages.map((m: any) => m.payload), ['wake']);
    assert.ok(Date.now() - t0 < 15_000, 'answered by the push, not by its timeout');

    const w = uniqueName('eph');
    await configure(b.url, w, { windowBuffer: { count: 5 } });
    const held = pop(b.url, w, '&wait=true&timeout=20000&batch=10');
    for (let i = 0; i < 5; i++) await push(b.url, w, [i]);
    const got = await held;
    assert.deepEqual(got.body.messages.map((m: any) => m.payload), [0, 1, 2, 3, 4]);
  });

  test('a window {count:5} that gets fewer than 5 answers at the pop timeout with every message that arrived (spec §1.15 "or timeout")', async () => {
    const w = uniqueName('eph');
    await configure(b.url, w, { windowBuffer: { count: 5 } });
    const held = pop(b.url, w, '&wait=true&timeout=4000&batch=10');
    await waitFor(async () => (await call(b.url, 'GET', `/metrics/prometheus`)).text.match(/queen_ephemeral_parked_consumers (\d+)/)?.[1] !== '0' || undefined, { timeoutMs: 10_000, what: 'parked pop' });
    for (let i = 0; i < 3; i++) await push(b.url, w, [i]);
    // Without the window the pop would answer with the first message alone.
    assert.deepEqual((await held).body.messages.map((m: any) => m.payload), [0, 1, 2]);
  });

  test('a pop whose client went away while parked is given nothing: the next consumer gets the message on its first attempt', async () => {
    const q = uniqueName('eph');
    const gone = new AbortController();
    const parked = fetch(`${b.url}/api/v1/ephemeral/pop?queue=${q}&group=g&wait=true&timeout=20000`, { signal: gone.signal }).catch(() => 'aborted');
    await waitFor(async () => (await call(b.url, 'GET', '/metrics/prometheus')).text.match(/queen_ephemeral_parked_consumers (\d+)/)?.[1] !== '0' || undefined, { timeoutMs: 10_000, what: 'parked pop' });
    gone.abort();
    assert.equal(await parked, 'aborted');
    await waitFor(async () => (await call(b.url, 'GET', '/metrics/prometheus')).text.match(/queen_ephemeral_parked_consumers (\d+)/)?.[1] === '0' || undefined, { timeoutMs: 10_000, what: 'the parked pop to leave' });
    await push(b.url, q, ['only']);
    const r = await pop(b.url, q, '&group=g');
    assert.deepEqual(r.body.messages.map((m: any) => [m.payload, m.attempts]), [['only', 1]]);
  });

  test('commitOnDelivery delivers at most once: nothing leased, acks answer unknown', async () => {
    const q = uniqueName('eph');
    await push(b.url, q, [1, 2]);
    const r = await pop(b.url, q, '&batch=10&commitOnDelivery=true');
    assert.equal(r.body.messages.length, 2);
    assert.equal((await ack(b.url, q, [{ id: r.body.messages[0].id }])).body.results[0].outcome, 'unknown');
    const depth = await call(b.url, 'GET', `/api/v1/ephemeral/queues/${q}/depth`);
    assert.equal(depth.status, 200);
    assert.equal(depth.body.pending, 0);
    assert.equal(depth.body.bytes, 0, 'memory released on delivery');
  });

  test('reset drops everything; delete removes memory and declaration; depth of a missing queue is 404', async () => {
    const q = uniqueName('eph');
    await configure(b.url, q, {});
    await push(b.url, q, [1, 2, 3]);
    assert.deepEqual((await call(b.url, 'POST', '/api/v1/ephemeral/reset', { queue: q })).body, { queue: q, dropped: 3 });
    assert.deepEqual((await call(b.url, 'POST', '/api/v1/ephemeral/reset', { queue: uniqueName('none') })).body.dropped, 0);
    assert.deepEqual((await call(b.url, 'DELETE', `/api/v1/ephemeral/queue/${q}`)).body, { queue: q, deleted: true, declared: true });
    assert.deepEqual((await call(b.url, 'DELETE', `/api/v1/ephemeral/queue/${q}`)).body, { queue: q, deleted: false, declared: false });
    const d = await call(b.url, 'GET', `/api/v1/ephemeral/queues/${q}/depth`);
    assert.equal(d.status, 404);
    assert.equal(d.body.code, 'ephemeral_queue_not_found');
  });

  test('deleting a queue answers its parked pops at once (empty), instead of leaving them parked on the queue that is gone', async () => {
    const q = uniqueName('eph');
    await push(b.url, q, ['before']);
    assert.equal((await pop(b.url, q, '&group=g&autoAck=true')).body.messages.length, 1);
    let settled = false;
    const parked = pop(b.url, q, '&group=g&wait=true&timeout=120000').finally(() => { settled = true; });
    await waitFor(async () => (await call(b.url, 'GET', '/api/v1/ephemeral/queues')).body.queues.find((r: { queue: string }) => r.queue === q)?.parked === 1 || undefined, { timeoutMs: 10_000, what: 'parked pop' });
    assert.equal((await call(b.url, 'DELETE', `/api/v1/ephemeral/queue/${q}`)).body.deleted, true);
    await waitFor(() => settled || undefined, { timeoutMs: 10_000, what: 'the parked pop answered after the delete' });
    assert.deepEqual((await parked).body, { queue: q, messages: [] });
    // The queue made again by a push serves a new long-poll at once.
    assert.equal((await push(b.url, q, ['after'])).status, 201);
    const next = await pop(b.url, q, '&group=g&wait=true&timeout=120000&autoAck=true');
    assert.deepEqual(next.body.messages.map((m: { payload: unknown }) => m.payload), ['after']);
  });

  test('ephemeral queues stay out of the durable listings and series are exported', async () => {
    const q = uniqueName('eph');
    await push(b.url, q, [1]);
    const durable = await call(b.url, 'GET', '/api/v1/resources/queues');
    assert.ok(!JSON.stringify(durable.body).includes(q));
    const m = (await call(b.url, 'GET', '/metrics/prometheus')).text;
    for (const s of ['queen_ephemeral_pushed_total', 'queen_ephemeral_popped_total', 'queen_ephemeral_acked_total', 'queen_ephemeral_dropped_total', 'queen_ephemeral_bytes', 'queen_ephemeral_queues']) {
      assert.match(m, new RegExp(`^${s}`, 'm'), s);
    }
  });
});

describe('ephemeral limits, kill switch and restart', () => {
  test('the node byte ceiling answers 503 ephemeral_unavailable and memory never passes it', async () => {
    const b = await startBroker({ env: { QUEEN_EPHEMERAL_MAX_BYTES: '1000' } });
    try {
      const q = uniqueName('eph');
      assert.equal((await push(b.url, q, ['x'.repeat(900)])).status, 201);
      const r = await push(b.url, q, ['y'.repeat(200)]);
      assert.equal(r.status, 503);
      assert.equal(r.body.code, 'ephemeral_unavailable');
      const sys = await call(b.url, 'GET', '/api/v1/system/ephemeral');
      assert.equal(sys.body.cellBytes, 902);
      assert.ok(sys.body.cellBytes <= sys.body.cellMaxBytes);
    } finally {
      await b.stop();
    }
  });

  test('the tenant message rate answers 429 rate_limited with Retry-After', async () => {
    const b = await startBroker({ env: { QUEEN_EPHEMERAL_RATE: '1', QUEEN_EPHEMERAL_BURST: '3' } });
    try {
      const q = uniqueName('eph');
      assert.equal((await push(b.url, q, [1, 2, 3])).status, 201);
      const r = await push(b.url, q, [4, 5]);
      assert.equal(r.status, 429);
      assert.equal(r.body.code, 'rate_limited');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    } finally {
      await b.stop();
    }
  });

  test('the kill switch answers 503 ephemeral_disabled on every route, survives a restart, and turns back on', async () => {
    const b = await startBroker();
    let b2: BrokerHandle | undefined;
    try {
      assert.equal((await call(b.url, 'POST', '/api/v1/system/ephemeral', {})).status, 400);
      const off = await call(b.url, 'POST', '/api/v1/system/ephemeral', { enabled: false });
      assert.equal(off.body.ephemeralEnabled, false);
      const routes: [string, string, unknown][] = [
        ['POST', '/api/v1/ephemeral/push', { queue: 'a', messages: [{ payload: 1 }] }], ['GET', '/api/v1/ephemeral/pop?queue=a', undefined],
        ['POST', '/api/v1/ephemeral/ack', { queue: 'a', acks: [] }], ['POST', '/api/v1/ephemeral/configure', { queue: 'a' }],
        ['POST', '/api/v1/ephemeral/reset', { queue: 'a' }], ['DELETE', '/api/v1/ephemeral/queue/a', undefined],
        ['GET', '/api/v1/ephemeral/queues', undefined], ['GET', '/api/v1/ephemeral/queues/a/depth', undefined],
      ];
      for (const [method, path, body] of routes) {
        const r = await call(b.url, method, path, body);
        assert.equal(r.status, 503, `${method} ${path}`);
        assert.equal(r.body.code, 'ephemeral_disabled');
        assert.ok(r.headers.get('retry-after'));
      }
      await b.stop();
      b2 = await startBroker({ dataDir: b.dataDir });
      assert.equal((await call(b2.url, 'GET', '/api/v1/ephemeral/queues')).status, 503, 'stored: still off after a restart');
      assert.equal((await call(b2.url, 'POST', '/api/v1/system/ephemeral', { enabled: true })).body.ephemeralEnabled, true);
      assert.equal((await call(b2.url, 'GET', '/api/v1/ephemeral/queues')).status, 200);
    } finally {
      await b.stop();
      await b2?.stop();
    }
  });

  test('after a restart a declared queue comes back empty, an implicit one is gone, and old ids answer stale', async () => {
    const b = await startBroker();
    let b2: BrokerHandle | undefined;
    try {
      const declared = uniqueName('decl');
      const implicit = uniqueName('impl');
      await configure(b.url, declared, { maxLength: 50 });
      await push(b.url, declared, [1, 2]);
      await push(b.url, implicit, [3]);
      const id = (await pop(b.url, declared)).body.messages[0].id;
      await b.kill();
      b2 = await startBroker({ dataDir: b.dataDir });
      const list = (await call(b2.url, 'GET', '/api/v1/ephemeral/queues')).body;
      const names = list.queues.map((r: any) => r.queue);
      assert.ok(names.includes(declared));
      assert.ok(!names.includes(implicit));
      const row = list.queues.find((r: any) => r.queue === declared);
      assert.deepEqual([row.tier, row.depth, row.options.maxLength], ['declared', 0, 50]);
      assert.deepEqual((await pop(b2.url, declared, '&batch=10')).body.messages, []);
      assert.equal((await ack(b2.url, declared, [{ id }])).body.results[0].outcome, 'stale');
    } finally {
      await b.stop();
      await b2?.stop();
    }
  });
});
