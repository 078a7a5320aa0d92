/**
 * Walks every row of the proxy's classification table (src/proxy/routes.ts) with a key of each
 * scope, black box, and checks the authorization matrix of docs/proxy.md#authorization-matrix;
 * then the percent-encoded and dot-segment variants of every protected prefix (docs/proxy.md#paths).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { call } from '../helpers/http.js';
import type { BrokerHandle } from '../helpers/broker.js';
import { ROUTE_TABLE, type RouteRow } from '../../src/proxy/routes.js';
import { bootstrap, issueKey, startProxied } from './helpers.js';

const SCOPES = ['produce', 'consume', 'admin', 'read'] as const;
/** The matrix as the spec states it, independent of the code under test. */
function allowedScopes(row: RouteRow): readonly string[] {
  const c = row.cls;
  switch (c.kind) {
    case 'produce': return ['produce'];
    case 'consume': return ['consume'];
    case 'queue_admin': return ['admin'];
    case 'read': return ['read', 'admin'];
    case 'gated': return c.op === 'read' ? SCOPES : ['produce', 'consume'];
    default: return [];
  }
}
/** Features of the `dev` plan (src/auth/proxy/state.ts). */
const DEV_FEATURES = ['streams', 'traces', 'kv', 'timers'];

/** A concrete request for a row: its method and a path the row matches. */
function sample(row: RouteRow): { method: string; path: string } {
  const method = row.methods?.[0] ?? (row.cls.kind === 'produce' || row.cls.kind === 'queue_admin' ? 'POST' : 'GET');
  const path = row.exact ?? (row.prefix!.endsWith('/') ? `${row.prefix}x` : `${row.prefix}/x`);
  return { method, path };
}

/** `path` with its first letter after the last `/v1/` (or the first segment) percent-encoded. */
function encoded(path: string): string {
  const i = path.indexOf('/', 1) === -1 ? 1 : path.lastIndexOf('/') + 1;
  const at = path[i] === undefined || path[i] === '/' ? 1 : i;
  return path.slice(0, at) + '%' + path.charCodeAt(at).toString(16).toUpperCase() + path.slice(at + 1);
}

