/**
 * Ephemeral queues on three broker processes sharing one PostgreSQL database
 * (docs/ephemeral.md#multi-node): the owner of a partition is the rendezvous winner over the
 * nodes, the others relay push, pop and ack to it; a SIGTERMed node hands its rings over to the
 * survivors; a SIGKILLed node's share is simply gone; a joining node adopts the partitions it wins;
 * configure, reset and delete reach every node.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor, within } from '../../helpers/wait.js';
import { freshDatabase } from '../../storage/postgres-backend.js';
import { converged, nodeEnv, ownerAmong, partitionOwnedBy } from './cluster.js';

const TOKEN = 'eph-nodes-test-token-0123456789abcdef';
const IDS = ['node-a', 'node-b', 'node-c'] as const;
type Id = string;

let db: Awaited<ReturnType<typeof freshDatabase>>;
const nodes = new Map<Id, BrokerHandle>();
const env = (id: string): Record<string, string> => nodeEnv(db.url, id, TOKEN);

/** Raw answer text of a request (the payload bytes are compared as sent). */
async function raw(base: string, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${base}${path}`, { method, body, headers: body !== undefined ? { 'content-type': 'application/json' } : {}, signal: AbortSignal.timeout(40_000) });
  return { status: r.status, text: await r.text() };
}

/** Messages `queue` holds on `node` (its own share, no relay). */
async function heldOn(node: BrokerHandle, queue: string): Promise<number> {
  const r = await call(node.url, 'GET', `/api/v1/ephemeral/queues/${queue}/depth`);
  return r.status === 200 ? r.body.pending as number : 0;
}

before(async () => {
  db = await freshDatabase();
  for (const id of IDS) nodes.set(id, await startBroker({ env: env(id) }));
  await converged(nodes, TOKEN, IDS);
});

after(async () => {
  await Promise.all([...nodes.values()].map((n) => n.stop().catch(() => undefined)));
  await db.drop();
});

test('the depth read shows the shape this file relies on', async () => {
  const a = nodes.get('node-a')!;
  const queue = uniqueName('shape');
  const partition = partitionOwnedBy('node-a', IDS, queue);
  assert.equal((await call(a.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: 1 }, { payload: 2 }] })).status, 201);
  assert.equal(await heldOn(a, queue), 2);
});

test('push on A, pop and ack on B, the partition owned by C: payloads byte-exact, ack relayed', async () => {
  const [a, b, c] = IDS.map((id) => nodes.get(id)!);
  const queue = uniqueName('relay');
  const partition = partitionOwnedBy('node-c', IDS, queue);
  const payloads = ['12345678901234567890', '{"n":9007199254740993,"f":1.0,"z":-0,"big":1e400}', '"text ünïcode"'];
  const push = await raw(a!.url, 'POST', '/api/v1/ephemeral/push', `{"queue":"${queue}","partition":"${partition}","messages":[${payloads.map((p) => `{"payload":${p}}`).join(',')}]}`);
  assert.equal(push.status, 201, push.text);
  assert.deepEqual(JSON.parse(push.text), { pushed: 3 });
  assert.equal(await heldOn(c!, queue), 3, 'the owner holds them');
  assert.equal(await heldOn(a!, queue), 0, 'the relaying node holds nothing');
  const pop = await raw(b!.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&batch=10`);
  assert.equal(pop.status, 200, pop.text);
  for (const p of payloads) assert.ok(pop.text.includes(`"payload":${p}}`), `payload ${p} byte-exact in ${pop.text}`);
  const ids = (JSON.parse(pop.text) as { messages: { id: string }[] }).messages.map((m) => m.id);
  assert.equal(ids.length, 3);
  const ack = await call(a!.url, 'POST', '/api/v1/ephemeral/ack', { queue, acks: ids.map((id) => ({ id, status: 'completed' })) });
  assert.equal(ack.status, 200);
  assert.deepEqual(ack.body.results.map((r: { outcome: string }) => r.outcome), ['acked', 'acked', 'acked']);
  const again = await call(b!.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&batch=10`);
  assert.equal(again.status, 200);
  assert.equal(again.body.messages.length, 0, 'acked on the owner: nothing comes back');
  const metrics = await raw(a!.url, 'GET', '/metrics/prometheus');
  const forwarded = /^queen_eph_forwarded_total (\d+)/m.exec(metrics.text);
  assert.ok(forwarded && Number(forwarded[1]) >= 2, `A counts its relays (${forwarded?.[1]})`);
});

test('a relayed request that reaches a non-owner answers 503 owner_moved; internal routes need the token', async () => {
  const a = nodes.get('node-a')!;
  const queue = uniqueName('moved');
  const partition = partitionOwnedBy('node-b', IDS, queue);
  const r = await call(a.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: 1 }] },
    { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': TOKEN });
  assert.equal(r.status, 503);
  assert.equal(r.body.code, 'owner_moved');
  assert.equal((await call(a.url, 'GET', '/api/v1/ephemeral/_ready')).body.code, 'internal_only');
  assert.equal((await call(a.url, 'GET', '/api/v1/ephemeral/_ready', undefined, { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': 'wrong' })).body.code, 'internal_only');
  const ready = await call(a.url, 'GET', '/api/v1/ephemeral/_ready', undefined, { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': TOKEN });
  assert.equal(ready.status, 200);
  assert.equal(ready.body.node, 'node-a');
});

test('a long-poll pop on a non-owner is woken by a push on another node', async () => {
  const [a, b] = IDS.map((id) => nodes.get(id)!);
  const queue = uniqueName('wake');
  const partition = partitionOwnedBy('node-c', IDS, queue);
  const parked = raw(b!.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&wait=true&timeout=20000`);
  await waitFor(async () => {
    const l = await call(nodes.get('node-c')!.url, 'GET', '/api/v1/ephemeral/queues');
    return (l.body.queues as { queue: string; parked: number }[]).some((x) => x.queue === queue && x.parked === 1);
  }, { what: 'the relayed pop parked on the owner C' });
  assert.equal((await call(a!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: { hello: 'B' } }] })).status, 201);
  const got = await within(parked, 20_000, 'the parked pop');
  assert.equal(got.status, 200);
  assert.deepEqual((JSON.parse(got.text) as { messages: { payload: unknown }[] }).messages.map((m) => m.payload), [{ hello: 'B' }]);
});

