/**
 * Pushes of many partitions and batch acks of several, at the same time, on one PostgreSQL
 * database: a push locks its partitions in id order while an ack touched its partitions in the
 * order of its items, so the two could lock the same rows in opposite orders. PostgreSQL then
 * rolls one of them back as a deadlock's victim, and the broker runs it again
 * (src/storage/postgres/db.ts `PgDb.tx`): every push and every ack answers 2xx, and each group
 * receives every message exactly once, in partition order. Found by an outside check: with two
 * brokers, 8 consumers in 2 groups and 50 pushes of 100 messages over 16 partitions, 9 pushes and
 * 3 batch acks answered 500 internal_error ("deadlock detected").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call } from '../helpers/http.js';
import { freshDatabase } from './postgres-backend.js';

const PARTITIONS = 16;
const PUSHES = 40;
const PER_PUSH = 100;

interface Popped { partitionId: string; partition: string; transactionId: string; leaseId: string; data: { n: number } }

test('concurrent pushes over 16 partitions and multi-partition batch acks of two groups: no 5xx, every message once per group, in order', async () => {
  const db = await freshDatabase();
  const brokers: BrokerHandle[] = [];
  try {
    const env = { QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url };
    brokers.push(await startBroker({ env }), await startBroker({ env }));
    const failures: string[] = [];
    let pushed = 0;
    const pusher = (async () => {
      for (let i = 0; i < PUSHES; i++) {
        const items = Array.from({ length: PER_PUSH }, (_, k) => ({ queue: 'dl', partition: `p${k % PARTITIONS}`, payload: { n: i * PER_PUSH + k } }));
        const r = await call(brokers[i % 2]!.url, 'POST', '/api/v1/push', { items });
        if (r.status !== 201) failures.push(`push ${i}: ${r.status} ${r.text.slice(0, 120)}`);
        else pushed += PER_PUSH;
      }
    })();
    const seen: Record<string, Map<string, number[]>> = { G1: new Map(), G2: new Map() };
    let pushing = true;
    void pusher.finally(() => { pushing = false; });
    const consumer = async (group: string, url: string) => {
      for (;;) {
        const r = await call(url, 'GET', `/api/v1/pop/queue/dl?consumerGroup=${group}&batch=37&partitions=4&wait=true&timeout=500`);
        if (r.status === 204) {
          if (!pushing && [...seen[group]!.values()].reduce((a, v) => a + v.length, 0) >= pushed) return;
          continue;
        }
        if (r.status !== 200) { failures.push(`pop ${group}: ${r.status} ${r.text.slice(0, 120)}`); continue; }
        const msgs = r.body.messages as Popped[];
        for (const m of msgs) {
          const list = seen[group]!.get(m.partition) ?? [];
          list.push(m.data.n);
          seen[group]!.set(m.partition, list);
        }
        const a = await call(url, 'POST', '/api/v1/ack/batch', {
          consumerGroup: group, acknowledgments: msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed' })),
        });
        if (a.status !== 200 || !(a.body as { success: boolean }[]).every((x) => x.success)) failures.push(`ack ${group}: ${a.status} ${a.text.slice(0, 160)}`);
      }
    };
    await Promise.all([
      pusher,
      ...['G1', 'G2'].flatMap((g) => brokers.flatMap((b) => [consumer(g, b.url), consumer(g, b.url)])),
    ]);
    assert.deepEqual(failures, []);
    assert.equal(pushed, PUSHES * PER_PUSH);
    for (const group of ['G1', 'G2']) {
      for (let p = 0; p < PARTITIONS; p++) {
        const got = seen[group]!.get(`p${p}`) ?? [];
        const want: number[] = [];
        for (let n = 0; n < PUSHES * PER_PUSH; n++) if ((n % PER_PUSH) % PARTITIONS === p) want.push(n);
        assert.deepEqual(got, want, `${group} p${p}: every message once, in push order`);
      }
    }
  } finally {
    for (const b of brokers) await b.stop();
    await db.drop();
  }
});
