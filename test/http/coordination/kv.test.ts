/** KV batch route (docs/http-api.md#kv), black-box over real HTTP. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

let b: BrokerHandle;
let n = 0;
/** A namespace unique to one test. */
const ns = () => `t${Date.now().toString(36)}-${n++}`;
const kv = (ops: unknown) => call(b.url, 'POST', '/api/v1/kv', ops);

before(async () => { b = await startBroker(); });
after(async () => { await b.stop(); });

describe('KV operations', () => {
  test('put, get, getMany, putIfAbsent, delete, incr, check: index-aligned results', async () => {
    const s = ns();
    const r = await kv({ operations: [
      { op: 'put', ns: s, key: 'a', value: { x: 1 }, forever: true },
      { op: 'get', ns: s, key: 'a' },
      { op: 'get', ns: s, key: 'nope' },
      { op: 'putIfAbsent', ns: s, key: 'a', value: 2, forever: true },
      { op: 'putIfAbsent', ns: s, key: 'b', value: null, ttlSeconds: 60 },
      { op: 'getMany', ns: s, keys: ['a', 'b', 'c'] },
      { op: 'incr', ns: s, key: 'n', forever: true },
      { op: 'incr', ns: s, key: 'n', delta: 4, max: 5, forever: true },
      { op: 'incr', ns: s, key: 'n', delta: 1, max: 5, forever: true },
      { op: 'incr', ns: s, key: 'n', delta: -10, min: 0, forever: true },
      { op: 'incr', ns: s, key: 'a', forever: true },
      { op: 'check', ns: s, key: 'a', expect: 0 },
      { op: 'check', ns: s, key: 'c', expect: 0 },
      { op: 'delete', ns: s, key: 'a' },
      { op: 'delete', ns: s, key: 'a' },
      { op: 'get', ns: s, key: 'a' },
    ] });
    assert.equal(r.status, 200);
    assert.equal(r.body.ok, true);
    const x = r.body.results;
    assert.deepEqual(x.map((e: any) => e.index), [...x.keys()]);
    const v = x[0].version;
    assert.ok(Number.isSafeInteger(v) && v >= 1);
    assert.deepEqual([x[0].applied, x[0].value], [true, { x: 1 }]);
    assert.deepEqual([x[1].found, x[1].value, x[1].version, x[1].expiresAt], [true, { x: 1 }, v, null]);
    assert.equal(typeof x[1].updatedAt, 'string');
    assert.deepEqual([x[2].found, x[2].value, x[2].version], [false, null, 0]);
    assert.deepEqual([x[3].applied, x[3].reason, x[3].version, x[3].value], [false, 'exists', v, { x: 1 }]);
    assert.equal(x[4].applied, true);
    assert.equal(x[4].value, null);
    assert.ok(Date.parse(x[4].expiresAt) > Date.now() + 50_000);
    assert.deepEqual(x[5].rows.map((row: any) => [row.key, row.value]), [['a', { x: 1 }], ['b', null]]);
    assert.deepEqual(x[5].missing, ['c']);
    assert.deepEqual([x[6].applied, x[6].value], [true, 1]);
    assert.deepEqual([x[7].applied, x[7].value], [true, 5]);
    assert.deepEqual([x[8].applied, x[8].reason, x[8].value], [false, 'limit', 5]);
    assert.deepEqual([x[9].applied, x[9].reason], [false, 'limit']);
    assert.deepEqual([x[10].applied, x[10].reason], [false, 'type']);
    assert.deepEqual([x[11].applied, x[11].reason, x[11].version], [false, 'exists', v]);
    assert.equal(x[12].applied, true);
    assert.deepEqual([x[13].applied, x[13].version], [true, v]);
    assert.deepEqual([x[14].applied, x[14].reason], [false, 'absent']);
    assert.equal(x[15].found, false);
  });

  test('expect: 0 = must not exist, N = at version N; verdicts are 200', async () => {
    const s = ns();
    const first = await kv([
      { op: 'put', ns: s, key: 'k', value: 'v1', forever: true, expect: 0 },
      { op: 'put', ns: s, key: 'k', value: 'v2', forever: true, expect: 0 },
    ]);
    assert.deepEqual(first.body.results.map((e: any) => [e.applied, e.reason ?? null]), [[true, null], [false, 'exists']]);
    const v1 = first.body.results[0].version;
    const r = await kv([
      { op: 'put', ns: s, key: 'k', value: 'v2', forever: true, expect: v1 },
      { op: 'put', ns: s, key: 'k', value: 'v3', forever: true, expect: v1 },
      { op: 'put', ns: s, key: 'other', value: 1, forever: true, expect: 3 },
      { op: 'delete', ns: s, key: 'k', expect: v1 },
      { op: 'check', ns: s, key: 'k', expect: v1 + 1 },
    ]);
    assert.equal(r.status, 200);
    const x = r.body.results;
    assert.deepEqual(x.map((e: any) => e.applied), [true, false, false, false, true]);
    assert.deepEqual(x.map((e: any) => e.reason ?? null), [null, 'version', 'absent', 'version', null]);
    assert.deepEqual([x[0].version, x[1].version, x[1].value], [v1 + 1, v1 + 1, 'v2'], 'a lost expectation reports the current version and value');
  });

  test('versions are fencing tokens: monotone per key, never reused after delete', async () => {
    const s = ns();
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await kv([
        { op: 'put', ns: s, key: 'k', value: i, forever: true },
        { op: 'put', ns: s, key: 'k', value: i, forever: true },
        { op: 'delete', ns: s, key: 'k' },
      ]);
      seen.push(r.body.results[0].version, r.body.results[1].version);
    }
    const again = await kv([{ op: 'putIfAbsent', ns: s, key: 'k', value: 'x', forever: true }]);
    seen.push(again.body.results[0].version);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `versions grow: ${seen.join(',')}`);
  });

  test('a lost required precondition answers 200 ok:false and writes nothing', async () => {
    const s = ns();
    const gv = (await kv([{ op: 'put', ns: s, key: 'guard', value: 'g', forever: true }])).body.results[0].version;
    const r = await kv({ operations: [
      { op: 'put', ns: s, key: 'w1', value: 1, forever: true },
      { op: 'incr', ns: s, key: 'ctr', forever: true },
      { op: 'delete', ns: s, key: 'guard' },
      { op: 'check', ns: s, key: 'guard', expect: gv, required: true },
      { op: 'put', ns: s, key: 'w2', value: 2, forever: true },
    ] });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { ok: false, reason: 'kv_precondition', failedIndex: 3, kvReason: 'absent', version: 0, value: null });
    const g = await kv([{ op: 'getMany', ns: s, keys: ['w1', 'ctr', 'w2', 'guard'] }]);
    assert.deepEqual(g.body.results[0].missing, ['w1', 'ctr', 'w2']);
    assert.deepEqual(g.body.results[0].rows.map((row: any) => [row.key, row.version]), [['guard', gv]]);
    const lost = await kv([{ op: 'put', ns: s, key: 'guard', value: 'z', forever: true, expect: gv + 7, required: true }]);
    assert.deepEqual(lost.body, { ok: false, reason: 'kv_precondition', failedIndex: 0, kvReason: 'version', version: gv, value: 'g' });
    const held = await kv([{ op: 'check', ns: s, key: 'guard', expect: gv, required: true }, { op: 'put', ns: s, key: 'w3', value: 3, forever: true }]);
    assert.equal(held.body.ok, true);
    assert.equal(held.body.results[1].applied, true);
  });

  test('expired keys are invisible at once, then pruned by the sweep', async () => {
    const s = ns();
    const w = await kv([
      { op: 'put', ns: s, key: 'short', value: 1, ttlSeconds: 1 },
      { op: 'put', ns: s, key: 'long', value: 2, ttlSeconds: 3600 },
    ]);
    assert.equal(w.body.ok, true);
    assert.equal((await kv([{ op: 'get', ns: s, key: 'short' }])).body.results[0].found, true);
    const expiresAt = Date.parse(w.body.results[0].expiresAt);
    assert.ok(Number.isFinite(expiresAt), `put answered expiresAt ${w.body.results[0].expiresAt}`);
    await waitFor(() => Date.now() > expiresAt, { what: "the clock to pass 'short''s expiresAt" });
    const r = await kv([
      { op: 'get', ns: s, key: 'short' },
      { op: 'getPrefix', ns: s, prefix: 's' },
      { op: 'check', ns: s, key: 'short', expect: 0 },
    ]);
    assert.equal(r.body.results[0].found, false);
    assert.deepEqual(r.body.results[1].rows, []);
    assert.equal(r.body.results[2].applied, true);
    await waitFor(async () => {
      const list = await call(b.url, 'GET', '/api/v1/resources/kv/namespaces');
      return list.body.namespaces.find((x: any) => x.ns === s)?.keys === 1;
    }, { what: 'the sweep to remove the expired row' });
    const again = await kv([{ op: 'putIfAbsent', ns: s, key: 'short', value: 3, ttlSeconds: 60 }]);
    assert.ok(again.body.results[0].version > w.body.results[0].version, 'a pruned key does not reuse its version');
  });

  test('getPrefix pages with after/nextAfter without skips or repeats, while keys are added', async () => {
    const s = ns();
    const keys = Array.from({ length: 137 }, (_, i) => `job/${String(i).padStart(4, '0')}`);
    await kv(keys.map((key) => ({ op: 'put', ns: s, key, value: key, forever: true })).concat([
      { op: 'put', ns: s, key: 'jo', value: 0, forever: true } as never, { op: 'put', ns: s, key: 'jobz', value: 0, forever: true } as never,
    ]));
    const got: string[] = [];
    let afterKey: string | null = null;
    let pages = 0;
    for (let page = 0; page < 100; page++) {
      pages++;
      const r: any = await kv([{ op: 'getPrefix', ns: s, prefix: 'job/', after: afterKey, limit: 10, keysOnly: page % 2 === 0 }]);
      const res = r.body.results[0];
      for (const row of res.rows) {
        got.push(row.key);
        assert.equal('value' in row, page % 2 !== 0, 'keysOnly leaves values out');
      }
      // a key added behind the cursor is not seen; one ahead of it is
      await kv([{ op: 'put', ns: s, key: `job/0000-late-${page}`, value: 1, forever: true }]);
      if (!res.truncated) { assert.equal(res.nextAfter, null); break; }
      assert.equal(res.nextAfter, res.rows[res.rows.length - 1].key);
      afterKey = res.nextAfter;
    }
    assert.equal(new Set(got).size, got.length, 'no repeats');
    for (const k of keys) assert.ok(got.includes(k), `no skip: ${k}`);
    assert.ok(!got.includes('jo') && !got.includes('jobz'));
    assert.equal(pages, 14);
    const clamp = await kv([{ op: 'getPrefix', ns: s, prefix: 'job/', limit: 5000 }]);
    assert.equal(clamp.body.results[0].rows.length, 137 + pages, 'limit is clamped to 1000, not refused');
  });

  test('namespace and key rules, value limit, bad input codes', async () => {
    const s = ns();
    const cases: [unknown, number, string][] = [
      [{}, 400, 'kv_bad_request'],
      [{ operations: [] }, 400, 'kv_bad_request'],
      [[{ op: 'frob', ns: s, key: 'k' }], 400, 'kv_unknown_op'],
      [[{ op: 'get', ns: 'Upper', key: 'k' }], 400, 'kv_bad_namespace'],
      [[{ op: 'get', ns: '-x', key: 'k' }], 400, 'kv_bad_namespace'],
      [[{ op: 'get', ns: 'a'.repeat(65), key: 'k' }], 400, 'kv_bad_namespace'],
      [[{ op: 'get', ns: s, key: '' }], 400, 'kv_bad_key'],
      [[{ op: 'get', ns: s, key: 'é'.repeat(257) }], 400, 'kv_bad_key'],
      [[{ op: 'put', ns: s, key: 'k', forever: true }], 400, 'kv_value_required'],
      [[{ op: 'put', ns: s, key: 'k', value: 1 }], 400, 'kv_expiry_not_specified'],
      [[{ op: 'put', ns: s, key: 'k', value: 1, ttlSeconds: 0 }], 400, 'kv_bad_ttl'],
      [[{ op: 'put', ns: s, key: 'k', value: 1, ttlSeconds: 1.5 }], 400, 'kv_bad_ttl'],
      [[{ op: 'put', ns: s, key: 'k', value: 1, ttlSeconds: 5, forever: true }], 400, 'kv_bad_ttl'],
      [[{ op: 'incr', ns: s, key: 'k' }], 400, 'kv_expiry_not_specified'],
      [[{ op: 'put', ns: s, key: 'k', value: 1, forever: true, expect: -1 }], 400, 'kv_bad_expect'],
      [[{ op: 'put', ns: s, key: 'k', value: 1, forever: true, expect: 'x' }], 400, 'kv_bad_expect'],
      [[{ op: 'putIfAbsent', ns: s, key: 'k', value: 1, forever: true, expect: 3 }], 400, 'kv_bad_expect'],
      [[{ op: 'check', ns: s, key: 'k' }], 400, 'kv_bad_expect'],
      [[{ op: 'getPrefix', ns: s }], 400, 'kv_prefix_required'],
      [[{ op: 'getPrefix', ns: s, prefix: '' }], 400, 'kv_prefix_required'],
      [[{ op: 'getPrefix', ns: s, prefix: 'a', limit: 0 }], 400, 'kv_bad_limit'],
      [[{ op: 'incr', ns: s, key: 'k', delta: 0.5, forever: true }], 400, 'kv_bad_incr'],
      [[{ op: 'getMany', ns: s, keys: [] }], 400, 'kv_bad_key'],
    ];
    for (const [body, status, code] of cases) {
      const r = await kv(body);
      assert.equal(r.status, status, `${JSON.stringify(body)} → ${r.text}`);
      assert.equal(r.body.code, code, JSON.stringify(body));
      assert.equal(r.body.error, 'kv_bad_request');
      assert.equal(typeof r.body.reason, 'string');
    }
    // a bad op anywhere refuses the whole call: nothing written
    const mixed = await kv([{ op: 'put', ns: s, key: 'ok', value: 1, forever: true }, { op: 'nope', ns: s }]);
    assert.equal(mixed.status, 400);
    assert.equal((await kv([{ op: 'get', ns: s, key: 'ok' }])).body.results[0].found, false);
    // a 512-byte key is fine; the value cap is QUEEN_MAX_PAYLOAD_BYTES
    assert.equal((await kv([{ op: 'put', ns: s, key: 'k'.repeat(512), value: 1, forever: true }])).body.results[0].applied, true);
  });
});

