/**
 * The tenant of a request on the broker router (src/http/tenant.ts, docs/proxy.md#tenancy):
 * QUEEN_TENANCY_HEADER and its boot interlock, the UUID rule, verified relays, the process-wide
 * routes that stay the default tenant's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, uniqueName } from '../helpers/http.js';
import { runBrokerExpectingExit, startBroker } from '../helpers/broker.js';

const T1 = 'aaaaaaaa-0000-4000-8000-000000000001';
const T2 = 'BBBBBBBB-0000-4000-8000-000000000002';

describe('QUEEN_TENANCY_HEADER', () => {
  test('without QUEEN_KV_TRUSTED_PROXY the broker refuses to boot', async () => {
    const r = await runBrokerExpectingExit({ QUEEN_TENANCY_HEADER: 'true' });
    assert.equal(r.code, 1);
    assert.match(r.output, /fatal: QUEEN_TENANCY_HEADER=1 without QUEEN_KV_TRUSTED_PROXY=1:/);
  });

  test('on: UUID tenants are isolated, case-insensitive; a bad header is 400; absent is the default tenant', async () => {
    const b = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' } });
    try {
      const q = uniqueName('t');
      const push = (tenant: string | undefined, who: string) => call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: who }] }, tenant ? { 'x-queen-tenant': tenant } : {});
      assert.equal((await push(T1, 'one')).status, 201);
      assert.equal((await push(T2, 'two')).status, 201);
      assert.equal((await push(undefined, 'default')).status, 201);
      const pop = async (tenant: string | undefined) => (await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`, undefined, tenant ? { 'x-queen-tenant': tenant } : {})).body.messages.map((m: { data: string }) => m.data);
      assert.deepEqual(await pop(T2.toLowerCase()), ['two'], 'stored lowercase');
      assert.deepEqual(await pop(T1), ['one']);
      assert.deepEqual(await pop(''), ['default']);
      const bad = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`, undefined, { 'x-queen-tenant': 'acme' });
      assert.deepEqual([bad.status, bad.body.error], [400, 'invalid x-queen-tenant header (must be a UUID)']);
      const listed = await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { 'x-queen-tenant': T1 });
      assert.deepEqual(listed.body.queues.map((x: { name: string }) => x.name), [q], 'the operator views read the request\'s tenant');
      assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues', undefined, { 'x-queen-tenant': 'cccccccc-0000-4000-8000-000000000003' })).body.queues.length, 0);
      assert.equal((await call(b.url, 'GET', '/api/v1/system/maintenance', undefined, { 'x-queen-tenant': T1 })).body.code, 'not_tenanted', 'process-wide routes stay the default tenant\'s');
    } finally {
      await b.stop();
    }
  });

  test('timers are the tenant\'s: schedule, list, peek, cancel and the transaction rider see its own; a due timer fires into its own queue', async () => {
    const b = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' } });
    try {
      const q = uniqueName('tq');
      const h = (tenant: string | undefined): Record<string, string> => (tenant ? { 'x-queen-tenant': tenant } : {});
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64');
      const schedule = (tenant: string | undefined, timerKey: string, who: string, delayMs = 600_000) =>
        call(b.url, 'POST', '/api/v1/timers', { operations: [{ op: 'schedule', queue: q, timerKey, delayMs, txn: `${who}-${timerKey}`, payload: b64({ who }) }] }, h(tenant));
      const s1 = await schedule(T1, 'k', 'one');
      const s2 = await schedule(T2, 'k', 'two');
      assert.equal(s1.status, 200, s1.text);
      assert.deepEqual([s1.body.results[0].status, s2.body.results[0].status], ['scheduled', 'scheduled'], 'the same key in another tenant is another timer');
      const who = (t: { payload: string }) => JSON.parse(Buffer.from(t.payload, 'base64').toString('utf8')).who as string;
      const list = async (tenant: string | undefined) => (await call(b.url, 'GET', `/api/v1/timers/${q}`, undefined, h(tenant))).body.rows.map(who);
      assert.deepEqual(await list(T1), ['one']);
      assert.deepEqual(await list(T2.toLowerCase()), ['two']);
      assert.deepEqual(await list(undefined), [], 'the default tenant sees neither');
      const peek1 = await call(b.url, 'GET', `/api/v1/timers/${q}/k`, undefined, h(T1));
      assert.deepEqual([peek1.body.found, peek1.body.queue, who(peek1.body)], [true, q, 'one']);
      // cancel: only the caller's timer goes; another tenant's key reads as absent
      const gone = await call(b.url, 'DELETE', `/api/v1/timers/${q}/k`, undefined, h(T2));
      assert.equal(gone.body.status, 'cancelled', gone.text);
      assert.equal((await call(b.url, 'GET', `/api/v1/timers/${q}/k`, undefined, h(T1))).body.found, true, 'T1\'s timer survives T2\'s cancel');
      assert.equal((await call(b.url, 'DELETE', `/api/v1/timers/${q}/k`, undefined, h(undefined))).body.status, 'absent');
      // the transaction rider acts on the tenant's timers too
      const tx = await call(b.url, 'POST', '/api/v1/transaction', {
        operations: [{ type: 'push', items: [{ queue: uniqueName('txq'), payload: 1 }] }],
        timers: [{ op: 'schedule', queue: q, timerKey: 'rider', delayMs: 600_000, txn: 'rider-1', payload: b64({ who: 'rider' }) }],
      }, h(T2));
      assert.equal(tx.body.success, true, tx.text);
      assert.deepEqual(await list(T2), ['rider']);
      assert.deepEqual(await list(T1), ['one']);
      // firing: each tenant's due timer lands in its own tenant's queue of that name
      await schedule(T1, 'now', 'fired-one', 0);
      await schedule(T2, 'now', 'fired-two', 0);
      const popWait = async (tenant: string | undefined) => {
        const r = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?wait=true&timeout=10000&batch=10&autoAck=true`, undefined, h(tenant));
        return r.status === 204 ? [] : r.body.messages.map((m: { data: { who: string } }) => m.data.who);
      };
      assert.deepEqual(await popWait(T1), ['fired-one']);
      assert.deepEqual(await popWait(T2), ['fired-two']);
      const direct = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`);
      assert.equal(direct.status, 204, `the default tenant's queue stays empty: ${direct.text}`);
    } finally {
      await b.stop();
    }
  });

  test('streams: the dashboard listing and registrations are the tenant\'s', async () => {
    const b = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' } });
    try {
      const name = uniqueName('sq');
      const register = (tenant: string) => call(b.url, 'POST', '/streams/v1/queries', { name, source_queue: 'src', sink_queue: 'sink', config_hash: 'h' }, { 'x-queen-tenant': tenant });
      const r1 = await register(T1);
      const r2 = await register(T2);
      assert.deepEqual([r1.status, r1.body.fresh, r2.body.fresh], [200, true, true], r2.text);
      const listed = async (h: Record<string, string>) => (await call(b.url, 'GET', '/api/v1/streams/queries', undefined, h)).body.queries
        .filter((q: { name: string }) => q.name === name).map((q: { query_id: string }) => q.query_id);
      assert.deepEqual(await listed({ 'x-queen-tenant': T1 }), [r1.body.query_id]);
      assert.deepEqual(await listed({ 'x-queen-tenant': T2 }), [r2.body.query_id]);
      assert.deepEqual(await listed({}), [], 'the default tenant sees neither');
    } finally {
      await b.stop();
    }
  });

  // The reference's streaming queries were unique by name across tenants, so `reset:true` from
  // another tenant took the query over and handed back its id, and state operations checked no
  // owner (queen-mq/queen: CHANGELOG.md, 1.3.0 "Streams are tenant-scoped").
  test('streams: another tenant\'s reset, cycle and state read never reach a query, its state or its source', async () => {
    const b = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' } });
    try {
      const name = uniqueName('sq');
      const src = uniqueName('src');
      const as = (tenant: string) => ({ 'x-queen-tenant': tenant });
      await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: src, payload: 1 }, { queue: src, payload: 2 }] }, as(T1));
      const mine = await call(b.url, 'POST', '/streams/v1/queries', { name, source_queue: src, config_hash: 'h1' }, as(T1));
      const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${src}?batch=1`, undefined, as(T1));
      const m = popped.body.messages[0];
      const cycle = await call(b.url, 'POST', '/streams/v1/cycle', {
        query_id: mine.body.query_id, partition_id: m.partitionId, consumer_group: '__QUEUE_MODE__',
        state_ops: [{ type: 'upsert', key: 'count', value: { n: 1 } }], push_items: [],
        ack: { transactionId: m.transactionId, leaseId: m.leaseId, status: 'completed', count: 1 },
      }, as(T1));
      assert.equal(cycle.body.success, true, cycle.text);
      const state = (tenant: string) => call(b.url, 'POST', '/streams/v1/state/get', { query_id: mine.body.query_id, partition_id: m.partitionId, keys: ['count'] }, as(tenant));

      const takeover = await call(b.url, 'POST', '/streams/v1/queries', { name, source_queue: src, config_hash: 'h2', reset: true }, as(T2));
      assert.equal(takeover.status, 200, takeover.text);
      assert.notEqual(takeover.body.query_id, mine.body.query_id, 'the other tenant gets a query of its own');
      assert.equal(takeover.body.fresh, true);
      const again = await call(b.url, 'POST', '/streams/v1/queries', { name, source_queue: src, config_hash: 'h1' }, as(T1));
      assert.deepEqual([again.status, again.body.query_id, again.body.fresh], [200, mine.body.query_id, false], 'the owner\'s query is untouched');

      const foreignPartition = await call(b.url, 'POST', '/streams/v1/cycle', {
        query_id: takeover.body.query_id, partition_id: m.partitionId, consumer_group: '__QUEUE_MODE__',
        state_ops: [{ type: 'upsert', key: 'count', value: { n: 999 } }], push_items: [], ack: null,
      }, as(T2));
      assert.equal(foreignPartition.status, 404, foreignPartition.text);
      assert.equal(foreignPartition.body.code, 'streams_not_found');
      await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: src, payload: 'theirs' }] }, as(T2));
      const theirs = (await call(b.url, 'GET', `/api/v1/pop/queue/${src}`, undefined, as(T2))).body.messages[0];
      const foreignQuery = await call(b.url, 'POST', '/streams/v1/cycle', {
        query_id: mine.body.query_id, partition_id: theirs.partitionId, consumer_group: '__QUEUE_MODE__',
        state_ops: [{ type: 'upsert', key: 'count', value: { n: 999 } }], push_items: [], ack: null,
      }, as(T2));
      assert.deepEqual([foreignQuery.body.success, foreignQuery.body.error, foreignQuery.body.state_ops_applied], [false, 'query not found', 0], foreignQuery.text);

      const foreignRead = await state(T2);
      assert.deepEqual([foreignRead.status, foreignRead.body.code], [404, 'streams_not_found'], `another tenant's partition_id: ${foreignRead.text}`);
      const ownPartition = await call(b.url, 'POST', '/streams/v1/state/get', { query_id: mine.body.query_id, partition_id: theirs.partitionId, keys: ['count'] }, as(T2));
      assert.deepEqual([ownPartition.status, ownPartition.body.rows], [200, []], 'a foreign query id reads as unknown');
      assert.deepEqual((await state(T1)).body.rows.map((r: { value: unknown }) => r.value), [{ n: 1 }], 'the owner\'s state is unchanged');
      const next = await call(b.url, 'GET', `/api/v1/pop/queue/${src}?batch=10`, undefined, as(T1));
      assert.deepEqual(next.body.messages.map((x: { data: unknown }) => x.data), [2], 'the owner\'s source cursor moved only by its own cycle');
    } finally {
      await b.stop();
    }
  });

  test('ephemeral queues: with QUEEN_EPHEMERAL_REQUIRE_GRANT off each tenant has its own; on (the default with tenancy) only the default tenant is served', async () => {
    const open = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true', QUEEN_EPHEMERAL_REQUIRE_GRANT: 'false' } });
    try {
      const q = uniqueName('eq');
      const h = (tenant: string | undefined): Record<string, string> => (tenant ? { 'x-queen-tenant': tenant } : {});
      const push = (tenant: string | undefined, who: string) => call(open.url, 'POST', '/api/v1/ephemeral/push', { queue: q, messages: [{ payload: { who } }] }, h(tenant));
      for (const [t, who] of [[T1, 'one'], [T2, 'two'], [undefined, 'default']] as const) assert.equal((await push(t, who)).status, 201);
      const pop = async (tenant: string | undefined) => {
        const r = await call(open.url, 'GET', `/api/v1/ephemeral/pop?queue=${q}&batch=10`, undefined, h(tenant));
        return r.status === 204 ? { who: [], ids: [] } : { who: r.body.messages.map((m: { payload: { who: string } }) => m.payload.who), ids: r.body.messages.map((m: { id: string }) => m.id) };
      };
      const one = await pop(T1);
      assert.deepEqual(one.who, ['one']);
      // an ack for T1's message sent as T2 acknowledges nothing of T1's
      const stolen = await call(open.url, 'POST', '/api/v1/ephemeral/ack', { queue: q, acks: one.ids.map((id: string) => ({ id, status: 'completed' })) }, h(T2));
      assert.notEqual(stolen.body.results?.[0]?.outcome, 'acked', stolen.text);
      const acked = await call(open.url, 'POST', '/api/v1/ephemeral/ack', { queue: q, acks: one.ids.map((id: string) => ({ id, status: 'completed' })) }, h(T1));
      assert.equal(acked.status, 200, acked.text);
      assert.deepEqual((await pop(T2)).who, ['two']);
      assert.deepEqual((await pop(undefined)).who, ['default']);
      const listed = async (tenant: string | undefined) => (await call(open.url, 'GET', '/api/v1/ephemeral/queues', undefined, h(tenant))).body.queues
        .filter((x: { name?: string; queue?: string }) => (x.name ?? x.queue) === q).length;
      assert.deepEqual([await listed(T1), await listed(T2), await listed(undefined)], [1, 1, 1]);
      assert.deepEqual([await listed('cccccccc-0000-4000-8000-000000000003')], [0], 'a tenant that never pushed has no such queue');
      // cellBytes: the node's whole ephemeral memory for the default (operator) tenant, a tenant's own bytes for any other.
      const cellBytes = async (tenant: string | undefined) => (await call(open.url, 'GET', '/api/v1/ephemeral/queues', undefined, h(tenant))).body.cellBytes as number;
      const bytesOf = async (tenant: string | undefined) => ((await call(open.url, 'GET', '/api/v1/ephemeral/queues', undefined, h(tenant))).body.queues as { bytes: number }[]).reduce((n, r) => n + r.bytes, 0);
      assert.equal(await cellBytes('cccccccc-0000-4000-8000-000000000003'), 0, 'nothing of the other tenants\' traffic');
      assert.equal(await cellBytes(T2), await bytesOf(T2));
      assert.ok(await cellBytes(T2) > 0);
      assert.equal(await cellBytes(undefined), (await call(open.url, 'GET', '/api/v1/system/ephemeral')).body.cellBytes, 'the operator sees the node');
      assert.equal((await call(open.url, 'DELETE', `/api/v1/ephemeral/queue/${q}`, undefined, h(T1))).status, 200);
      assert.deepEqual([await listed(T1), await listed(T2)], [0, 1], 'deleting acts on the caller\'s queue only');
    } finally {
      await open.stop();
    }
    const gated = await startBroker({ env: { QUEEN_TENANCY_HEADER: 'true', QUEEN_KV_TRUSTED_PROXY: 'true' } });
    try {
      const q = uniqueName('eq');
      const r = await call(gated.url, 'POST', '/api/v1/ephemeral/push', { queue: q, messages: [{ payload: 1 }] }, { 'x-queen-tenant': T1 });
      assert.deepEqual([r.status, r.body.code], [403, 'feature_gated']);
      assert.equal((await call(gated.url, 'POST', '/api/v1/ephemeral/push', { queue: q, messages: [{ payload: 1 }] })).status, 201, 'the default tenant needs no grant');
      assert.equal((await call(gated.url, 'GET', '/api/v1/system/ephemeral')).body.requireGrant, true);
    } finally {
      await gated.stop();
    }
  });

  test('off: the header is ignored; a relay is verified only with the right QUEEN_RAFT_TOKEN', async () => {
    const b = await startBroker({ env: { QUEEN_RAFT_TOKEN: 'raft-secret' } });
    try {
      const q = uniqueName('r');
      assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'x' }] }, { 'x-queen-tenant': T1 })).status, 201);
      assert.equal((await call(b.url, 'GET', `/api/v1/pop/queue/${q}`)).status, 200, 'ignored: it went to the default tenant');
      const forged = await call(b.url, 'GET', `/api/v1/pop/queue/${q}`, undefined, { 'x-queen-eph-fwd': '1', 'x-queen-tenant': T1, 'x-queen-raft-token': 'wrong' });
      assert.deepEqual([forged.status, forged.body.code], [403, 'tenant_unverified']);
      const relay = { 'x-queen-eph-fwd': '1', 'x-queen-tenant': T1, 'x-queen-raft-token': 'raft-secret' };
      assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: 'relayed' }] }, relay)).status, 201);
      const popped = await call(b.url, 'GET', `/api/v1/pop/queue/${q}?consumerGroup=g`, undefined, relay);
      assert.deepEqual(popped.body.messages.map((m: { data: string }) => m.data), ['relayed'], 'honoured for a verified relay');
    } finally {
      await b.stop();
    }
  });
});