test('configure, reset and delete reach every node', async () => {
  const [a, b, c] = IDS.map((id) => nodes.get(id)!);
  const queue = uniqueName('admin');
  const parts = IDS.map((id) => partitionOwnedBy(id, IDS, queue));
  for (const partition of parts) assert.equal((await call(a!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: 1 }, { payload: 2 }] })).status, 201);
  for (const n of [a, b, c]) assert.equal(await heldOn(n!, queue), 2, 'each node holds its partition');
  const reset = await call(b!.url, 'POST', '/api/v1/ephemeral/reset', { queue });
  assert.equal(reset.status, 200);
  assert.equal(reset.body.dropped, 6, 'every node dropped its share');
  for (const n of [a, b, c]) assert.equal(await heldOn(n!, queue), 0);

  const cfg = await call(a!.url, 'POST', '/api/v1/ephemeral/configure', { queue, options: { maxLength: 2, policy: 'reject' } });
  assert.equal(cfg.status, 201, JSON.stringify(cfg.body));
  const onC = parts[2]!;
  assert.equal((await call(c!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition: onC, messages: [{ payload: 1 }, { payload: 2 }] })).status, 201);
  const full = await call(b!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition: onC, messages: [{ payload: 3 }] });
  assert.equal(full.status, 429, 'the owner C applies the bound configured on A');
  assert.equal(full.body.code, 'queue_full');

  const del = await call(c!.url, 'DELETE', `/api/v1/ephemeral/queue/${queue}`);
  assert.equal(del.status, 200);
  for (const n of [a, b, c]) assert.equal((await call(n!.url, 'GET', `/api/v1/ephemeral/queues/${queue}/depth`)).status, 404, 'gone everywhere');
});

