/**
 * Many consumers on many nodes over one PostgreSQL database (docs/cluster.md#what-the-tests-prove,
 * claims in docs/storage.md#postgresql-backend): 8 consumers spread over 3 broker processes pop one
 * queue of 6 partitions with leases while a producer pushes and nodes 1 and 2 are SIGKILLed at random
 * and restarted. From the answers alone:
 * - no two live leases on one partition at once: each delivery's window, from the pop's answer to
 *   the first ack sent (or the lease's end, counted from the pop's request), lies inside the
 *   server's lease, so two windows of one partition must never overlap;
 * - per partition, deliveries come in offset order, each starting at the first message not yet
 *   acknowledged, and the acknowledged batches put together are exactly the pushed sequence (nothing
 *   acknowledged lost, nothing skipped, every pushed message acknowledged); an ack whose first attempt
 *   died with its node and whose retry was refused is settled by whether its batch came again;
 * - the database agrees at the end: every cursor at its partition's head.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';
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
  seqs: number[];
  offsets: number[];
  popSent: number;
  popReceived: number;
  firstAckSent: number;
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
        const popReceived = Date.now();
        const msgs = r.body.messages;
        assert.ok(msgs.length > 0);
        assert.ok(msgs.every((m) => m.partition === msgs[0]!.partition), 'one pop, one partition (partitions=1)');
        const d: Delivery = {
          consumer: c, partition: msgs[0]!.partition, seqs: msgs.map((m) => m.data.seq), offsets: msgs.map((m) => Number(m.offset)),
          popSent, popReceived, firstAckSent: 0, outcome: 'refused',
        };
        deliveries.push(d);
        const body = { acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })) };
        let hitKilled = false;
        for (;;) {
          const target = nodeOf(c);
          if (d.firstAckSent === 0) d.firstAckSent = Date.now();
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
    try {
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
    } finally {
      await admin.end();
    }

    assert.ok(dead.length === KILLS_AT.length, 'the nodes were killed as planned');
    const by = (o: Delivery['outcome']) => deliveries.filter((d) => d.outcome === o).length;
    for (const d of deliveries) if (d.note) t.diagnostic(`${d.partition} from ${d.seqs[0]} (${d.outcome}): ${d.note}`);
    t.diagnostic(`${deliveries.length} deliveries (acked ${by('acked')}, maybe ${by('maybe')}, refused ${by('refused')}), ${failedRequests} requests hit a killed node`);
    for (const [p, n] of pushed) {
      const mine = deliveries.filter((d) => d.partition === p).sort((a, b) => a.popReceived - b.popReceived);
      // Never two live leases: windows inside the server's lease do not overlap.
      let lastEnd = -Infinity;
      let lastOwner = -1;
      for (const d of mine) {
        const end = Math.min(d.firstAckSent, d.popSent + LEASE_S * 1000);
        assert.ok(d.popReceived >= lastEnd, `${p}: consumer ${d.consumer}'s lease window starts at ${d.popReceived}, before consumer ${lastOwner}'s ends at ${lastEnd}`);
        lastEnd = end;
        lastOwner = d.consumer;
      }
      // Offset order: every delivery starts at the first message not yet acknowledged. A 'maybe'
      // (its first ack attempt died with its node, the retry was refused) is settled by what
      // follows: redelivered from its first message → that ack was not applied.
      let next = 0;
      const consumed: number[] = [];
      mine.forEach((d, i) => {
        assert.deepEqual(d.offsets, d.offsets.map((_, j) => d.offsets[0]! + j), `${p}: a batch is contiguous in offset order`);
        assert.equal(d.seqs[0], next, `${p}: a delivery starts at the first unacknowledged message (outcome ${d.outcome}); deliveries: ${JSON.stringify(mine.map((x) => [x.seqs[0], x.seqs.length, x.outcome, x.note]))}`);
        const applied = d.outcome === 'acked' || (d.outcome === 'maybe' && mine[i + 1]?.seqs[0] !== d.seqs[0]);
        if (applied) { consumed.push(...d.seqs); next += d.seqs.length; }
      });
      assert.deepEqual(consumed, Array.from({ length: n }, (_, i) => i), `${p}: the acknowledged batches are exactly the pushed sequence`);
    }
  } finally {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)));
    await db.drop();
  }
});