describe('proxy route classification and authorization matrix', () => {
  let b: BrokerHandle;
  const keys: Record<string, string> = {};

  before(async () => {
    b = await startProxied();
    const t = await bootstrap(b.url, 'walk');
    keys.all = t.key;
    for (const s of SCOPES) keys[s] = (await issueKey(b.url, t.clusterId, [s], s)).key;
  });
  after(async () => { await b.stop(); });

  const rowsSeen = new Set<string>();
  const judge = async (method: string, path: string, key: string) => {
    const r = await call(b.url, method, path, method === 'GET' || method === 'HEAD' ? undefined : {}, { authorization: `Bearer ${key}` });
    return { status: r.status, code: (r.body as { code?: string } | undefined)?.code, text: r.text };
  };
  const passed = (j: { status: number; code: string | undefined }) =>
    j.status !== 401 && !(j.status === 403 && (j.code === 'forbidden' || j.code === 'feature_gated')) && !(j.status === 404 && j.code === 'route_blocked');

  test('every row of the table, with a key of each scope, and its encoded variant', async () => {
    for (const row of ROUTE_TABLE) {
      const { method, path } = sample(row);
      const id = `${method} ${path}`;
      if (rowsSeen.has(id)) continue; // a row shadowed by an earlier one of the same sample (first match wins)
      if (path.startsWith('/metrics')) continue; // fixed routes of the listener, before the table (proxy.test.ts)
      rowsSeen.add(id);
      for (const variant of [path, encoded(path)]) {
        if (row.cls.kind === 'blocked' || row.cls.kind === 'operator') {
          const anon = await call(b.url, method, variant);
          assert.deepEqual([anon.status, anon.body], [404, { error: 'not available', code: 'route_blocked' }], `${method} ${variant}: blocked before authentication`);
          const j = await judge(method, variant, keys.all!);
          assert.equal(j.code, 'route_blocked', `${method} ${variant} with an all-scope key`);
          continue;
        }
        const anon = await call(b.url, method, variant);
        assert.equal(anon.status, 401, `${method} ${variant} without a key`);
        const gatedOff = row.cls.kind === 'gated' && !DEV_FEATURES.includes(row.cls.feature);
        for (const s of SCOPES) {
          const j = await judge(method, variant, keys[s]!);
          if (gatedOff) {
            assert.deepEqual([j.status, j.code], [403, 'feature_gated'], `${method} ${variant} scope ${s}: ${j.text}`);
          } else if (allowedScopes(row).includes(s)) {
            assert.ok(passed(j), `${method} ${variant} scope ${s} should pass: ${j.status} ${j.text}`);
          } else {
            assert.deepEqual([j.status, j.code], [403, 'forbidden'], `${method} ${variant} scope ${s} should be refused: ${j.text}`);
          }
        }
      }
    }
    assert.ok(rowsSeen.size > 40);
  });

  test('dot and empty segments, also percent-encoded, are refused with 400 before classification', async () => {
    // node:http sends the path as given (fetch would resolve the dot segments itself)
    const send = (p: string) => new Promise<{ status: number; body: { code?: string } }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: b.port, method: 'POST', path: p, headers: { authorization: `Bearer ${keys.read}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) as { code?: string } }));
      });
      req.on('error', reject);
      req.end('{}');
    });
    for (const p of ['/api/v1/./push', '/api/v1/x/../push', '/api/v1/%2e%2e/v1/push', '/api/v1/%2E/push', '/api//v1/push', '/api/v1/pop/queue/q/..', '/api/v1/pop/queue/q/%2e%2E']) {
      const r = await send(p);
      assert.deepEqual([r.status, r.body.code], [400, 'invalid_path'], p);
    }
  });

  test('%2F stays inside its segment: /api/v1/pop%2Fqueue/x is not the Consume prefix', async () => {
    const r = await call(b.url, 'GET', '/api/v1/pop%2Fqueue/x', undefined, { authorization: `Bearer ${keys.consume}` });
    assert.deepEqual([r.status, r.body.code], [404, 'route_blocked'], 'an unknown /api path: fails closed');
    const plain = await call(b.url, 'GET', '/api/v1/pop/queue/x', undefined, { authorization: `Bearer ${keys.consume}` });
    assert.equal(plain.status, 204);
  });

  test('an exact blocked or operator path with a trailing slash is blocked like the path itself', async () => {
    for (const p of ['/metrics/', '/metrics/prometheus/', '/api/v1/status/', '/api/v1/status/buffers/', '/api/v1/analytics/system-metrics/', '/api/v1/stats/refresh/']) {
      for (const headers of [{}, { authorization: `Bearer ${keys.read}` }, { authorization: `Bearer ${keys.all}` }] as Record<string, string>[]) {
        const r = await call(b.url, 'GET', p, undefined, headers);
        assert.deepEqual([r.status, r.body.code], [404, 'route_blocked'], `${p} ${JSON.stringify(Object.keys(headers))}: ${r.text}`);
      }
    }
    // a trailing slash that names a parameter stays that route: /api/v1/timers/ lists the timers of the queue named ''
    const timers = await call(b.url, 'GET', '/api/v1/timers/', undefined, { authorization: `Bearer ${keys.read}` });
    assert.equal(timers.status, 200, timers.text);
  });

  test('an unknown /api path fails closed; a non-API path is Read', async () => {
    assert.equal((await call(b.url, 'GET', '/api/v9/new-thing')).body.code, 'route_blocked');
    assert.equal((await call(b.url, 'GET', '/some/static/page')).status, 401, 'Read: needs a key');
    assert.notEqual((await call(b.url, 'GET', '/some/static/page', undefined, { authorization: `Bearer ${keys.read}` })).status, 401);
  });
});
