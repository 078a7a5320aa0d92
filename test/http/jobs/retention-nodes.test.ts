/**
 * The completed-retention rule on several nodes sharing one PostgreSQL database
 * (docs/cluster.md#singletons): one node sweeps, and messages consumed through another node are
 * removed too. Before, the sweeping node visited only the partitions its own acks had touched (and
 * each queue's once, when the rule was first seen), so what the other nodes consumed stayed stored.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';
import { freshDatabase } from '../../storage/postgres-backend.js';

let db: Awaited<ReturnType<typeof freshDatabase>>;
const nodes = new Map<string, BrokerHandle>();
const env = (id: string): Record<string, string> => ({
  QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, QUEEN_SERVER_ID: id, QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1000',
  RETENTION_INTERVAL: '200',
});

before(async () => {
  db = await freshDatabase();
  for (const id of ['node-a', 'node-b']) nodes.set(id, await startBroker({ env: env(id) }));
});
after(async () => {
  await Promise.all([...nodes.values()].map((n) => n.stop().catch(() => undefined)));
  await db.drop();
});

test('messages consumed through the node that does not sweep are removed by the one that does', async () => {
  const a = nodes.get('node-a')!;
  const holder = await waitFor(async () => {
    const st = await call(a.url, 'GET', '/status');
    return st.body.membership?.singletons?.find((s: { task: string; holder: string | null }) => s.task === 'retention')?.holder as string | undefined;
  }, { what: 'a retention holder' });
  const sweeper = nodes.get(holder)!;
  const other = [...nodes.values()].find((n) => n !== sweeper)!;
  const q = uniqueName('ret-nodes');
  assert.equal((await call(other.url, 'POST', '/api/v1/configure', { queue: q, options: { retentionEnabled: true, completedRetentionSeconds: 1 } })).status, 200);
  // The sweeper has seen the rule (and seeded the queue, then empty) before anything is consumed.
  await waitFor(async () => {
    const st = await call(sweeper.url, 'GET', '/status');
    return (st.body.membership?.singletons?.find((s: { task: string; runs: number }) => s.task === 'retention')?.runs ?? 0) >= 2;
  }, { what: 'two sweeps by the holder' });
  assert.equal((await call(other.url, 'POST', '/api/v1/push', { items: Array.from({ length: 5 }, (_, i) => ({ queue: q, partition: 'p', payload: i })) })).status, 201);
  const popped = await call(other.url, 'GET', `/api/v1/pop/queue/${q}/partition/p?batch=10&autoAck=true`);
  assert.equal(popped.body.messages.length, 5);
  await waitFor(async () => {
    const r = await call(other.url, 'GET', `/api/v1/resources/partitions?queue=${q}`);
    const p = (r.body.partitions as { name: string; firstOffset: number; messages: { total: number } }[]).find((x) => x.name === 'p');
    return p !== undefined && p.messages.total === 0 && p.firstOffset === 5;
  }, { what: 'the consumed messages removed by the sweeping node', timeoutMs: 15_000 });
});
