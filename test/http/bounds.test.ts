/**
 * Every range and count a request can name is bounded: time windows are clamped to what the
 * broker holds (never past now), limits and offsets outside their documented bounds answer
 * `400 invalid_request` naming the bound, and paged listings report the true total (or none),
 * never the page length.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';

let b: BrokerHandle;
before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

/** Resident set size of the broker process in bytes, from /proc. */
function rss(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${b.proc.pid}/status`, 'utf8'));
  assert.ok(m, 'VmRSS readable');
  return Number(m[1]) * 1024;
}

/** Body bound for a clamped status/analytics answer: a day of minutes is well under this. */
const MAX_BODY = 2 * 1024 * 1024;
/** RSS growth allowed across all the extreme requests of one test. */
const MAX_RSS_GROWTH = 64 * 1024 * 1024;

const enc = encodeURIComponent;
const FAR_PAST = '1970-01-01T00:00:00Z';
const FAR_FUTURE = '9999-12-31T23:59:59Z';

describe('time windows are clamped to the retained activity and to now', () => {
  test('status and analytics with extreme windows answer a bounded body; RSS stays flat; /health keeps answering', async () => {
    const q = uniqueName();
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1 }] })).status, 201);
    const rss0 = rss();
    const yearAhead = new Date(Date.now() + 365 * 86_400_000).toISOString();
    const windows = [
      `to=${enc(yearAhead)}`,
      `from=${enc(FAR_PAST)}&to=${enc(FAR_FUTURE)}`,
      `from=${enc(FAR_PAST)}&to=${enc('1970-01-02T00:00:00Z')}`,
      `from=${enc(FAR_FUTURE)}&to=${enc(FAR_FUTURE)}`,
    ];
    for (const w of windows) {
      for (const route of ['/api/v1/status', `/api/v1/status?queue=${q}`, '/api/v1/status/analytics', '/api/v1/status/analytics?interval=hour', `/api/v1/status/analytics?queue=${q}`]) {
        const path = `${route}${route.includes('?') ? '&' : '?'}${w}`;
        const r = await call(b.url, 'GET', path);
        assert.equal(r.status, 200, `${path}: ${r.text.slice(0, 300)}`);
        assert.ok(r.text.length < MAX_BODY, `${path}: body ${r.text.length} bytes`);
        const range = r.body.timeRange ?? r.body;
        const to = Date.parse(range.to);
        assert.ok(to <= Date.now(), `${path}: to ${range.to} is past now`);
        assert.ok(Date.parse(range.from) <= to, `${path}: from ${range.from} after to ${range.to}`);
        const points = r.body.throughput ?? r.body.series;
        assert.ok(Array.isArray(points) && points.length <= 24 * 60 + 1, `${path}: ${points?.length} points`);
        assert.equal((await call(b.url, 'GET', '/health')).status, 200);
      }
    }
    assert.ok(rss() - rss0 < MAX_RSS_GROWTH, `RSS grew from ${rss0} to ${rss()}`);
  });

  test('a window ending before it starts is refused with 400 invalid_request', async () => {
    for (const route of ['/api/v1/status', '/api/v1/status/analytics', '/api/v1/messages', '/api/v1/dlq']) {
      const r = await call(b.url, 'GET', `${route}?from=${enc(FAR_FUTURE)}&to=${enc(FAR_PAST)}`);
      assert.equal(r.status, 400, `${route}: ${r.text}`);
      assert.equal(r.body.code, 'invalid_request', `${route}: ${r.text}`);
    }
  });

  test('messages, DLQ and timers with extreme windows answer bounded pages', async () => {
    for (const path of [
      `/api/v1/messages?from=${enc(FAR_PAST)}&to=${enc(FAR_FUTURE)}`,
      `/api/v1/dlq?from=${enc(FAR_PAST)}&to=${enc(FAR_FUTURE)}`,
    ]) {
      const r = await call(b.url, 'GET', path);
      assert.equal(r.status, 200, `${path}: ${r.text.slice(0, 300)}`);
      assert.ok(r.text.length < MAX_BODY, path);
    }
  });
});

describe('limits and offsets outside their bounds are refused with the bound stated', () => {
  const q = uniqueName();
  const listings = [
    '/api/v1/status/queues', '/api/v1/dlq', '/api/v1/messages', '/api/v1/traces/names', '/api/v1/traces/by-name/x',
    '/api/v1/resources/partitions', `/api/v1/timers/${q}`,
  ];
  const bad = ['1e15', '-1', '1.5', '0x10', '1000000000000000', '99999999999999999999999999', 'abc'];

  test('limit', async () => {
    for (const route of listings) {
      for (const v of bad) {
        const r = await call(b.url, 'GET', `${route}?limit=${enc(v)}`);
        assert.equal(r.status, 400, `${route}?limit=${v}: ${r.text}`);
        assert.equal(r.body.code, 'invalid_request', `${route}?limit=${v}: ${r.text}`);
        assert.match(r.body.error, /limit/, `${route}?limit=${v}: ${r.text}`);
        if (v === '1000000000000000') assert.match(r.body.error, /between 1 and \d+/, `${route}: the bound is stated`);
      }
    }
  });

  test('offset', async () => {
    for (const route of ['/api/v1/status/queues', '/api/v1/dlq', '/api/v1/traces/names', '/api/v1/traces/by-name/x']) {
      for (const v of bad) {
        const r = await call(b.url, 'GET', `${route}?offset=${enc(v)}`);
        assert.equal(r.status, 400, `${route}?offset=${v}: ${r.text}`);
        assert.equal(r.body.code, 'invalid_request', `${route}?offset=${v}: ${r.text}`);
        assert.match(r.body.error, /offset/, `${route}?offset=${v}: ${r.text}`);
      }
    }
  });

  test('a repeated query parameter is refused by the query schema with the error envelope', async () => {
    const r = await call(b.url, 'GET', '/api/v1/status/queues?limit=1&limit=2');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.code, 'invalid_request', r.text);
    assert.match(r.body.error, /querystring\.limit/, r.text);
  });

  test('pop batch, partitions, timeout and lagging minLagSeconds', async () => {
    for (const path of [
      `/api/v1/pop/queue/${q}?batch=1000000000000000`, `/api/v1/pop/queue/${q}?batch=-1`, `/api/v1/pop/queue/${q}?batch=1e15`,
      `/api/v1/pop/queue/${q}?partitions=1000000000000000`, `/api/v1/pop/queue/${q}?timeout=1000000000000000`,
      `/api/v1/consumer-groups/lagging?minLagSeconds=1000000000000000`, `/api/v1/consumer-groups/lagging?minLagSeconds=-5`,
    ]) {
      const r = await call(b.url, 'GET', path);
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.equal(r.body.code, 'invalid_request', `${path}: ${r.text}`);
    }
  });

  test('KV list limit: huge clamps to the maximum page, negative or fractional is refused', async () => {
    const ns = uniqueName('ns');
    assert.equal((await call(b.url, 'PUT', `/api/v1/kv/${ns}/k`, { value: 1, forever: true })).status, 200);
    const big = await call(b.url, 'POST', '/api/v1/resources/kv/list', { ns, limit: 1e15 });
    assert.equal(big.status, 200, big.text);
    assert.equal(big.body.rows.length, 1);
    for (const limit of [-1, 1.5, '10']) {
      const r = await call(b.url, 'POST', '/api/v1/resources/kv/list', { ns, limit });
      assert.equal(r.status, 400, `${limit}: ${r.text}`);
    }
  });
});

describe('paged listings report the true total', () => {
  async function deadLetter(queue: string, transactionId: string): Promise<void> {
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue, partition: 'p', payload: 1, transactionId }] })).status, 201);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${enc(queue)}/partition/p?batch=1`);
    assert.equal(p.status, 200, p.text);
    const m = p.body.messages[0];
    const a = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq', error: 'boom' });
    assert.equal(a.body[0].success, true, a.text);
  }

  test('dlq: total counts every matching dead letter, not the page', async () => {
    const q = uniqueName('dq');
    for (const t of ['a', 'b', 'c']) await deadLetter(q, t);
    const r = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}&limit=1`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.messages.length, 1);
    assert.equal(r.body.total, 3);
    const past = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}&limit=1&offset=2`);
    assert.equal(past.body.messages.length, 1);
    assert.equal(past.body.total, 3);
    const none = await call(b.url, 'GET', `/api/v1/dlq?queue=${q}&limit=1&to=${enc(FAR_PAST)}`);
    assert.equal(none.body.total, 0);
  });

  test('traces by name and trace names: totals count every row, not the page', async () => {
    const q = uniqueName();
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 1, transactionId: 'tx' }] })).status, 201);
    const p = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=1`);
    const pid = p.body.messages[0].partitionId;
    const name = uniqueName('trace');
    for (let i = 0; i < 3; i++) {
      const t = await call(b.url, 'POST', '/api/v1/traces', { transactionId: 'tx', partitionId: pid, traceNames: [name, `${name}-${i}`], data: i });
      assert.equal(t.status, 201, t.text);
    }
    const byName = await call(b.url, 'GET', `/api/v1/traces/by-name/${name}?limit=1`);
    assert.equal(byName.body.traces.length, 1);
    assert.equal(byName.body.total, 3);
    const names = await call(b.url, 'GET', '/api/v1/traces/names?limit=1');
    assert.equal(names.body.trace_names.length, 1);
    assert.ok(names.body.total >= 4, `total ${names.body.total}`);
  });

  test('messages: no total that is only the page length', async () => {
    const q = uniqueName();
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [1, 2, 3].map((payload) => ({ queue: q, payload })) })).status, 201);
    const r = await call(b.url, 'GET', `/api/v1/messages?queue=${q}&limit=1`);
    assert.equal(r.body.messages.length, 1);
    assert.ok(r.body.total === undefined || r.body.total === 3, `total ${r.body.total}`);
  });
});
