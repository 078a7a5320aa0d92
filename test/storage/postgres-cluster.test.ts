/**
 * Membership and singleton jobs of broker processes sharing one PostgreSQL database
 * (docs/cluster.md#membership, docs/cluster.md#singletons): real processes, real database.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { runBrokerExpectingExit, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { popWait, schedule, timers } from '../http/coordination/timer-helpers.js';
import { freshDatabase } from './postgres-backend.js';

/** Fast heartbeats so that a dead node is noticed within seconds. */
const FAST = { QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1500' };

async function health(url: string): Promise<any> {
  return (await call(url, 'GET', '/health')).body;
}

async function membership(url: string): Promise<any> {
  return (await call(url, 'GET', '/status')).body.membership;
}

/** The value of a Prometheus series line (`name{labels} value`), summed over matches; 0 when absent. */
async function metric(url: string, name: string, labels: string): Promise<number> {
  const text = (await call(url, 'GET', '/metrics/prometheus')).text;
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && line.includes(labels)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

test('membership: nodes, epochs per boot, a duplicate live QUEEN_SERVER_ID is fatal before listening, a killed node drops out', async () => {
  const db = await freshDatabase();
  const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST };
  const nodes: BrokerHandle[] = [];
  try {
    const a = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'node-a' } });
    nodes.push(a);
    let b = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'node-b' } });
    nodes.push(b);
    await waitFor(async () => (await health(a.url)).cluster?.nodes === 2, { what: 'two live nodes seen by A' });
    const h = await health(a.url);
    assert.equal(h.engine, 'postgres');
    assert.deepEqual(h.cluster, { serverId: 'node-a', epoch: 1, nodes: 2, role: 'primary' });
    // B's view, once both rows carry the bound HTTP ports (announced after the listeners opened).
    const m = await waitFor(async () => {
      const v = await membership(b.url);
      const ok = v.members.length === 2 && v.members.every((x: any) => x.live && x.address.endsWith(`:${x.serverId === 'node-a' ? a.port : b.port}`));
      return ok ? v : undefined;
    }, { what: 'B lists both live nodes with their HTTP addresses' });
    assert.equal(m.serverId, 'node-b');
    const raft = await call(b.url, 'GET', '/api/v1/system/raft/membership');
    assert.equal(raft.status, 200);
    assert.equal(raft.body.engine, 'postgres');
    assert.deepEqual(raft.body.members.map((x: any) => [x.id, x.live, x.epoch]), [['node-a', true, 1], ['node-b', true, 1]]);
    assert.deepEqual(m.members.map((x: any) => x.serverId), ['node-a', 'node-b']);

    // A third process under a live id: clear message, non-zero exit, never listening.
    const dup = await runBrokerExpectingExit({ ...env, QUEEN_SERVER_ID: 'node-a', LOG_LEVEL: 'info' });
    assert.equal(dup.code, 1, dup.output);
    assert.match(dup.output, /fatal: QUEEN_SERVER_ID=node-a is already running at \S+:\d+ \(epoch 1\)/);
    assert.ok(!dup.output.includes('queen-ts listening'), dup.output);
    assert.equal((await health(a.url)).cluster.epoch, 1, 'the running node keeps its row');

    // A clean stop leaves; the next start under the id is the next epoch.
    await a.stop();
    nodes.shift();
    const a2 = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'node-a' } });
    nodes.push(a2);
    assert.equal((await health(a2.url)).cluster.epoch, 2);

    // SIGKILL: its database session ends with it, so the others count it out at their next
    // heartbeat (not after the TTL), and the id may start again at once.
    await b.kill();
    await waitFor(async () => (await health(a2.url)).cluster?.nodes === 1, { what: 'node-b counted out', timeoutMs: 10_000 });
    b = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'node-b' } });
    nodes.push(b);
    assert.equal((await health(b.url)).cluster.epoch, 2);

    // Unset QUEEN_SERVER_ID: each process has a name of its own, never a collision.
    const c = await startBroker({ env });
    const d = await startBroker({ env });
    nodes.push(c, d);
    const ids = [(await health(c.url)).cluster.serverId, (await health(d.url)).cluster.serverId];
    assert.notEqual(ids[0], ids[1]);
    await waitFor(async () => (await health(c.url)).cluster?.nodes === 4, { what: 'four live nodes' });
    assert.match(await call(c.url, 'GET', '/metrics/prometheus').then((r) => r.text), /^queen_cluster_nodes_live 4$/m);
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