test('SIGTERM hands the stopping node\'s rings to the survivors; SIGKILL loses the killed node\'s share', async () => {
  const [a, b, c] = IDS.map((id) => nodes.get(id)!);
  const queue = uniqueName('handover');
  const partition = partitionOwnedBy('node-c', IDS, queue);
  const msgs = Array.from({ length: 50 }, (_, i) => ({ payload: { i } }));
  assert.equal((await call(a!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: msgs })).status, 201);
  assert.equal(await heldOn(c!, queue), 50);
  assert.equal(await c!.stop(), 0, 'node C stopped cleanly');
  nodes.delete('node-c');
  // Nothing is lost, and the ring lives on its owner among the survivors (docs/ephemeral.md#multi-node,
  // the placement rule): a pop through the other survivor, relayed to that owner, returns all 50 in order.
  await converged(nodes, TOKEN, ['node-a', 'node-b']);
  const survivorOwner = ownerAmong(['node-a', 'node-b'], queue, partition);
  const other = survivorOwner === 'node-a' ? b! : a!;
  const eph = (n: BrokerHandle): string => n.output().split('\n').filter((l) => l.includes('ephemeral')).join('\n');
  await waitFor(async () => (await heldOn(nodes.get(survivorOwner)!, queue)) === 50 && (await heldOn(other, queue)) === 0,
    { what: `all 50 on the owner ${survivorOwner}`, timeoutMs: 10_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\nA:\n${eph(a!)}\nB:\n${eph(b!)}\nC:\n${eph(c!)}`);
  });
  const pop = await call(other.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&batch=100`);
  assert.equal(pop.status, 200);
  assert.deepEqual(pop.body.messages.map((m: { payload: unknown }) => m.payload), msgs.map((m) => m.payload), 'all 50, in order');

  // SIGKILL: B's share is gone, A keeps serving (an empty answer, not an error).
  const q2 = uniqueName('killed');
  const p2 = partitionOwnedBy('node-b', ['node-a', 'node-b'], q2);
  await converged(nodes, TOKEN, ['node-a', 'node-b']);
  assert.equal((await call(a!.url, 'POST', '/api/v1/ephemeral/push', { queue: q2, partition: p2, messages: [{ payload: 1 }] })).status, 201);
  assert.equal(await heldOn(b!, q2), 1);
  await b!.kill();
  nodes.delete('node-b');
  const empty = await waitFor(async () => {
    const r = await call(a!.url, 'GET', `/api/v1/ephemeral/pop?queue=${q2}&partition=${p2}&batch=10`);
    return r.status === 200 ? r : undefined;
  }, { what: 'node A serving the killed node\'s partition', timeoutMs: 15_000, intervalMs: 100 });
  assert.equal(empty.body.messages.length, 0, 'the killed node\'s share is lost');

  // A node joins: the partitions it wins move to it, nothing is lost.
  const q3 = uniqueName('join');
  const parts = Array.from({ length: 12 }, (_, i) => `j-${i}`);
  for (const partition of parts) assert.equal((await call(a!.url, 'POST', '/api/v1/ephemeral/push', { queue: q3, partition, messages: [{ payload: partition }] })).status, 201);
  await waitFor(async () => (await heldOn(a!, q3)) === 12, { what: 'node A alone holding all 12' });
  const d = await startBroker({ env: env('node-d') });
  nodes.set('node-d', d);
  const moved = parts.filter((p) => ownerAmong(['node-a', 'node-d'], q3, p) === 'node-d');
  assert.ok(moved.length > 0 && moved.length < 12, `some partitions move (${moved.length})`);
  await waitFor(async () => (await heldOn(d, q3)) === moved.length && (await heldOn(a!, q3)) === 12 - moved.length,
    { what: `node D adopting ${moved.length} partitions`, timeoutMs: 20_000, intervalMs: 100 });
  for (const partition of parts) {
    const r = await call(a!.url, 'GET', `/api/v1/ephemeral/pop?queue=${q3}&partition=${partition}&batch=10`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.messages.map((m: { payload: unknown }) => m.payload), [partition], `partition ${partition} served by its owner`);
  }
});
