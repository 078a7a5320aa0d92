/**
 * Failures of the shared database and of node clocks (docs/cluster.md#failures): a primary that
 * turns read-only refuses writes with 503 `db_read_only` and keeps serving reads, then serves
 * writes again by itself; a node whose clock runs an hour ahead (libfaketime) can neither take a
 * lease another node holds nor run a cluster-wide job.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { freshDatabase, TEST_PG_URL } from './postgres-backend.js';

const FAST = { QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1500' };

/** Runs `sql` on the admin database (ALTER DATABASE, pg_terminate_backend). */
async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Ends every session on database `name`, so the pools reconnect and read its new defaults. */
function reconnectAll(name: string): Promise<void> {
  return admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid()`);
}

/** Opens a transaction on `holder` that locks the row of partition `partition` of queue `queue`, so a push to it waits. */
async function holdPartition(holder: pg.Client, queue: string, partition: string): Promise<void> {
  await holder.query('BEGIN');
  await holder.query(`SELECT p.id FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2 FOR UPDATE`, [queue, partition]);
}

/** The pid of a session of database `name` (not `holder`'s) waiting on a lock, once there is one. */
function waitingOnLock(holder: pg.Client, name: string, what: string): Promise<number> {
  return waitFor(async () => {
    const r = await holder.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`, [name]);
    return r.rows[0]?.pid as number | undefined;
  }, { what });
}

