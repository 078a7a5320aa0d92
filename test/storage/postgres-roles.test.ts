/**
 * Producer on one node, consumer on the other, one PostgreSQL database (docs/compat.md#two-nodes,
 * docs/cluster.md#running-n-nodes: any node serves any route, a client may pop on one node and ack
 * on another). The scenarios of the official JS client's two-node run, over HTTP on real brokers:
 * a lease taken on B acknowledged on A; a lease of B that expired is redelivered by A and B's stale
 * ack is refused; a transaction on A acks B's lease and pushes, atomically; failed acks on B send
 * the message to the dead-letter queue that A reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { afterLeasesGrantedBefore, waitFor } from '../helpers/wait.js';
import { freshDatabase } from './postgres-backend.js';

interface Msg { transactionId: string; partitionId: string; leaseId: string; data: Record<string, unknown> }

async function pop(url: string, queue: string, query = ''): Promise<Msg[]> {
  const r = await call<{ messages: Msg[] }>(url, 'GET', `/api/v1/pop/queue/${queue}?batch=10${query}`);
  if (r.status === 204) return [];
  assert.equal(r.status, 200, `pop ${queue} on ${url}: ${JSON.stringify(r.body)}`);
  return r.body.messages;
}

async function push(url: string, queue: string, payloads: unknown[]): Promise<void> {
  const r = await call(url, 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue, payload })) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}

const ackOf = (m: Msg, status = 'completed') => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status });

async function twoNodes(body: (a: BrokerHandle, b: BrokerHandle) => Promise<void>): Promise<void> {
  const db = await freshDatabase();
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url };
    const a = await startBroker({ env });
    const b = await startBroker({ env });
    try {
      await body(a, b);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  } finally {
    await db.drop();
  }
}

test('producer on A, consumer on B: acks, expired leases, transactions and the DLQ across nodes', async () => {
  await twoNodes(async (a, b) => {
    // A lease taken on B, acknowledged on A: the message is gone on both nodes.
    await push(a.url, 'roles-ack', [{ n: 1 }]);
    const [m1] = await pop(b.url, 'roles-ack');
    assert.deepEqual(m1?.data, { n: 1 });
    const acked = await call(a.url, 'POST', '/api/v1/ack', ackOf(m1!));
    assert.equal(acked.status, 200, JSON.stringify(acked.body));
    assert.deepEqual(await pop(a.url, 'roles-ack'), []);
    assert.deepEqual(await pop(b.url, 'roles-ack'), []);

    // A 1 s lease of B expires; A redelivers; B's stale ack is refused and changes nothing.
    await call(a.url, 'POST', '/api/v1/configure', { queue: 'roles-lease', options: { leaseTime: 1 } });
    await push(a.url, 'roles-lease', [{ n: 2 }]);
    const [stale] = await pop(b.url, 'roles-lease');
    assert.ok(stale);
    await afterLeasesGrantedBefore(b.url, 1);
    const [again] = await waitFor(async () => { const got = await pop(a.url, 'roles-lease'); return got.length > 0 ? got : undefined; }, { what: 'A to redeliver the message of the expired lease of B' });
    assert.equal(again!.transactionId, stale.transactionId);
    assert.notEqual(again!.leaseId, stale.leaseId);
    const refused = await call(b.url, 'POST', '/api/v1/ack/batch', { acknowledgments: [ackOf(stale)] });
    assert.equal(refused.body?.[0]?.success, false, `stale ack of B: ${JSON.stringify(refused.body)}`);
    assert.equal((await call(a.url, 'POST', '/api/v1/ack', ackOf(again!))).status, 200);
    assert.deepEqual(await pop(b.url, 'roles-lease'), []);

    // B pops; A commits the ack of B's lease and a push in one transaction; B reads the output.
    await push(a.url, 'roles-tx-in', [{ step: 1 }]);
    const [input] = await pop(b.url, 'roles-tx-in');
    assert.ok(input);
    const tx = await call(a.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'ack', transactionId: input.transactionId, partitionId: input.partitionId, status: 'completed' },
        { type: 'push', items: [{ queue: 'roles-tx-out', payload: { step: 2, from: input.transactionId } }] },
      ],
      requiredLeases: [input.leaseId],
    });
    assert.equal(tx.status, 200, JSON.stringify(tx.body));
    assert.equal(tx.body.success, true);
    const [output] = await pop(b.url, 'roles-tx-out');
    assert.deepEqual(output?.data, { step: 2, from: input.transactionId });
    assert.deepEqual(await pop(b.url, 'roles-tx-in'), [], 'the input acked by the transaction on A is not redelivered');

    // retryLimit 1: two failed acks on B; the DLQ read on A holds the message.
    await call(a.url, 'POST', '/api/v1/configure', { queue: 'roles-dlq', options: { retryLimit: 1, dlqAfterMaxRetries: true } });
    await push(a.url, 'roles-dlq', [{ bad: true }]);
    let failures = 0;
    for (let k = 0; k < 5; k++) {
      const [m] = await pop(b.url, 'roles-dlq');
      if (!m) break;
      assert.equal((await call(b.url, 'POST', '/api/v1/ack', { ...ackOf(m, 'failed'), error: 'boom' })).status, 200);
      failures++;
    }
    assert.equal(failures, 2, 'delivered once, retried once');
    const dlq = await call<{ messages: Msg[] }>(a.url, 'GET', '/api/v1/dlq?queue=roles-dlq&limit=10');
    assert.equal(dlq.status, 200, JSON.stringify(dlq.body));
    assert.equal(dlq.body.messages.length, 1);
    assert.deepEqual(await pop(b.url, 'roles-dlq'), []);
  });
});
