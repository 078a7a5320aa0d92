/**
 * Several processes' backends on one PostgreSQL database (docs/storage.md#postgresql-backend):
 * migrations applied once under the advisory lock, wake-up hints crossing between backends by
 * LISTEN/NOTIFY (also after the LISTEN connection is terminated), and claims racing from several
 * backends never holding two live leases on one cursor nor losing or reordering a message, nor
 * reporting a wrong delivery attempt, judged on what the database recorded (cursor-audit.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { attemptOf, DEFAULT_TENANT, type ClaimRequest, type QueueBackend } from '../../src/storage/contract.js';
import { PgBackend } from '../../src/storage/postgres/backend.js';
import { migrate } from '../../src/storage/postgres/migrate.js';
import { MIGRATIONS } from '../../src/storage/postgres/schema.js';
import { waitFor } from '../helpers/wait.js';
import { cursorChanges, grantKey, grantsOf, installCursorAudit, overlappingGrants, trueAttempts } from './cursor-audit.js';
import { freshDatabase } from './postgres-backend.js';

const Q = { tenant: DEFAULT_TENANT, queue: 'q' };
const P = { ...Q, partition: 'p' };
const item = (txn: string) => ({ messageId: `m-${txn}`, transactionId: txn, payload: `{"t":"${txn}"}`, encrypted: false, traceId: null, producerSub: null });

async function shared<T>(n: number, fn: (backends: PgBackend[], url: string) => Promise<T>): Promise<T> {
  const db = await freshDatabase();
  const backends: PgBackend[] = [];
  try {
    for (let i = 0; i < n; i++) backends.push(await PgBackend.open({ pool: { connectionString: db.url, max: 4 }, serverId: `node-${i}` }));
    return await fn(backends, db.url);
  } finally {
    for (const b of backends) await b.close();
    await db.drop();
  }
}

test('migrations: concurrent openers apply each version once; a second run applies nothing', async () => {
  const db = await freshDatabase();
  const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: db.url, max: 1 }));
  for (const p of pools) p.on('error', () => undefined); // an idle connection ended from outside is not this test's failure
  try {
    const applied = await Promise.all(pools.map((p) => migrate(p)));
    assert.deepEqual(applied.map((a) => a.length).sort(), [0, 0, MIGRATIONS.length], 'one opener applied every version, the others waited and found them');
    assert.deepEqual(await migrate(pools[0]!), []);
    const rows = (await pools[0]!.query('SELECT version FROM queen.schema_migrations')).rows;
    assert.deepEqual(rows.map((r: { version: number }) => r.version).sort((x, y) => x - y), MIGRATIONS.map((m) => m.version));
  } finally {
    for (const p of pools) await p.end();
    await db.drop();
  }
});

test('a push through backend A wakes a listener of backend B (LISTEN/NOTIFY), also after B\'s LISTEN connection is terminated', async () => {
  await shared(2, async ([a, b], url) => {
    const seen: string[][] = [];
    b!.onPartitionsReady((q, parts) => { if (q.queue === 'q') seen.push(parts); });
    await a!.append({ key: P, items: [item('x')], dedupWindowMs: 0, now: Date.now() });
    await waitFor(() => seen.length > 0, { what: 'the hint on B' });
    assert.deepEqual(seen[0], ['p']);
    assert.deepEqual([a!.notifyStats.sent, b!.notifyStats.received], [1, 1]);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'");
      assert.ok(killed.rowCount! >= 2, 'both LISTEN connections terminated');
    } finally {
      await admin.end();
    }
    await waitFor(() => b!.notifyStats.reconnects > 0, { what: 'B reconnecting its LISTEN connection' });
    const before = seen.length;
    await a!.append({ key: { ...Q, partition: 'p2' }, items: [item('y')], dedupWindowMs: 0, now: Date.now() });
    await waitFor(() => seen.length > before, { what: 'a hint on B after the reconnection' });
    assert.deepEqual(seen[seen.length - 1], ['p2']);
  });
});

test('claims racing from three backends: never two live leases on one cursor, delivery in offset order, nothing acknowledged lost (judged on the database\'s records)', async () => {
  // The verdict comes from the cursor's recorded changes (cursor-audit.ts), not from the order in
  // which the answers reached this process: a commit's answer and the next claim's answer arrive
  // on two sockets, so "who held the lease" and "in which order were offsets acked" seen here can
  // be wrong either way.
  const N = 200;
  await shared(3, async (backends, url) => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await installCursorAudit(admin);
      for (let i = 0; i < N; i += 50) {
        await backends[0]!.append({ key: P, items: Array.from({ length: 50 }, (_, k) => item(`t${i + k}`)), dedupWindowMs: 0, now: 1_000 });
      }
      const acked: number[] = [];
      const consumer = async (b: QueueBackend, id: number) => {
        let idle = 0;
        for (let round = 0; idle < 20 && round < 10_000; round++) {
          const leaseId = `L-${id}-${round}`;
          const now = 2_000 + round;
          const req: ClaimRequest = { queue: Q, group: 'g', maxPartitions: 1, batch: 7, leaseId, leaseMs: 60_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now };
          const [got] = await b.claim(req);
          if (!got) { idle++; await new Promise((r) => setImmediate(r)); continue; }
          idle = 0;
          const offs = got.messages.map((m) => m.offset);
          const r = await b.commitCursor({ key: { ...P, group: 'g' }, leaseId, committedOffset: offs[offs.length - 1]! + 1, retryCount: 0, release: true, now });
          assert.equal(r.applied, true, 'the holder of a live lease commits');
          acked.push(...offs);
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5].map((i) => consumer(backends[i % 3]!, i)));
      const changes = await cursorChanges(admin);
      assert.deepEqual(overlappingGrants(changes, 60_000), [], 'never two live leases at once');
      // In the database's order: each grant starts where the cursor stands, each move of the
      // position is the commit of the batch granted just before it, and the moves cover 0..N.
      const grants = grantsOf(changes);
      let at = 0;
      let granted: [number, number] | undefined;
      for (const c of changes) {
        if (c.op === 'UPDATE' && c.newLease !== null && c.newLease !== c.oldLease) {
          assert.equal(Math.max(c.oldNext!, c.firstOffset), at, `grant ${c.newLease} starts at the position (seq ${c.seq})`);
          granted = [at, c.newUpTo!];
        } else if (c.oldNext !== null && c.newNext !== c.oldNext) {
          assert.deepEqual([c.oldNext, c.newNext], granted, `the position moves by the batch just granted (seq ${c.seq})`);
          at = c.newNext;
          granted = undefined;
        }
      }
      assert.equal(at, N, 'the position reached the head');
      assert.ok(grants.length >= N / 7, `${grants.length} grants`);
      assert.deepEqual(acked.sort((x, y) => x - y), Array.from({ length: N }, (_, i) => i), 'every offset acknowledged once');
      assert.equal((await backends[1]!.readCursor({ ...P, group: 'g' }))?.committedOffset, N);
    } finally {
      await admin.end();
    }
  });
});

test('claims racing on the database clock from two backends, with nacks, partial acks and expired leases: each deliveryAttempt is what the database recorded', { timeout: 180_000 }, async () => {
  // Eight consumers on two backends (nodes: database clock, as a broker runs) over two partitions;
  // each batch is acked, nacked, acked in part, or left to expire (250 ms leases). The attempts each
  // claim reports are checked against the delivery history of the cursors' recorded changes
  // (cursor-audit.ts): never below the true count, and 1 exactly for a first delivery. A claim
  // that counted from the cursor as its candidate read saw it, not as it locked it (another node's
  // claim and nack in between), fails this: tried by passing the candidate statement's counts to
  // the grant, 4 runs out of 4 failed, each with over 100 attempts reported below the true count.
  const PER = 40;
  const LEASE_MS = 250;
  const parts = ['a', 'b'];
  const db = await freshDatabase();
  const backends: PgBackend[] = [];
  const admin = new pg.Client({ connectionString: db.url });
  try {
    for (let i = 0; i < 2; i++) backends.push(await PgBackend.open({ pool: { connectionString: db.url, max: 4 }, serverId: `node-${i}`, clock: 'database', listen: false }));
    await admin.connect();
    await installCursorAudit(admin);
    for (const partition of parts) {
      await backends[0]!.append({ key: { ...Q, partition }, items: Array.from({ length: PER }, (_, k) => item(`${partition}${k}`)), dedupWindowMs: 0, now: Date.now() });
    }
    const reported: { key: string; offset: number; attempt: number }[] = [];
    let refused = 0;
    const done = async () => {
      for (const partition of parts) if ((await backends[0]!.readCursor({ ...Q, partition, group: 'g' }))?.committedOffset !== PER) return false;
      return true;
    };
    let finished = false;
    const consumer = async (b: PgBackend, id: number) => {
      for (let round = 0; !finished; round++) {
        const leaseId = `L-${id}-${round}`;
        const got = await b.claim({ queue: Q, group: 'g', maxPartitions: 1 + (round % 2), batch: 1 + Math.floor(Math.random() * 5), leaseId, leaseMs: LEASE_MS,
          delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now: Date.now() });
        if (got.length === 0) {
          if (await done()) finished = true;
          else await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        for (const batch of got) {
          const offs = batch.messages.map((m) => m.offset);
          assert.equal(batch.deliveryAttempt, attemptOf(batch.attempts, offs[0]!), 'the batch attempt is its first message\'s');
          for (const o of offs) reported.push({ key: grantKey(leaseId, batch.partitionId), offset: o, attempt: attemptOf(batch.attempts, o) });
          const cursor = await b.readCursor({ ...Q, partition: batch.partition, group: 'g' });
          const action = Math.random();
          if (action < 0.1) continue; // left to expire
          const retry = cursor?.retryCount ?? 0;
          const commit = retry < 4 && action < 0.8 ? { committedOffset: offs[0]!, retryCount: retry + 1 } // nack: the batch again
            : action < 0.9 ? { committedOffset: offs[0]! + Math.ceil(offs.length / 2), retryCount: 0 } // the first half acked
              : { committedOffset: offs[offs.length - 1]! + 1, retryCount: 0 }; // ack
          const r = await b.commitCursor({ key: { ...Q, partition: batch.partition, group: 'g' }, leaseId, ...commit, release: true, now: Date.now() });
          if (!r.applied) refused++; // the lease ran out first
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => consumer(backends[i % 2]!, i)));
    // Then a storm on one partition: the same eight claim it back to back and nack every batch, so
    // that claims and nacks of the other node fall between a claim's two statements.
    await backends[0]!.append({ key: { ...Q, partition: 'storm' }, items: Array.from({ length: 20 }, (_, k) => item(`s${k}`)), dedupWindowMs: 0, now: Date.now() });
    const storm = async (b: PgBackend, id: number) => {
      for (let round = 0; round < 60; round++) {
        const leaseId = `S-${id}-${round}`;
        const got = await b.claim({ queue: Q, group: 'g', maxPartitions: 1, batch: 1 + (round % 3), leaseId, leaseMs: 10_000,
          delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now: Date.now() });
        for (const batch of got) {
          for (const m of batch.messages) reported.push({ key: grantKey(leaseId, batch.partitionId), offset: m.offset, attempt: attemptOf(batch.attempts, m.offset) });
          const r = await b.commitCursor({ key: { ...Q, partition: batch.partition, group: 'g' }, leaseId, committedOffset: batch.messages[0]!.offset, retryCount: 0, release: true, now: Date.now() });
          assert.equal(r.applied, true, 'a nack under a live lease applies');
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => storm(backends[i % 2]!, i)));
    const changes = await cursorChanges(admin);
    assert.deepEqual(overlappingGrants(changes, LEASE_MS), [], 'never two live leases at once');
    const truth = trueAttempts(changes);
    let redelivered = 0;
    const wrong: string[] = [];
    for (const r of reported) {
      const t = truth.get(r.key)?.get(r.offset);
      assert.ok(t !== undefined, `the database recorded the delivery of offset ${r.offset} under ${r.key.replace('\u0000', ' ')}`);
      if (t > 1) redelivered++;
      if (r.attempt < t || (r.attempt === 1) !== (t === 1)) wrong.push(`${r.key.replace('\u0000', ' ')} offset ${r.offset}: reported ${r.attempt}, delivered ${t} times`);
    }
    console.log(`# ${grantsOf(changes).length} grants, ${reported.length} deliveries (${redelivered} redeliveries), ${refused} commits refused`);
    assert.deepEqual(wrong, [], 'every deliveryAttempt at least the true count, and 1 only for a first delivery');
    assert.ok(redelivered > 0, 'some messages came again');
  } finally {
    await admin.end().catch(() => undefined);
    for (const b of backends) await b.close();
    await db.drop();
  }
});

test('group commit: concurrent appends share transactions; offsets stay dense and in arrival order per partition', async () => {
  await shared(1, async ([b]) => {
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) =>
      b!.append({ key: { ...Q, partition: `p${i % 3}` }, items: [item(`t${i}`)], dedupWindowMs: 60_000, now: 1_000 })));
    for (let k = 0; k < 3; k++) {
      const offs = results.filter((_, i) => i % 3 === k).map((r) => r.outcomes[0]!.offset);
      assert.deepEqual(offs, Array.from({ length: 40 }, (_, i) => i), `p${k}: dense, in arrival order`);
    }
    assert.ok(b!.groupStats.batches < 120, `appends were gathered (${b!.groupStats.batches} transactions for 120 appends)`);
    const dup = await Promise.all([b!.append({ key: { ...Q, partition: 'p0' }, items: [item('t0')], dedupWindowMs: 60_000, now: 1_001 }),
      b!.append({ key: { ...Q, partition: 'p0' }, items: [item('new')], dedupWindowMs: 60_000, now: 1_001 })]);
    assert.deepEqual(dup.map((r) => [r.outcomes[0]!.status, r.outcomes[0]!.offset]), [['duplicate', 0], ['queued', 40]]);
  });
});

test('on the database clock, a process whose clock runs an hour ahead cannot take a live lease (it could on the callers\' clocks)', async () => {
  const db = await freshDatabase();
  const open = (clock: 'caller' | 'database', id: string) => PgBackend.open({ pool: { connectionString: db.url, max: 2 }, serverId: id, clock, listen: false });
  const backends: PgBackend[] = [];
  try {
    const [a, b, c, d] = [await open('database', 'a'), await open('database', 'b'), await open('caller', 'c'), await open('caller', 'd')];
    backends.push(a, b, c, d);
    const now = Date.now();
    const hour = 3_600_000;
    const req = (leaseId: string, at: number, queue: string): ClaimRequest =>
      ({ queue: { ...Q, queue }, group: 'g', maxPartitions: 1, batch: 10, leaseId, leaseMs: 60_000, delayMs: 0, windowMs: 0, conflation: false, seed: { mode: 'all' }, now: at });
    await a.append({ key: { ...P, queue: 'db' }, items: [item('x')], dedupWindowMs: 0, now });
    assert.equal((await a.claim(req('LA', now, 'db'))).length, 1);
    assert.deepEqual(await b.claim(req('LB', now + hour, 'db')), [], 'the skewed process finds the lease live');
    const held = await b.unit([{ op: 'leaseHeld', leaseId: 'LA', now: now + hour }]);
    assert.equal(held.committed, true, 'and the holder\'s lease still counts as held');
    await c.append({ key: { ...P, queue: 'caller' }, items: [item('y')], dedupWindowMs: 0, now });
    assert.equal((await c.claim(req('LC', now, 'caller'))).length, 1);
    assert.equal((await d.claim(req('LD', now + hour, 'caller'))).length, 1, 'on callers\' clocks the skewed process takes it (what the database clock prevents)');
  } finally {
    for (const x of backends) await x.close();
    await db.drop();
  }
});

test('the LISTEN connection goes to listenUrl when given (QUEEN_PG_LISTEN_URL), and hints still arrive', async () => {
  const db = await freshDatabase();
  const a = await PgBackend.open({ pool: { connectionString: db.url, max: 2 }, serverId: 'a', listen: false });
  const b = await PgBackend.open({ pool: { connectionString: db.url, max: 2 }, serverId: 'b', listenUrl: `${db.url}?application_name=queen_listen_test` });
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    const rows = (await admin.query("SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'queen_listen_test'")).rows as { query: string }[];
    assert.deepEqual(rows.map((r) => r.query), ['LISTEN queen_wake']);
    const seen: string[][] = [];
    b.onPartitionsReady((_q, parts) => seen.push(parts));
    await a.append({ key: P, items: [item('x')], dedupWindowMs: 0, now: Date.now() });
    await waitFor(() => seen.length > 0, { what: 'the hint through the listen URL' });
  } finally {
    await admin.end();
    await a.close();
    await b.close();
    await db.drop();
  }
});
