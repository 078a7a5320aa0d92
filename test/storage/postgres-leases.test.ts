/**
 * Many consumers on many nodes over one PostgreSQL database (docs/cluster.md#what-the-tests-prove,
 * claims in docs/storage.md#postgresql-backend): 8 consumers spread over 3 broker processes pop one
 * queue of 6 partitions with leases while a producer pushes and nodes 1 and 2 are SIGKILLed at random
 * and restarted. The verdict is taken from what the database recorded of the cursors
 * (cursor-audit.ts: every change of a cursor row, in the order the row lock gave them), not from
 * when the answers reached this process (two answers on two sockets arrive in either order, and an
 * answer lost with its node says nothing of what was committed):
 * - no lease granted while another was live on the same cursor (the database's clock);
 * - per partition, each move of the position is the acknowledgement of the whole batch the lease
 *   that held the cursor was granted, starting where the cursor stood, so the moves put together
 *   are exactly 0..head (nothing acknowledged lost, nothing skipped, nothing acknowledged twice);
 * - every delivery a consumer received is the batch the database granted under its lease id, in
 *   offset order, and every ack answered as a success moved the position by its batch;
 * - the database agrees at the end: every cursor at its partition's head.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
import { cursorChanges, grantKey, grantsOf, installCursorAudit, overlappingGrants, type CursorChange } from './cursor-audit.js';
import { freshDatabase } from './postgres-backend.js';

const Q = 'leases';
const PARTITIONS = 6;
const TOTAL = 2_000;
const CONSUMERS = 8;
const NODES = 3;
const LEASE_S = 5;
const KILLS_AT = [400, 900, 1_400]; // acknowledged messages after which a random node is SIGKILLed

interface Delivery {
  consumer: number;
  partition: string;
  partitionId: string;
  leaseId: string;
  seqs: number[];
  offsets: number[];
  /** 'acked': the ack answered success; 'maybe': refused after an attempt that hit a killed node; 'refused': lease gone. */
  outcome: 'acked' | 'maybe' | 'refused';
  /** The refusal's reason and when it came, ms after the pop's request. */
  note?: string;
}

interface PopMessage { transactionId: string; partitionId: string; partition: string; leaseId: string; offset: number | string; data: { p: string; seq: number } }

