/**
 * Quotas and limits on the proxy (docs/proxy.md#quotas-and-limits): a cluster's request rate
 * enforced by default (429 + Retry-After), shadow mode with QUEEN_PROXY_ENFORCE=false (let through,
 * counted), cluster status refusals, the body cap, and the per-IP edge bucket that a forged
 * X-Forwarded-For from an untrusted peer cannot move.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import zlib from 'node:zlib';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { bootstrap, cp, CP_TOKEN, startProxied, withKey } from './helpers.js';

describe('cluster limits', () => {
  test('enforced by default: over max_req_per_sec/req_burst answers 429 rate_limited with Retry-After; status refusals', async () => {
    const b = await startProxied({ QUEEN_PROXY_MAX_BODY_BYTES: '4096' });
    try {
      const t = await bootstrap(b.url, 'quota');
      assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, { max_req_per_sec: 1, req_burst: 2 })).status, 200);
      const statuses: number[] = [];
      let refused;
      for (let i = 0; i < 4; i++) {
        const r = await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/q');
        statuses.push(r.status);
        if (r.status === 429) refused = r;
      }
      assert.ok(refused, `a request over the burst is refused: ${statuses.join(',')}`);
      assert.equal(refused.body.code, 'rate_limited');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      // max_req_per_sec 0: the burst and nothing after it (limiter alone reads a rate of 0 as unlimited)
      assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, { max_req_per_sec: 0, req_burst: 2 })).status, 200);
      const zero: number[] = [];
      for (let i = 0; i < 3; i++) zero.push((await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/q')).status);
      assert.deepEqual(zero, [204, 204, 429]);
      assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, {})).status, 200, 'back to the plan: unlimited');
      // size cap, always enforced
      const big = await withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: 'q', payload: 'x'.repeat(5000) }] });
      assert.deepEqual([big.status, big.body.code], [413, 'payload_too_large']);
      // lifecycle status
      await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/status`, { status: 'push_blocked' });
      assert.equal((await withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: 'q', payload: 1 }] })).body.code, 'push_blocked');
      assert.equal((await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/q')).status, 204, 'reads go on');
      await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/status`, { status: 'suspended' });
      assert.deepEqual((await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/q')).body, { error: 'cluster suspended', code: 'cluster_suspended' });
    } finally {
      await b.stop();
    }
  });

  test('the body cap counts the bytes read, not Content-Length: chunked and compressed bodies over it answer 413 payload_too_large and store nothing', async () => {
    const b = await startProxied({ QUEEN_PROXY_MAX_BODY_BYTES: '4096' });
    /** POST /api/v1/push with `body` written in 512-byte chunks (no Content-Length), optionally with a Content-Encoding. */
    const send = (key: string, body: Buffer, encoding?: string) => new Promise<{ status: number; body: any }>((resolve, reject) => {
      const u = new URL(b.url);
      const req = http.request({ host: u.hostname, port: u.port, path: '/api/v1/push', method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...(encoding ? { 'content-encoding': encoding } : {}) } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      });
      req.on('error', reject);
      for (let i = 0; i < body.length; i += 512) req.write(body.subarray(i, i + 512));
      req.end();
    });
    try {
      const t = await bootstrap(b.url, 'chunked');
      const q = uniqueName('cap');
      const body = (n: number) => Buffer.from(JSON.stringify({ items: [{ queue: q, payload: 'x'.repeat(n) }] }));
      for (const [what, r] of [
        ['chunked', await send(t.key, body(5000))],
        ['gzip (small on the wire, over the cap once decoded)', await send(t.key, zlib.gzipSync(body(50_000)), 'gzip')],
      ] as const) {
        assert.deepEqual([r.status, r.body?.code], [413, 'payload_too_large'], `${what}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error, 'request body over 4096 bytes', what);
      }
      const under = await send(t.key, body(1000));
      assert.equal(under.status, 201, JSON.stringify(under.body));
      const zipped = await send(t.key, zlib.gzipSync(body(2000)), 'gzip');
      assert.equal(zipped.status, 201, JSON.stringify(zipped.body));
      const popped = await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}?batch=10&autoAck=true`);
      assert.deepEqual(popped.body.messages.map((m: { data: string }) => m.data.length), [1000, 2000], 'only the bodies within the cap were stored');
      // The plan's max_payload_bytes (a Produce cap below the listener's) is counted the same way.
      assert.equal((await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, { max_payload_bytes: 1500 })).status, 200);
      const overPlan = await send(t.key, body(2000));
      assert.deepEqual([overPlan.status, overPlan.body?.code, overPlan.body?.error], [413, 'payload_too_large', 'request body over 1500 bytes']);
    } finally {
      await b.stop();
    }
  });

  test('shadow mode (QUEEN_PROXY_ENFORCE=false): over-limit requests pass, logged and counted', async () => {
    const b = await startProxied({ QUEEN_PROXY_ENFORCE: 'false', LOG_FORMAT: 'json' });
    try {
      const t = await bootstrap(b.url, 'shadow');
      await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, { max_req_per_sec: 1, req_burst: 1 });
      for (let i = 0; i < 4; i++) assert.equal((await withKey(b.url, t.key, 'GET', '/api/v1/pop/queue/q')).status, 204);
      const m = await call(b.url, 'GET', '/metrics/prometheus', undefined, { authorization: `Bearer ${CP_TOKEN}` });
      assert.match(m.text, /queen_proxy_limit_decisions_total\{tenant="[0-9a-f-]+",code="rate_limited",enforced="false"\} [1-9]/);
      await waitFor(() => /shadow mode: request over the cluster rate let through/.test(b.output()), { what: 'the shadow-mode log line' });
      assert.ok(!b.output().includes(t.key), 'no key in the logs');
    } finally {
      await b.stop();
    }
  });
});

describe('per-IP edge bucket', () => {
  test('a forged X-Forwarded-For from an untrusted peer does not change the bucket charged', async () => {
    const b = await startProxied({ QUEEN_EDGE_RATE: '1', QUEEN_EDGE_BURST: '3' });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 6; i++) codes.push((await call(b.url, 'GET', '/api/v1/pop/queue/q', undefined, { 'x-forwarded-for': `10.0.0.${i}` })).status);
      assert.ok(codes.includes(429), `the same peer's bucket, whatever the header says: ${codes.join(',')}`);
      assert.equal((await call(b.url, 'GET', '/health')).status, 200, '/health is exempt');
    } finally {
      await b.stop();
    }
  });

  test('from a trusted proxy, each forwarded client has its own bucket', async () => {
    const b = await startProxied({ QUEEN_EDGE_RATE: '1', QUEEN_EDGE_BURST: '1', QUEEN_EDGE_TRUSTED_PROXIES: '127.0.0.1' });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 5; i++) codes.push((await call(b.url, 'GET', `/api/v1/pop/queue/${uniqueName()}`, undefined, { 'x-forwarded-for': `10.0.1.${i}` })).status);
      assert.deepEqual(codes, [401, 401, 401, 401, 401], 'never rate limited: a bucket per client');
      const same = [];
      for (let i = 0; i < 3; i++) same.push((await call(b.url, 'GET', '/api/v1/pop/queue/q', undefined, { 'x-forwarded-for': '10.0.2.1' })).status);
      assert.ok(same.includes(429), same.join(','));
    } finally {
      await b.stop();
    }
  });
});
