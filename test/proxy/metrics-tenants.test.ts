/**
 * The broker's per-queue Prometheus series never mix tenants (docs/proxy.md#metrics,
 * docs/operations.md#prometheus-series): two tenants using the same queue name through the proxy
 * give two series, told apart by the `tenant` label (the cluster's `broker_tenant_uuid`), each
 * with its own tenant's numbers; the status views read the same per-tenant counters.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor, within } from '../helpers/wait.js';
import { cp, CP_TOKEN, startTwoTenants, withKey, type Tenant } from './helpers.js';

describe('per-queue Prometheus series by tenant', () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let beta: Tenant;
  const uuid: Record<string, string> = {};
  before(async () => {
    ({ b, acme, beta } = await startTwoTenants());
    for (const t of [acme, beta]) uuid[t.slug] = (await cp(b.url, 'GET', `/api/cp/clusters/${t.slug}`)).body.broker_tenant_uuid;
  });
  after(async () => { await b.stop(); });

  const scrape = async () => (await call(b.url, 'GET', '/metrics/prometheus', undefined, { 'x-queen-cp-token': CP_TOKEN })).text;
  /** The value of `name{tenant=…,queue=…}` in `text`, undefined when the series is absent. */
  const value = (text: string, name: string, tenant: string, queue: string): number | undefined => {
    const m = new RegExp(`^${name}\\{tenant="${tenant}",queue="${queue}"\\} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };

  test('dead-letter depth and parked pops of one queue name: one series per tenant, each its own count', async () => {
    const q = uniqueName('same');
    // acme dead-letters one message, beta two
    for (const [t, n] of [[acme, 1], [beta, 2]] as const) {
      for (let i = 0; i < n; i++) {
        assert.equal((await within(withKey(b.url, t.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { i } }] }), 10_000, 'push')).status, 201);
        const pop = await within(withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}`), 10_000, 'pop');
        const m = pop.body.messages[0] as { transactionId: string; partitionId: string; leaseId: string };
        const ack = await withKey(b.url, t.key, 'POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'dlq', error: 'test' });
        assert.deepEqual([ack.body[0]?.success, ack.body[0]?.dlq], [true, true], ack.text);
      }
    }
    const text = await scrape();
    assert.equal(value(text, 'queen_dlq_depth_by_queue', uuid[acme.slug]!, q), 1, text.split('\n').filter((l) => l.includes(q)).join('\n'));
    assert.equal(value(text, 'queen_dlq_depth_by_queue', uuid[beta.slug]!, q), 2);
    assert.ok(!new RegExp(`^queen_dlq_depth_by_queue\\{(?!tenant=)[^}]*queue="${q}"`, 'm').test(text), 'no series without its tenant');

    // one parked long-poll for acme on the queue, none for beta
    const parked = within(withKey(b.url, acme.key, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=20000`), 30_000, 'parked pop');
    await waitFor(async () => value(await scrape(), 'queen_queue_parked_consumers', uuid[acme.slug]!, q) === 1, { what: 'acme\'s parked pop in its series', timeoutMs: 10_000 });
    assert.equal(value(await scrape(), 'queen_queue_parked_consumers', uuid[beta.slug]!, q) ?? 0, 0, 'beta\'s series of the same name holds none');
    assert.equal((await within(withKey(b.url, acme.key, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'wake' }] }), 10_000, 'push')).status, 201);
    assert.equal((await parked).status, 200);
  });

  test('a queue\'s throughput in GET /api/v1/status/queues/:queue counts its own tenant\'s pushes only', async () => {
    const q = uniqueName('thr');
    for (const [t, n] of [[acme, 1], [beta, 3]] as const) {
      const items = Array.from({ length: n }, (_, i) => ({ queue: q, payload: { i } }));
      assert.equal((await within(withKey(b.url, t.key, 'POST', '/api/v1/push', { items }), 10_000, 'push')).status, 201);
    }
    const ingested = async (t: Tenant) => {
      const r = await withKey(b.url, t.key, 'GET', `/api/v1/status/queues/${q}`);
      assert.equal(r.status, 200, r.text);
      return (r.body.throughput as { ingested: number }[]).reduce((n, p) => n + p.ingested, 0);
    };
    assert.deepEqual([await ingested(acme), await ingested(beta)], [1, 3]);
  });
});