test('8 consumers on 3 nodes with SIGKILLs: never two live leases per partition, offset order, every message acknowledged once', { timeout: 180_000 }, async (t) => {
  const db = await freshDatabase();
  const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url };
  const nodes: BrokerHandle[] = [];
  const dead: BrokerHandle[] = [];
  try {
    for (let i = 0; i < NODES; i++) nodes.push(await startBroker({ env }));
    assert.equal((await call(nodes[0]!.url, 'POST', '/api/v1/configure', { queue: Q, options: { leaseTime: LEASE_S, retryLimit: 1000 } })).status, 200);
    const pushed = new Map<string, number>();
    const items: { queue: string; partition: string; payload: { p: string; seq: number } }[] = [];
    for (let i = 0; i < TOTAL; i++) {
      const p = `p${i % PARTITIONS}`;
      const seq = pushed.get(p) ?? 0;
      pushed.set(p, seq + 1);
      items.push({ queue: Q, partition: p, payload: { p, seq } });
    }
    const deliveries: Delivery[] = [];
    let acked = 0;
    let failedRequests = 0; // requests that hit a killed node
    let done = false;
    const nodeOf = (c: number) => nodes[c % NODES]!;
    /** After a failed request: wait until the node was replaced or answers again. */
    const recover = async (c: number, was: BrokerHandle) => {
      await waitFor(async () => nodeOf(c) !== was || (await fetch(`${was.url}/health`)).ok, { what: `node ${c % NODES} back`, timeoutMs: 60_000, intervalMs: 50 });
    };
    const consumer = async (c: number) => {
      while (!done) {
        const node = nodeOf(c);
        const popSent = Date.now();
        let r;
        try {
          r = await call<{ messages: PopMessage[] }>(node.url, 'GET', `/api/v1/pop/queue/${Q}?batch=5&wait=true&timeout=1000`);
        } catch {
          failedRequests++;
          await recover(c, node);
          continue;
        }
        if (r.status === 204) continue;
        if (r.status !== 200) { failedRequests++; await recover(c, node); continue; }
        const msgs = r.body.messages;
        assert.ok(msgs.length > 0);
        assert.ok(msgs.every((m) => m.partition === msgs[0]!.partition), 'one pop, one partition (partitions=1)');
        const d: Delivery = {
          consumer: c, partition: msgs[0]!.partition, partitionId: msgs[0]!.partitionId, leaseId: msgs[0]!.leaseId, seqs: msgs.map((m) => m.data.seq), offsets: msgs.map((m) => Number(m.offset)),
          outcome: 'refused',
        };
        deliveries.push(d);
        const body = { acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })) };
        let hitKilled = false;
        for (;;) {
          const target = nodeOf(c);
          let a;
          try {
            a = await call<{ success: boolean; error: string | null }[]>(target.url, 'POST', '/api/v1/ack/batch', body);
          } catch {
            failedRequests++;
            hitKilled = true;
            await recover(c, target);
            continue;
          }
          if (a.status !== 200) { hitKilled = true; await recover(c, target); continue; }
          const ok = a.body.every((x) => x.success);
          const none = a.body.every((x) => !x.success);
          assert.ok(ok || none, `a batch ack is all or nothing: ${a.text}`);
          d.outcome = ok ? 'acked' : hitKilled ? 'maybe' : 'refused';
          if (!ok) d.note = `${a.body[0]!.error} after ${Date.now() - popSent} ms`;
          break;
        }
        if (d.outcome === 'acked') acked += msgs.length;
      }
    };

    // The producer paces itself to stay at most ~300 messages ahead, so the consumers are busy when
    // nodes die. It pushes to node 0, which is never killed: a push answered 201 is durable, and one
    // that got no answer would be ambiguous.
    const pusher = async () => {
      for (let i = 0; i < items.length; i += 100) {
        await waitFor(() => acked >= i - 300, { what: `${i - 300} acknowledged before pushing more`, timeoutMs: 120_000, intervalMs: 20 });
        const r = await call(nodes[0]!.url, 'POST', '/api/v1/push', { items: items.slice(i, i + 100) });
        assert.equal(r.status, 201, r.text);
      }
    };

    const chaos = async () => {
      for (const at of KILLS_AT) {
        await waitFor(() => acked >= at || done, { what: `${at} acknowledged`, timeoutMs: 120_000, intervalMs: 50 });
        if (done) return;
        const k = 1 + Math.floor(Math.random() * (NODES - 1));
        const victim = nodes[k]!;
        await victim.kill();
        dead.push(victim);
        nodes[k] = await startBroker({ env });
      }
    };

    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    let changes: CursorChange[] = [];
    let names = new Map<string, string>();
    try {
      await installCursorAudit(admin); // the nodes have applied the migrations; nothing was claimed yet
      const consumers = Array.from({ length: CONSUMERS }, (_, c) => consumer(c));
      await Promise.all([pusher(), chaos()]);
      // Done when the database shows every queue-mode cursor at its partition's head.
      await waitFor(async () => {
        const r = await admin.query<{ behind: string }>(
          `SELECT count(*) AS behind FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
             LEFT JOIN queen.consumers c ON c.partition_id = p.id
            WHERE q.name = $1 AND (c.next_offset IS NULL OR c.next_offset < p.next_offset)`, [Q]);
        return Number(r.rows[0]!.behind) === 0;
      }, { what: 'every partition consumed', timeoutMs: 150_000, intervalMs: 200 });
      done = true;
      await Promise.all(consumers);
      const stored = await admin.query<{ name: string; n: string }>(
        'SELECT p.name, count(m.*) AS n FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id JOIN queen.messages m ON m.partition_id = p.id WHERE q.name = $1 GROUP BY p.name', [Q]);
      for (const row of stored.rows) assert.equal(Number(row.n), pushed.get(row.name), `every pushed message of ${row.name} is stored`);
      changes = await cursorChanges(admin);
      names = new Map((await admin.query<{ id: string; name: string }>('SELECT id, name FROM queen.partitions')).rows.map((r) => [r.id, r.name]));
    } finally {
      await admin.end();
    }

    assert.ok(dead.length === KILLS_AT.length, 'the nodes were killed as planned');
    const by = (o: Delivery['outcome']) => deliveries.filter((d) => d.outcome === o).length;
    for (const d of deliveries) if (d.note) t.diagnostic(`${d.partition} from ${d.seqs[0]} (${d.outcome}): ${d.note}`);
    t.diagnostic(`${deliveries.length} deliveries (acked ${by('acked')}, maybe ${by('maybe')}, refused ${by('refused')}), ${failedRequests} requests hit a killed node`);
    // Judged on the database's records (see the module comment).
    assert.deepEqual(overlappingGrants(changes, LEASE_S * 1000), [], 'never a lease granted while another was live');
    const grants = new Map(grantsOf(changes).map((g) => [grantKey(g.change.newLease!, g.change.partitionId), g]));
    for (const d of deliveries) {
      const g = grants.get(grantKey(d.leaseId, d.partitionId));
      assert.ok(g, `${d.partition}: the database recorded the grant of ${d.leaseId}`);
      assert.deepEqual(d.offsets, Array.from({ length: g.upTo - g.from }, (_, j) => g.from + j), `${d.partition}: ${d.leaseId} delivered the batch the database granted, in offset order`);
      assert.deepEqual(d.seqs, d.offsets, `${d.partition}: each message is the one pushed at its offset`);
    }
    const movedBy = new Set<string>();
    for (const [id, p] of names) {
      // Each move of the position acknowledges the whole batch of the lease that held the cursor.
      let at = 0;
      for (const c of changes.filter((x) => x.partitionId === id)) {
        if (c.oldNext === null || c.newNext === c.oldNext) continue;
        const g = c.oldLease === null ? undefined : grants.get(grantKey(c.oldLease, id));
        assert.ok(g, `${p}: the position moved ${c.oldNext} → ${c.newNext} under a granted lease (seq ${c.seq}, lease ${c.oldLease})`);
        assert.deepEqual([c.oldNext, c.newNext], [at, g.upTo], `${p}: the move by ${c.oldLease} acknowledges its batch from where the cursor stood (seq ${c.seq})`);
        assert.equal(g.from, at, `${p}: ${c.oldLease} was granted from the position`);
        at = c.newNext;
        movedBy.add(grantKey(c.oldLease!, id));
      }
      assert.equal(at, pushed.get(p), `${p}: the moves put together are exactly 0..${pushed.get(p)}`);
    }
    for (const d of deliveries) {
      const moved = movedBy.has(grantKey(d.leaseId, d.partitionId));
      if (d.outcome === 'acked') assert.ok(moved, `${d.partition}: the ack of ${d.leaseId} answered success moved the position`);
      if (d.outcome === 'refused') assert.ok(!moved, `${d.partition}: the refused ack of ${d.leaseId} moved nothing`);
    }
  } finally {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)));
    await db.drop();
  }
});
