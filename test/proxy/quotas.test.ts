/**
 * Cluster quotas beyond the request rate (docs/proxy.md#quotas-and-limits): `max_queues`,
 * `max_retention_seconds` and `max_parked_pops` refuse with `403 quota_exceeded` by default and are
 * logged and counted but let through with QUEEN_PROXY_ENFORCE=false; `max_batch_items` is a size
 * cap, always `413 payload_too_large`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call } from '../helpers/http.js';
import { waitFor, within } from '../helpers/wait.js';
import { bootstrap, cp, CP_TOKEN, startProxied, withKey } from './helpers.js';

const metrics = async (url: string) => (await call(url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN })).text;
const parked = async (url: string) => Number(/^queen_parked_consumers (\d+)$/m.exec(await metrics(url))?.[1] ?? NaN);
const push = (url: string, key: string, queues: string[]) =>
  within(withKey(url, key, 'POST', '/api/v1/push', { items: queues.map((queue, i) => ({ queue, payload: { i } })) }), 10_000, 'push');

describe('cluster quotas', () => {
  test('enforced by default: max_queues, max_retention_seconds, max_parked_pops → 403 quota_exceeded; max_batch_items → 413', async () => {
    const b = await startProxied();
    try {
      const t = await bootstrap(b.url, 'capped');
      const free = await bootstrap(b.url, 'free-of-caps');
      const o = await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, { max_queues: 2, max_parked_pops: 1, max_batch_items: 3, max_retention_seconds: 60 });
      assert.equal(o.status, 200, o.text);
      assert.equal((await push(b.url, t.key, ['q1'])).status, 201);
      assert.equal((await push(b.url, t.key, ['q2', 'q1'])).status, 201);
      const third = await push(b.url, t.key, ['q3']);
      assert.deepEqual([third.status, third.body.code], [403, 'quota_exceeded'], third.text);
      assert.equal((await push(b.url, t.key, ['q1', 'q2'])).status, 201, 'existing queues go on');
      const conf = await withKey(b.url, t.key, 'POST', '/api/v1/configure', { queue: 'q3', options: {} });
      assert.deepEqual([conf.status, conf.body.code], [403, 'quota_exceeded']);
      const ret = await withKey(b.url, t.key, 'POST', '/api/v1/configure', { queue: 'q1', options: { retentionEnabled: true, retentionSeconds: 3600 } });
      assert.deepEqual([ret.status, ret.body.code], [403, 'quota_exceeded'], ret.text);
      assert.ok((await withKey(b.url, t.key, 'POST', '/api/v1/configure', { queue: 'q1', options: { retentionEnabled: true, retentionSeconds: 30 } })).status < 300);
      const batch = await push(b.url, t.key, ['q1', 'q1', 'q1', 'q1']);
      assert.deepEqual([batch.status, batch.body.code], [413, 'payload_too_large']);
      assert.equal((await push(b.url, free.key, ['q1', 'q2', 'q3', 'q4'])).status, 201, 'another cluster has its own (no) limits');
      // parked long-polls: one at a time
      const grp = 'consumerGroup=g&autoAck=true';
      while ((await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/q2?${grp}&batch=100`)).status === 200) { /* drain */ }
      const first = within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/q2?${grp}&wait=true&timeout=20000`), 30_000, 'the parked pop');
      await waitFor(async () => (await parked(b.url)) === 1, { what: 'one parked pop', timeoutMs: 10_000 });
      const second = await within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/q2?${grp}&wait=true&timeout=20000`), 10_000, 'the second pop');
      assert.deepEqual([second.status, second.body.code], [403, 'quota_exceeded']);
      assert.equal((await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/q2?${grp}`)).status, 204, 'a pop that does not park is not counted');
      assert.equal((await push(b.url, t.key, ['q2'])).status, 201);
      assert.equal((await first).status, 200);
      await waitFor(async () => (await within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/q2?${grp}&wait=true&timeout=50`), 10_000, 'pop')).status === 204,
        { what: 'the slot given back', timeoutMs: 10_000 });
      assert.match(await metrics(b.url), /queen_proxy_limit_decisions_total\{tenant="[0-9a-f-]+",code="quota_exceeded",enforced="true"\} [4-9]/);
    } finally {
      await b.stop();
    }
  });

  test('shadow mode (QUEEN_PROXY_ENFORCE=false): quotas logged and counted, the request goes on; size caps still refuse', async () => {
    const b = await startProxied({ QUEEN_PROXY_ENFORCE: 'false', LOG_FORMAT: 'json' });
    try {
      const t = await bootstrap(b.url, 'shadowed');
      await cp(b.url, 'PUT', `/api/cp/clusters/${t.clusterId}/overrides`, { max_queues: 1, max_batch_items: 2 });
      assert.equal((await push(b.url, t.key, ['a'])).status, 201);
      assert.equal((await push(b.url, t.key, ['b'])).status, 201, 'over max_queues, let through');
      const listed = await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}/queues`);
      assert.deepEqual(listed.body.queues.map((q: { name: string }) => q.name).sort(), ['a', 'b']);
      assert.match(await metrics(b.url), /queen_proxy_limit_decisions_total\{tenant="[0-9a-f-]+",code="quota_exceeded",enforced="false"\} 1/);
      await waitFor(() => /shadow mode: request over a cluster quota let through/.test(b.output()), { what: 'the shadow-mode log line' });
      const batch = await push(b.url, t.key, ['a', 'a', 'a']);
      assert.deepEqual([batch.status, batch.body.code], [413, 'payload_too_large']);
      assert.ok(!b.output().includes(t.key), 'no key in the logs');
    } finally {
      await b.stop();
    }
  });
});
