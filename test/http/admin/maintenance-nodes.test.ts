/**
 * Maintenance modes on several nodes sharing one PostgreSQL database (docs/cluster.md#maintenance-modes):
 * a flag set through one node holds on every node within about a heartbeat; each node spools the
 * pushes it receives and replays its own spool once it sees push maintenance off. Before, the flag
 * changed only the node that received it, so the other nodes kept appending (and a node left on
 * kept spooling acknowledged pushes that no consumer saw).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';
import { freshDatabase } from '../../storage/postgres-backend.js';

let db: Awaited<ReturnType<typeof freshDatabase>>;
let a: BrokerHandle;
let b: BrokerHandle;
const env = (id: string): Record<string, string> => ({
  QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, QUEEN_SERVER_ID: id, QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1000',
});

before(async () => {
  db = await freshDatabase();
  a = await startBroker({ env: env('node-a') });
  b = await startBroker({ env: env('node-b') });
});
after(async () => {
  await Promise.all([a, b].map((n) => n?.stop().catch(() => undefined)));
  await db.drop();
});

async function drain(url: string, queue: string): Promise<number[]> {
  const out: number[] = [];
  for (;;) {
    const r = await call(url, 'GET', `/api/v1/pop/queue/${queue}?batch=1000&autoAck=true`);
    if (r.status === 204) return out;
    assert.equal(r.status, 200, r.text);
    for (const m of r.body.messages) out.push(m.data.n);
  }
}

test('push maintenance set through one node spools on the other; off through the other replays both spools', async () => {
  const q = uniqueName('mnodes');
  assert.equal((await call(a.url, 'POST', '/api/v1/system/maintenance', { enabled: true })).status, 200);
  await waitFor(async () => (await call(b.url, 'GET', '/api/v1/system/maintenance')).body.maintenanceMode === true, { what: 'node B in push maintenance' });
  const onA = await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] });
  const onB = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 2 } }] });
  assert.deepEqual([onA.body[0].status, onB.body[0].status], ['buffered', 'buffered']);
  assert.deepEqual(await drain(a.url, q), [], 'nothing visible while in maintenance');

  assert.equal((await call(b.url, 'POST', '/api/v1/system/maintenance', { enabled: false })).status, 200);
  await waitFor(async () => {
    const [sa, sb] = await Promise.all([a, b].map((n) => call(n.url, 'GET', '/api/v1/system/maintenance')));
    return sa!.body.maintenanceMode === false && sa!.body.bufferedMessages === 0 && sb!.body.bufferedMessages === 0;
  }, { what: 'both nodes out of maintenance with their spools replayed' });
  assert.deepEqual((await drain(b.url, q)).sort(), [1, 2], 'both spooled pushes delivered');
});

test('pop maintenance set through one node answers pops 204 on the other, and off again', async () => {
  const q = uniqueName('mpop');
  assert.equal((await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: q, payload: { n: 1 } }] })).status, 201);
  assert.equal((await call(b.url, 'POST', '/api/v1/system/maintenance/pop', { enabled: true })).status, 200);
  await waitFor(async () => (await call(a.url, 'GET', '/api/v1/system/maintenance/pop')).body.popMaintenanceMode === true, { what: 'node A in pop maintenance' });
  assert.equal((await call(a.url, 'GET', `/api/v1/pop/queue/${q}?batch=10`)).status, 204);
  assert.equal((await call(a.url, 'POST', '/api/v1/system/maintenance/pop', { enabled: false })).status, 200);
  await waitFor(async () => (await call(b.url, 'GET', '/api/v1/system/maintenance/pop')).body.popMaintenanceMode === false, { what: 'node B out of pop maintenance' });
  assert.deepEqual(await drain(b.url, q), [1]);
});