test('a read-only primary: writes answer 503 db_read_only with Retry-After, reads are served, writes resume when it accepts them again', async () => {
  const db = await freshDatabase();
  const nodes: BrokerHandle[] = [];
  try {
    const a = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST } });
    nodes.push(a);
    assert.equal((await call(a.url, 'POST', '/api/v1/configure', { queue: 'ro', options: {} })).status, 200);
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'ro', payload: { n: 1 } }] })).status, 201);

    await admin(`ALTER DATABASE ${db.name} SET default_transaction_read_only = on`);
    await reconnectAll(db.name);
    // While the pool notices its ended sessions a push may answer 503 db_unavailable (a session
    // the database ended, docs/cluster.md#failures): wait for the read-only refusal itself.
    const refused = await waitFor(async () => {
      const r = await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'ro', payload: { n: 'refused' } }] });
      return r.status === 503 && r.body.code !== 'db_unavailable' ? r : undefined;
    }, { what: 'a push refused while the database is read-only' });
    assert.equal(refused.body.code, 'db_read_only');
    assert.equal(refused.headers.get('retry-after'), '1');
    const pop = await waitFor(async () => {
      const r = await call(a.url, 'GET', '/api/v1/pop/queue/ro?batch=10');
      return r.status === 503 && r.body.code === 'db_unavailable' ? undefined : r; // another ended session of the pool
    }, { what: 'a pop answered on a live session' });
    assert.equal(pop.status, 503, 'a pop takes a lease: it is a write');
    assert.equal(pop.body.code, 'db_read_only');
    // Reads are served.
    const listing = await call(a.url, 'GET', '/api/v1/messages?queue=ro&limit=10');
    assert.equal(listing.status, 200, listing.text);
    assert.equal((await call(a.url, 'GET', '/api/v1/resources/queues/ro')).status, 200);
    const h = await waitFor(async () => {
      const r = await call(a.url, 'GET', '/health');
      return r.body.database === 'read-only' ? r : undefined;
    }, { what: '/health says read-only' });
    assert.equal(h.status, 200);
    assert.equal(h.body.cluster.role, 'read_only');
    assert.equal((await call(a.url, 'GET', '/status')).body.membership.singletons.filter((s: any) => s.here).length, 0, 'a node that cannot write runs no cluster-wide job');

    await admin(`ALTER DATABASE ${db.name} SET default_transaction_read_only = off`);
    await reconnectAll(db.name);
    await waitFor(async () => (await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'ro', payload: { n: 2 } }] })).status === 201,
      { what: 'pushes served again' });
    const got = await call(a.url, 'GET', '/api/v1/pop/queue/ro?batch=10&autoAck=true');
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.messages.map((m: any) => m.data), [{ n: 1 }, { n: 2 }], 'nothing refused was stored, nothing stored was lost');
    await waitFor(async () => (await call(a.url, 'GET', '/health')).body.cluster?.role === 'primary', { what: 'role primary again' });
  } finally {
    await admin(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`).catch(() => undefined);
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

test('a database that refuses connections: /health answers 503 within a few heartbeats, 200 again once it accepts them', async () => {
  const db = await freshDatabase();
  const nodes: BrokerHandle[] = [];
  try {
    const a = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST } });
    nodes.push(a);
    await admin(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    await reconnectAll(db.name);
    const down = await waitFor(async () => {
      const r = await call(a.url, 'GET', '/health');
      return r.status === 503 ? r : undefined;
    }, { what: '/health 503 while the database refuses connections' });
    assert.equal(down.body.database, 'disconnected');
    await admin(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
    await waitFor(async () => (await call(a.url, 'GET', '/health')).status === 200, { what: '/health 200 again' });
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'back', payload: { n: 1 } }] })).status, 201);
  } finally {
    await admin(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`).catch(() => undefined);
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

test('the database ends a session in the middle of a transaction: that request gets a 503, the node keeps serving (it crashed on the unhandled connection error)', async () => {
  const db = await freshDatabase();
  const nodes: BrokerHandle[] = [];
  const holder = new pg.Client({ connectionString: db.url });
  try {
    const a = await startBroker({ env: { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST } });
    nodes.push(a);
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'cut', partition: 'p', payload: { n: 1 } }] })).status, 201);
    // Another session holds the partition row, so the next push's transaction waits on it.
    await holder.connect();
    await holdPartition(holder, 'cut', 'p');
    const push = call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'cut', partition: 'p', payload: { n: 2 } }] });
    const waiting = await waitingOnLock(holder, db.name, 'the push waiting on the row lock');
    await admin(`SELECT pg_terminate_backend(${waiting})`);
    const cut = await push;
    assert.equal(cut.status, 503, cut.text);
    assert.equal(cut.body.code, 'db_unavailable');
    assert.ok(cut.headers.get('retry-after'), 'Retry-After');
    await holder.query('ROLLBACK');
    assert.equal((await call(a.url, 'GET', '/health')).status, 200, 'the node is alive');
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'cut', partition: 'p', payload: { n: 3 } }] })).status, 201);
    const got = await call(a.url, 'GET', '/api/v1/pop/queue/cut?batch=10&autoAck=true');
    assert.deepEqual(got.body.messages.map((m: any) => m.data.n), [1, 3], 'the cut push stored nothing');
  } finally {
    await holder.end().catch(() => undefined);
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

test('a node frozen in the middle of a transaction stalls the others only until QUEEN_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS; thawed, it answers 503 and serves again', async () => {
  const db = await freshDatabase();
  const nodes: BrokerHandle[] = [];
  const holder = new pg.Client({ connectionString: db.url });
  let frozen: BrokerHandle | undefined;
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST, QUEEN_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: '1000' };
    const a = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'thaw-a' } });
    nodes.push(a);
    const b = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'thaw-b' } });
    nodes.push(b);
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'frozen', partition: 'p', payload: { n: 1 } }] })).status, 201);
    // B's push waits on a row lock; B freezes; the lock passes to B's transaction, which then sits idle.
    await holder.connect();
    await holdPartition(holder, 'frozen', 'p');
    const onB = fetch(`${b.url}/api/v1/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ items: [{ queue: 'frozen', partition: 'p', payload: { n: 2 } }] }), signal: AbortSignal.timeout(60_000) });
    await waitingOnLock(holder, db.name, 'B\'s push waiting on the row lock');
    b.proc.kill('SIGSTOP');
    frozen = b;
    await holder.query('ROLLBACK');
    await waitFor(async () => (await holder.query(`SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND state = 'idle in transaction' AND pid <> pg_backend_pid()`, [db.name])).rows.length > 0,
      { what: 'the frozen node\'s transaction holding the lock, idle' });
    // A's push to the same partition goes through once the server ended B's idle transaction.
    const onA = await fetch(`${a.url}/api/v1/push`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ items: [{ queue: 'frozen', partition: 'p', payload: { n: 3 } }] }), signal: AbortSignal.timeout(30_000) });
    assert.equal(onA.status, 201, await onA.clone().text());
    b.proc.kill('SIGCONT');
    frozen = undefined;
    const cut = await onB;
    assert.equal(cut.status, 503, await cut.clone().text());
    assert.equal(((await cut.json()) as { code: string }).code, 'db_unavailable');
    await waitFor(async () => (await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: 'frozen', partition: 'p', payload: { n: 4 } }] })).status === 201, { what: 'B serving again' });
    const got = await call(a.url, 'GET', '/api/v1/pop/queue/frozen?batch=10&autoAck=true');
    assert.deepEqual(got.body.messages.map((m: any) => m.data.n), [1, 3, 4], 'the frozen push stored nothing');
  } finally {
    frozen?.proc.kill('SIGCONT');
    await holder.end().catch(() => undefined);
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

test('QUEEN_STANDBY=true on a primary: the node reads, answers writes 503 standby, cannot promote; a node in auto mode writes', async () => {
  const db = await freshDatabase();
  const nodes: BrokerHandle[] = [];
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST };
    const a = await startBroker({ env });
    nodes.push(a);
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'forced', payload: { n: 1 } }] })).status, 201);
    const s = await startBroker({ env: { ...env, QUEEN_STANDBY: 'true' } });
    nodes.push(s);
    assert.equal((await call(s.url, 'GET', '/health')).body.cluster.role, 'standby');
    const push = await call(s.url, 'POST', '/api/v1/push', { items: [{ queue: 'forced', payload: { n: 2 } }] });
    assert.equal(push.status, 503, push.text);
    assert.equal(push.body.code, 'standby');
    assert.equal(push.headers.get('retry-after'), '1');
    const listing = await call(s.url, 'GET', '/api/v1/messages?queue=forced&limit=10');
    assert.equal(listing.status, 200, listing.text);
    assert.equal((listing.body.messages ?? listing.body).length, 1);
    const link = await call(s.url, 'GET', '/api/v1/system/link');
    assert.equal(link.body.role, 'standby');
    assert.equal(link.body.follower.state, 'halted');
    const promote = await call(s.url, 'POST', '/api/v1/system/link/promote');
    assert.equal(promote.status, 409);
    assert.equal(promote.body.code, 'promote_unavailable');
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'forced', payload: { n: 3 } }] })).status, 201, 'the other node writes');
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});

const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/faketime/libfaketime.so.1']
  .find((p) => fs.existsSync(p));

test('a node whose clock runs 1 h ahead (faketime) changes nothing: it takes no lease another node holds, its acks count, the timers it fires and schedules keep the database\'s time', {
  skip: LIBFAKETIME ? undefined : 'libfaketime is not installed (apt-get install faketime)',
}, async () => {
  const db = await freshDatabase();
  const nodes: BrokerHandle[] = [];
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, ...FAST };
    // B starts first, so it holds every cluster-wide job (timers among them).
    const b = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'ahead', LD_PRELOAD: LIBFAKETIME!, FAKETIME: '+1h', FAKETIME_DONT_FAKE_MONOTONIC: '1' } });
    nodes.push(b);
    await waitFor(async () => {
      const s = (await call(b.url, 'GET', '/status')).body.membership.singletons as any[];
      return s.length === 3 && s.every((h) => h.holder === 'ahead' && h.here);
    }, { what: 'the skewed node holds the three jobs' });
    const a = await startBroker({ env: { ...env, QUEEN_SERVER_ID: 'on-time' } });
    nodes.push(a);
    // The fake clock is in effect: B's own idea of the time is an hour ahead.
    const skew = await waitFor(async () => {
      const m = (await call(b.url, 'GET', '/status')).body.membership;
      return m?.nodes === 2 ? m.clockSkewMs as number : undefined;
    }, { what: 'B sees both nodes and measured its skew' });
    assert.ok(skew > 3_500_000 && skew < 3_700_000, `B's clock is an hour ahead of the database's (${skew} ms)`);

    assert.equal((await call(a.url, 'POST', '/api/v1/configure', { queue: 'skew', options: { leaseTime: 60 } })).status, 200);
    assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'skew', payload: { n: 1 } }, { queue: 'skew', payload: { n: 2 } }] })).status, 201);
    const popped = await call(a.url, 'GET', '/api/v1/pop/queue/skew?batch=1');
    assert.equal(popped.status, 200);
    const m1 = popped.body.messages[0];
    // On B's clock the 60 s lease ran out 59 minutes ago; on the database's it is live.
    const stolen = await call(b.url, 'GET', '/api/v1/pop/queue/skew?batch=10');
    assert.equal(stolen.status, 204, `B must not take the partition leased by A: ${stolen.text}`);
    // B can settle A's delivery (the lease is checked on the database clock).
    const ack = await call(b.url, 'POST', '/api/v1/ack', { transactionId: m1.transactionId, partitionId: m1.partitionId, leaseId: m1.leaseId, status: 'completed' });
    assert.equal(ack.status, 200, ack.text);
    assert.equal(ack.body.success ?? true, true, ack.text);
    const next = await call(b.url, 'GET', '/api/v1/pop/queue/skew?batch=10&autoAck=true');
    assert.equal(next.status, 200);
    assert.deepEqual(next.body.messages.map((m: any) => m.data), [{ n: 2 }], 'the next delivery follows the ack, in offset order');

    // A timer scheduled through the on-time node, due in 300 ms, is fired on time by the skewed holder.
    const sched = await call(a.url, 'POST', '/api/v1/timers', { operations: [{ op: 'schedule', queue: 'skew-timer', timerKey: 'k', delayMs: 300, txn: 't1', payload: Buffer.from('{"t":1}').toString('base64') }] });
    assert.equal(sched.status, 200, sched.text);
    const fired = await call(a.url, 'GET', '/api/v1/pop/queue/skew-timer?wait=true&timeout=15000&autoAck=true');
    assert.equal(fired.status, 200, 'the timer fired within seconds, not an hour early or late');
    assert.deepEqual(fired.body.messages.map((m: any) => m.data), [{ t: 1 }]);
    // And one scheduled through the skewed node 30 s ahead has not fired early.
    const later = await call(b.url, 'POST', '/api/v1/timers', { operations: [{ op: 'schedule', queue: 'skew-timer', timerKey: 'k2', delayMs: 30_000, txn: 't2', payload: Buffer.from('{"t":2}').toString('base64') }] });
    assert.equal(later.status, 200, later.text);
    const peek = await call(a.url, 'GET', '/api/v1/timers/skew-timer/k2');
    assert.equal(peek.status, 200, peek.text);
    const dueIn = Date.parse(peek.body.deliverAt) - Date.now();
    assert.ok(dueIn > 20_000 && dueIn <= 31_000, `deliverAt is 30 s from the database's now, not from the skewed clock's (${dueIn} ms)`);
  } finally {
    await Promise.all(nodes.map((n) => n.kill()));
    await db.drop();
  }
});