test('singletons: on 3 nodes a due timer fires exactly once; the holder is killed, another node takes over and the next timer fires once', async () => {
  const db = await freshDatabase();
  const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST };
  const admin = new pg.Client({ connectionString: db.url });
  const nodes: BrokerHandle[] = [];
  try {
    for (const id of ['s1', 's2', 's3']) nodes.push(await startBroker({ env: { ...env, QUEEN_SERVER_ID: id } }));
    await admin.connect();
    const byId = new Map(nodes.map((n, i) => [`s${i + 1}`, n]));
    // Every job has one holder, and every node sees the same holder.
    const holderOf = async (url: string, task: string) => (await membership(url)).singletons.find((s: any) => s.task === task)?.holder as string | null | undefined;
    const holder = await waitFor(async () => {
      const seen = await Promise.all(nodes.map((n) => holderOf(n.url, 'timers')));
      return seen.every((s) => s && s === seen[0]) ? seen[0] : undefined;
    }, { what: 'one timers holder seen by all three nodes' });
    for (const task of ['retention', 'kv-expiry']) await waitFor(async () => await holderOf(nodes[0]!.url, task), { what: `a ${task} holder` });
    const holderNode = byId.get(holder)!;
    const others = nodes.filter((n) => n !== holderNode);
    const st = await membership(holderNode.url);
    assert.equal(st.singletons.find((s: any) => s.task === 'timers').here, true);
    assert.equal((await membership(others[0]!.url)).singletons.find((s: any) => s.task === 'timers').here, false);
    assert.equal(await metric(holderNode.url, 'queen_singleton_holder', `task="timers",server_id="${holder}"`), 1);

    // A timer scheduled through a node that does not hold the job: due in 300 ms, fired once.
    const fireOnce = async (via: BrokerHandle, queue: string) => {
      const s = await timers(via.url, [schedule(queue, 'k', { delayMs: 300 })]);
      assert.equal(s.status, 200, s.text);
      const got = await popWait(via.url, queue, 15_000, '&autoAck=true');
      assert.equal(got.status, 200, `the timer's message arrives (${got.status})`);
      assert.equal(got.body.messages.length, 1);
      // Once fired, the timer row is gone: no node can fire it again; the queue holds one message.
      await waitFor(async () => (await admin.query('SELECT count(*)::int AS n FROM queen.timers WHERE queue = $1', [queue])).rows[0].n === 0, { what: 'the timer row deleted' });
      const n = (await admin.query(`SELECT count(*)::int AS n FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
                                     JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, [queue])).rows[0].n;
      assert.equal(n, 1, 'exactly one message from the timer');
    };
    await fireOnce(others[0]!, 'tq1');
    // Only the holder ran the timers job.
    assert.ok(await metric(holderNode.url, 'queen_singleton_runs_total', 'task="timers"') >= 1);
    for (const o of others) assert.equal(await metric(o.url, 'queen_singleton_runs_total', 'task="timers"'), 0);
    const before = (await admin.query(`SELECT holder, fencing FROM queen.maintenance_leases WHERE task = 'timers'`)).rows[0];
    assert.equal(before.holder, holder);

    // Kill the holder: a survivor takes the job within the TTL plus a heartbeat or two.
    await holderNode.kill();
    const t0 = Date.now();
    const next = await waitFor(async () => {
      const h = await holderOf(others[0]!.url, 'timers');
      return h && h !== holder ? h : undefined;
    }, { what: 'another node takes the timers job', timeoutMs: 10_000 });
    const takeoverMs = Date.now() - t0;
    assert.ok(takeoverMs < 10_000);
    console.log(`# timers singleton taken over by ${next} ${takeoverMs} ms after SIGKILL of ${holder}`);
    const after = (await admin.query(`SELECT holder, fencing FROM queen.maintenance_leases WHERE task = 'timers'`)).rows[0];
    assert.equal(after.holder, next);
    assert.ok(Number(after.fencing) > Number(before.fencing), 'the fencing number moved on with the hand-over');
    const survivor = others.find((o) => o !== byId.get(next))!;
    await fireOnce(survivor, 'tq2');
    assert.equal(await metric(survivor.url, 'queen_singleton_runs_total', 'task="timers"'), 0, 'the node that does not hold the job never ran it');
  } finally {
    await admin.end().catch(() => undefined);
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

test('singletons: a holder frozen with SIGSTOP (its session still open) loses its jobs after the TTL; thawed, it runs none of them', async () => {
  const db = await freshDatabase();
  const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST };
  const nodes: BrokerHandle[] = [];
  let frozen: BrokerHandle | undefined;
  try {
    const first = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'f1' } });
    nodes.push(first);
    await waitFor(async () => (await membership(first.url)).singletons.filter((s: any) => s.here).length === 3, { what: 'f1 holds the three jobs' });
    const second = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'f2' } });
    nodes.push(second);
    first.proc.kill('SIGSTOP');
    frozen = first;
    const t0 = Date.now();
    await waitFor(async () => (await membership(second.url)).singletons.filter((s: any) => s.holder === 'f2' && s.here).length === 3,
      { what: 'f2 takes the jobs once f1\'s leases ran out', timeoutMs: 10_000 });
    const tookMs = Date.now() - t0;
    assert.ok(tookMs >= 1000, `not before the lease could have run out (${tookMs} ms)`);
    first.proc.kill('SIGCONT');
    frozen = undefined;
    // Thawed, f1 finds the leases held by f2: it holds nothing, and f2 keeps them.
    await waitFor(async () => {
      const m = await membership(first.url);
      return m.singletons.length === 3 && m.singletons.every((s: any) => !s.here && s.holder === 'f2');
    }, { what: 'f1 sees f2 holding every job and runs none' });
    assert.equal((await membership(second.url)).singletons.filter((s: any) => s.here).length, 3);
  } finally {
    frozen?.proc.kill('SIGCONT');
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});