describe('KV path and console routes', () => {
  test('GET|PUT|DELETE /api/v1/kv/:ns/<key with slashes>', async () => {
    const s = ns();
    const put = await call(b.url, 'PUT', `/api/v1/kv/${s}/users/42/profile`, { value: { name: 'ada' }, forever: true });
    assert.equal(put.status, 200);
    assert.deepEqual([put.body.applied, put.body.key, put.body.ns], [true, 'users/42/profile', s]);
    const viaBatch = await kv([{ op: 'get', ns: s, key: 'users/42/profile' }]);
    assert.deepEqual(viaBatch.body.results[0].value, { name: 'ada' });
    const get = await call(b.url, 'GET', `/api/v1/kv/${s}/users/42/profile`);
    assert.deepEqual([get.status, get.body.found, get.body.value], [200, true, { name: 'ada' }]);
    const stale = await call(b.url, 'PUT', `/api/v1/kv/${s}/users/42/profile`, { value: 1, forever: true, expect: put.body.version + 100 });
    assert.deepEqual([stale.status, stale.body.applied, stale.body.reason], [200, false, 'version']);
    assert.equal((await call(b.url, 'PUT', `/api/v1/kv/${s}/x`, { value: 1 })).body.code, 'kv_expiry_not_specified');
    assert.equal((await call(b.url, 'GET', `/api/v1/kv/${s}/x?y=1`)).body.code, 'kv_query_not_allowed');
    assert.equal((await call(b.url, 'GET', `/api/v1/kv/BAD/x`)).body.code, 'kv_bad_namespace');
    const del = await call(b.url, 'DELETE', `/api/v1/kv/${s}/users/42/profile`);
    assert.deepEqual([del.status, del.body.applied], [200, true]);
    const gone = await call(b.url, 'GET', `/api/v1/kv/${s}/users/42/profile`);
    assert.deepEqual([gone.status, gone.body.found], [200, false]);
  });

  test('console: namespaces and list', async () => {
    const s = ns();
    await kv(['a', 'b', 'c'].map((key) => ({ op: 'put', ns: s, key, value: key, forever: true })));
    const names = await call(b.url, 'GET', '/api/v1/resources/kv/namespaces');
    assert.equal(names.status, 200);
    assert.deepEqual(names.body.namespaces.find((x: any) => x.ns === s), { ns: s, keys: 3 });
    const p1 = await call(b.url, 'POST', '/api/v1/resources/kv/list', { ns: s, limit: 2 });
    assert.deepEqual([p1.body.rows.map((r: any) => r.key), p1.body.truncated, p1.body.nextAfter], [['a', 'b'], true, 'b']);
    const p2 = await call(b.url, 'POST', '/api/v1/resources/kv/list', { ns: s, after: 'b', keysOnly: true });
    assert.deepEqual([p2.body.rows, p2.body.truncated], [[{ key: 'c', version: p2.body.rows[0].version, expiresAt: null, updatedAt: p2.body.rows[0].updatedAt }], false]);
    assert.equal((await call(b.url, 'POST', '/api/v1/resources/kv/list', {})).body.code, 'kv_bad_namespace');
  });

  // A key in a query string lands in the access log of every hop; the reference's console reads
  // refuse any query string, the selector that reads no parameter included (queen-mq/queen:
  // CHANGELOG.md, 1.6.0 "A KV browser, on two new read-only routes"), as the key routes do.
  test('console reads refuse a query string', async () => {
    const s = ns();
    await kv([{ op: 'put', ns: s, key: 'secret-key', value: 1, forever: true }]);
    for (const [method, path, body] of [
      ['GET', '/api/v1/resources/kv/namespaces?limit=5', undefined],
      ['POST', `/api/v1/resources/kv/list?after=secret-key`, { ns: s }],
    ] as const) {
      const r = await call(b.url, method, path, body);
      assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
      assert.equal(r.body.code, 'kv_query_not_allowed');
      assert.ok(!r.text.includes('secret-key'), 'the refusal does not echo the query');
    }
  });
});
