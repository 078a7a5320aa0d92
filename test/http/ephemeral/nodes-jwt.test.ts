/**
 * Ephemeral queues on two nodes with the broker JWT on (docs/ephemeral.md#multi-node): relays carry
 * the caller's Authorization, the node-to-node routes accept the node token instead of a JWT, so a
 * SIGTERMed node's rings are handed over; without QUEEN_RAFT_TOKEN the boot warns that hand-overs
 * cannot be verified.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { rendezvous } from '../../../src/broker/ephemeral/nodes.js';
import { DEFAULT_TENANT } from '../../../src/model/tenancy.js';
import { startBroker } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { hsKey, mint } from '../../helpers/jwt.js';
import { waitFor } from '../../helpers/wait.js';
import { freshDatabase } from '../../storage/postgres-backend.js';

const SECRET = randomBytes(32).toString('hex');
const TOKEN = randomBytes(16).toString('hex');

function ownedBy(owner: string, among: string[], queue: string): string {
  for (let i = 0; ; i++) if (rendezvous(among.map((serverId) => ({ serverId })), DEFAULT_TENANT, queue, `p-${i}`)!.serverId === owner) return `p-${i}`;
}

test('JWT on: relays carry the caller\'s token, a SIGTERMed node hands over; no node token → boot warning', async () => {
  const db = await freshDatabase();
  const jwt = { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_SECRET: SECRET };
  const env = (id: string, token = true): Record<string, string> => ({
    QUEEN_STORAGE: 'postgres', DATABASE_URL: db.url, QUEEN_SERVER_ID: id, QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1000',
    ...jwt, ...(token ? { QUEEN_RAFT_TOKEN: TOKEN } : {}),
  });
  const auth = { authorization: `Bearer ${await mint('HS256', hsKey(SECRET), { sub: 'svc', roles: ['admin'], exp: Math.floor(Date.now() / 1000) + 600 })}` };
  const a = await startBroker({ env: env('jwt-a') });
  const b = await startBroker({ env: env('jwt-b') });
  try {
    assert.ok(!a.output().includes('cannot verify ephemeral hand-overs'), 'no warning with the node token set');
    const queue = uniqueName('jwt');
    const partition = ownedBy('jwt-b', ['jwt-a', 'jwt-b'], queue);
    assert.equal((await call(a.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: 0 }] })).status, 401, 'no JWT, no push');
    // A relays to B once it sees B: then B holds what is pushed on A.
    let n = 0;
    await waitFor(async () => {
      assert.equal((await call(a.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: ++n }] }, auth)).status, 201);
      const d = await call(b.url, 'GET', `/api/v1/ephemeral/queues/${queue}/depth`, undefined, auth);
      return d.status === 200 && d.body.pending > 0;
    }, { what: 'A relaying to B', timeoutMs: 20_000, intervalMs: 100 });
    // And B relays to A (B's probe of A may have needed a second try): B knows where to hand over.
    const back = uniqueName('jwt-back');
    const onA = ownedBy('jwt-a', ['jwt-a', 'jwt-b'], back);
    await waitFor(async () => {
      assert.equal((await call(b.url, 'POST', '/api/v1/ephemeral/push', { queue: back, partition: onA, messages: [{ payload: 0 }] }, auth)).status, 201);
      const d = await call(b.url, 'GET', `/api/v1/ephemeral/queues/${back}/depth`, undefined, auth);
      return d.status === 404 || d.body.pending === 0;
    }, { what: 'B relaying to A', timeoutMs: 20_000, intervalMs: 100 });
    const onB = (await call(b.url, 'GET', `/api/v1/ephemeral/queues/${queue}/depth`, undefined, auth)).body.pending as number;
    assert.equal(await b.stop(), 0);
    const pop = await call(a.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&batch=100`, undefined, auth);
    assert.equal(pop.status, 200);
    assert.equal(pop.body.messages.length, onB, 'what B held came over to A');
    assert.deepEqual(pop.body.messages.map((m: { payload: number }) => m.payload), Array.from({ length: onB }, (_, i) => n - onB + 1 + i));

    const c = await startBroker({ env: env('jwt-c', false) });
    try {
      assert.match(c.output(), /cannot verify ephemeral hand-overs/);
    } finally {
      await c.stop();
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await db.drop();
  }
});
