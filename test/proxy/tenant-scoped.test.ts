/**
 * Streams and timers with tenancy on, through the embedded proxy (docs/streams.md#tenancy,
 * docs/proxy.md#tenancy): two tenants register a query of the same name over queues of the same
 * names, and schedule timers of the same key; each sees only its own queries, state rows, sink
 * output and timers, a due timer fires into its own queue, and a client-sent `x-queen-tenant`
 * changes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { uniqueName } from '../helpers/http.js';
import type { BrokerHandle } from '../helpers/broker.js';
import { withKey, startTwoTenants, type Tenant } from './helpers.js';

const DEFAULT_TENANT = '00000000-0000-0000-0000-000000000001';

describe('streams and timers behind the proxy, two tenants', () => {
  let b: BrokerHandle;
  let acme: Tenant;
  let beta: Tenant;

  before(async () => ({ b, acme, beta } = await startTwoTenants()));
  after(async () => { await b.stop(); });

  test('same query name, same queue names: each tenant sees its own query, state and sink output only', async () => {
    const name = uniqueName('count');
    const src = uniqueName('src');
    const sink = uniqueName('sink');
    const group = `streams.${name}`;
    // each tenant's key sends the other tenant's id as x-queen-tenant: the proxy strips it
    const forged = (t: Tenant): Record<string, string> => ({ 'x-queen-tenant': t === acme ? beta.tenantId : acme.tenantId });
    const post = (t: Tenant, path: string, body: unknown) => withKey(b.url, t.key, 'POST', path, body, forged(t));
    const register = (t: Tenant) => post(t, '/streams/v1/queries', { name, source_queue: src, sink_queue: sink, config_hash: 'h1' });
    const ra = await register(acme);
    const rb = await register(beta);
    assert.equal(ra.status, 200, ra.text);
    assert.deepEqual([ra.body.fresh, rb.body.fresh], [true, true], 'the same name in another tenant is another query');
    assert.notEqual(ra.body.query_id, rb.body.query_id);

    const cycle = async (t: Tenant, queryId: string, n: number) => {
      const pushed = await post(t, '/api/v1/push', { items: Array.from({ length: n }, (_, i) => ({ queue: src, partition: 'p', payload: { i } })) });
      assert.equal(pushed.status, 201, pushed.text);
      const batch = await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${src}?batch=100&consumerGroup=${group}`, undefined, forged(t));
      assert.equal(batch.status, 200, batch.text);
      assert.equal(batch.body.messages.length, n, `${t.slug} pops its own ${n} source messages`);
      const c = await post(t, '/streams/v1/cycle', {
        query_id: queryId, partition_id: batch.body.partitionId, consumer_group: group,
        state_ops: [{ type: 'upsert', key: 'count', value: { n, who: t.slug } }],
        push_items: [{ queue: sink, payload: { count: n, who: t.slug } }],
        ack: { leaseId: batch.body.leaseId, count: n }, release_lease: true,
      });
      assert.equal(c.body.success, true, c.text);
      return batch.body.partitionId as string;
    };
    const pa = await cycle(acme, ra.body.query_id, 3);
    const pb = await cycle(beta, rb.body.query_id, 5);

    // state: each reads its own; the other tenant's query id reads as unknown (no rows)
    const state = (t: Tenant, queryId: string, partitionId: string) => post(t, '/streams/v1/state/get', { query_id: queryId, partition_id: partitionId });
    assert.deepEqual((await state(acme, ra.body.query_id, pa)).body.rows.map((r: { value: unknown }) => r.value), [{ n: 3, who: acme.slug }]);
    assert.deepEqual((await state(beta, rb.body.query_id, pb)).body.rows.map((r: { value: unknown }) => r.value), [{ n: 5, who: beta.slug }]);
    const foreign = await state(beta, ra.body.query_id, pa);
    assert.deepEqual([foreign.status, foreign.body.code, foreign.body.rows], [404, 'streams_not_found', undefined], 'another tenant\'s partition: not found, nothing of it shown');
    assert.deepEqual((await state(beta, ra.body.query_id, pb)).body.rows, [], 'another tenant\'s query on one\'s own partition reads as unknown');

    // a cycle naming another tenant's query and partition commits nothing
    const stolen = await post(beta, '/streams/v1/cycle', {
      query_id: ra.body.query_id, partition_id: pa, consumer_group: group,
      state_ops: [{ type: 'upsert', key: 'count', value: { n: 999 } }], push_items: [], release_lease: false,
    });
    assert.notEqual(stolen.body.success, true, stolen.text);
    assert.deepEqual((await state(acme, ra.body.query_id, pa)).body.rows.map((r: { value: unknown }) => r.value), [{ n: 3, who: acme.slug }]);

    // sink output: each tenant's sink queue holds its own window only
    const sinkOf = async (t: Tenant) => {
      const r = await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${sink}?batch=100&consumerGroup=reader&autoAck=true`, undefined, forged(t));
      return r.status === 204 ? [] : r.body.messages.map((m: { data: unknown }) => m.data);
    };
    assert.deepEqual(await sinkOf(acme), [{ count: 3, who: acme.slug }]);
    assert.deepEqual(await sinkOf(beta), [{ count: 5, who: beta.slug }]);

    assert.notEqual(acme.tenantId, DEFAULT_TENANT);
  });

  test('timers: the same key in two tenants is two timers; each lists, peeks and cancels its own; a due timer fires into its own queue', async () => {
    const q = uniqueName('tq');
    const forged = (t: Tenant): Record<string, string> => ({ 'x-queen-tenant': t === acme ? beta.tenantId : acme.tenantId });
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64');
    const schedule = (t: Tenant, timerKey: string, delayMs: number) => withKey(b.url, t.key, 'POST', '/api/v1/timers',
      { operations: [{ op: 'schedule', queue: q, timerKey, delayMs, txn: `${t.slug}-${timerKey}`, payload: b64({ who: t.slug }) }] }, forged(t));
    const sa = await schedule(acme, 'k', 600_000);
    const sb = await schedule(beta, 'k', 600_000);
    assert.equal(sa.status, 200, sa.text);
    assert.deepEqual([sa.body.results[0].status, sb.body.results[0].status], ['scheduled', 'scheduled']);
    const who = (t: { payload: string }) => JSON.parse(Buffer.from(t.payload, 'base64').toString('utf8')).who as string;
    const list = async (t: Tenant) => (await withKey(b.url, t.key, 'GET', `/api/v1/timers/${q}`, undefined, forged(t))).body.rows.map(who);
    assert.deepEqual(await list(acme), [acme.slug]);
    assert.deepEqual(await list(beta), [beta.slug]);
    assert.equal((await withKey(b.url, beta.key, 'DELETE', `/api/v1/timers/${q}/k`, undefined, forged(beta))).body.status, 'cancelled');
    const peekA = await withKey(b.url, acme.key, 'GET', `/api/v1/timers/${q}/k`, undefined, forged(acme));
    assert.deepEqual([peekA.body.found, who(peekA.body)], [true, acme.slug], 'acme\'s timer survives beta\'s cancel');
    await schedule(acme, 'now', 0);
    await schedule(beta, 'now', 0);
    const popWait = async (t: Tenant) => {
      const r = await withKey(b.url, t.key, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=10000&batch=10&autoAck=true`, undefined, forged(t));
      return r.status === 204 ? [] : r.body.messages.map((m: { data: { who: string } }) => m.data.who);
    };
    assert.deepEqual(await popWait(acme), [acme.slug]);
    assert.deepEqual(await popWait(beta), [beta.slug]);
  });
});
