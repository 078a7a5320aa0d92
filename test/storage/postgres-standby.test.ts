/**
 * A standby cluster is a PostgreSQL streaming replica (docs/cluster.md#standby): brokers on a hot
 * standby serve reads and refuse writes with 503 `standby` + Retry-After; `GET /api/v1/system/link`
 * shows the role and the lag; after `pg_promote` (through one node) every node serves writes within
 * about 2 s, with the messages and the consumer group's cursor as the primary left them.
 * Builds its own primary (initdb) and replica (pg_basebackup) on free ports: test/helpers/pg-servers.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { runBrokerExpectingExit, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { pgServersUnavailable, startPrimary, startReplica, type PgServer } from '../helpers/pg-servers.js';
import { waitFor } from '../helpers/wait.js';

test('standby: reads served, writes 503 standby; link shows role and lag; promotion through one node, all nodes serve writes, messages and cursors intact', {
  skip: pgServersUnavailable(), timeout: 120_000,
}, async () => {
  const servers: PgServer[] = [];
  const nodes: BrokerHandle[] = [];
  try {
    const primary = await startPrimary();
    servers.push(primary);
    const admin = new pg.Client({ connectionString: primary.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE queen');
    await admin.end();
    const a = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: primary.url('queen'), QUEEN_SERVER_ID: 'source-1' } });
    nodes.push(a);
    assert.equal((await call(a.url, 'POST', '/api/v1/configure', { queue: 'sb', options: { leaseTime: 30 } })).status, 200);
    const items = [1, 2, 3, 4, 5].map((n) => ({ queue: 'sb', partition: 'p', payload: { n } }));
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items })).status, 201);
    // Group g consumed and acknowledged 1 and 2 on the source.
    const first = await call(a.url, 'GET', '/api/v1/pop/queue/sb?batch=2&consumerGroup=g&autoAck=true');
    assert.deepEqual(first.body.messages.map((m: any) => m.data), [{ n: 1 }, { n: 2 }]);

    const replica = await startReplica(primary);
    servers.push(replica);
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: replica.url('queen') };
    const b = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'standby-1' } });
    const c = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'standby-2' } });
    nodes.push(b, c);

    // QUEEN_STANDBY=false refuses a hot standby at boot.
    const refused = await runBrokerExpectingExit({ ...env, QUEEN_STANDBY: 'false' });
    assert.equal(refused.code, 1, refused.output);
    assert.match(refused.output, /fatal: .*hot standby .*QUEEN_STANDBY=false/);
    const h = await call(b.url, 'GET', '/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.cluster.role, 'standby');
    // Writes: 503 standby with Retry-After.
    const push = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'sb', partition: 'p', payload: { n: 'refused' } }] });
    assert.equal(push.status, 503, push.text);
    assert.equal(push.body.code, 'standby');
    assert.equal(push.headers.get('retry-after'), '1');
    const pop = await call(c.url, 'GET', '/api/v1/pop/queue/sb?batch=10&consumerGroup=g');
    assert.equal(pop.status, 503, pop.text);
    assert.equal(pop.body.code, 'standby');
    assert.equal((await call(c.url, 'POST', '/api/v1/configure', { queue: 'other', options: {} })).body.code, 'standby');
    // Reads: served, and they follow the source.
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'sb', partition: 'p', payload: { n: 6 } }] })).status, 201);
    await waitFor(async () => {
      const r = await call(b.url, 'GET', '/api/v1/messages?queue=sb&limit=100');
      return r.status === 200 && (r.body.messages ?? r.body).length === 6;
    }, { what: 'the standby node lists the message pushed on the source' });
    assert.equal((await call(b.url, 'GET', '/api/v1/resources/queues/sb')).status, 200);
    const link = await call(b.url, 'GET', '/api/v1/system/link');
    assert.equal(link.status, 200, link.text);
    assert.equal(link.body.role, 'standby');
    assert.equal(link.body.source, `127.0.0.1:${primary.port}`);
    assert.equal(link.body.follower.state, 'following');
    assert.equal(typeof link.body.follower.lagMs, 'number');
    assert.match(link.body.position.lsn, /^[0-9A-F]+\/[0-9A-F]+$/);
    await waitFor(async () => /^queen_link_follower_state\{state="following"\} 1$/m.test((await call(b.url, 'GET', '/metrics/prometheus')).text),
      { what: 'queen_link_follower_state{state="following"} on the standby node' });
    assert.match((await call(b.url, 'GET', '/metrics/prometheus')).text, /^queen_link_lag_seconds \d/m);
    const src = await call(a.url, 'GET', '/api/v1/system/link');
    assert.equal(src.body.role, 'primary');
    assert.equal(src.body.readers.length, 1, 'the source sees its one replica');

    // The source fails; an operator promotes through node B; node C notices by itself.
    await a.kill();
    await primary.stop('immediate', true);
    const t0 = Date.now();
    const promoted = await call(b.url, 'POST', '/api/v1/system/link/promote');
    assert.equal(promoted.status, 200, promoted.text);
    assert.equal(promoted.body.role, 'promoted');
    const tPromoted = Date.now();
    await waitFor(async () => (await call(c.url, 'GET', '/health')).body.cluster?.role === 'primary', { what: 'node C sees the promotion', timeoutMs: 5_000, intervalMs: 50 });
    const noticedMs = Date.now() - tPromoted;
    console.log(`# promotion: pg_promote answered in ${tPromoted - t0} ms; the other node served as primary ${noticedMs} ms later`);
    assert.ok(noticedMs <= 2_500, `node C noticed the promotion within about 2 s (${noticedMs} ms)`);

    // Messages and the cursor of group g are as the source left them; writes are served on both nodes.
    const rest = await call(c.url, 'GET', '/api/v1/pop/queue/sb?batch=10&consumerGroup=g');
    assert.equal(rest.status, 200, rest.text);
    assert.deepEqual(rest.body.messages.map((m: any) => m.data), [{ n: 3 }, { n: 4 }, { n: 5 }, { n: 6 }]);
    const ack = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: rest.body.messages.map((m: any) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed', consumerGroup: 'g' })) });
    assert.ok(ack.body.every((x: any) => x.success), ack.text);
    assert.equal(ack.status, 200, ack.text);
    assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'sb', partition: 'p', payload: { n: 7 } }] })).status, 201);
    const seven = await call(c.url, 'GET', '/api/v1/pop/queue/sb?batch=10&consumerGroup=g&wait=true&timeout=10000');
    assert.equal(seven.status, 200, `${seven.status} ${seven.text} ack: ${ack.text}`);
    assert.deepEqual(seven.body.messages.map((m: any) => m.data), [{ n: 7 }]);
    assert.equal((await call(b.url, 'GET', '/api/v1/system/link')).body.role, 'promoted');
    await waitFor(async () => (await call(c.url, 'GET', '/health')).body.cluster?.nodes === 2, { what: 'both promoted nodes joined the membership' });
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    for (const s of servers.reverse()) await s.stop('immediate');
  }
});
