/**
 * Placement and the hand-over shape of ephemeral rings (docs/ephemeral.md#multi-node): the
 * rendezvous owner is stable and only the leaving node's keys move; a ring taken out of one engine
 * and adopted by another keeps each group's position (acked messages are not delivered again,
 * leased ones are redelivered), payload texts unchanged.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { QUEUE_MODE } from '../../../src/broker/ephemeral/engine.js';
import { EphemeralNodes, rendezvous } from '../../../src/broker/ephemeral/nodes.js';
import type { ClusterView } from '../../../src/storage/runtime.js';
import { startTestServices, type TestServices } from '../../helpers/services.js';
import { waitFor } from '../../helpers/wait.js';

const popReq = (over = {}) => ({ partition: 'p', group: QUEUE_MODE, batch: 100, wait: false, timeoutMs: 0, commitOnDelivery: false, ...over });

describe('rendezvous placement', () => {
  const nodes = ['n1', 'n2', 'n3', 'n4'].map((serverId) => ({ serverId }));
  const keys = Array.from({ length: 4000 }, (_, i) => `part-${i}`);

  test('every node owns a fair share, and removing one moves only its own keys', () => {
    const before = new Map(keys.map((k) => [k, rendezvous(nodes, 't', 'q', k)!.serverId]));
    const counts = new Map<string, number>();
    for (const o of before.values()) counts.set(o, (counts.get(o) ?? 0) + 1);
    for (const n of nodes) assert.ok((counts.get(n.serverId) ?? 0) > 800, `${n.serverId} owns ${counts.get(n.serverId)} of 4000`);
    const without = nodes.filter((n) => n.serverId !== 'n3');
    for (const k of keys) {
      const now = rendezvous(without, 't', 'q', k)!.serverId;
      if (before.get(k) !== 'n3') assert.equal(now, before.get(k), `${k} stays where it was`);
    }
    assert.equal(rendezvous([], 't', 'q', 'x'), undefined);
    // The same answer whatever the order of the list.
    assert.equal(rendezvous([...nodes].reverse(), 't', 'q', 'part-7')!.serverId, before.get('part-7'));
  });

  test('the key includes tenant and queue', () => {
    const differs = keys.slice(0, 200).some((k) => rendezvous(nodes, 't1', 'q', k)!.serverId !== rendezvous(nodes, 't2', 'q', k)!.serverId);
    assert.ok(differs);
  });
});

describe('ring hand-over between two engines', () => {
  let a: TestServices;
  let b: TestServices;
  before(async () => {
    a = startTestServices({});
    b = startTestServices({});
    await a.services.loadEphemeral();
    await b.services.loadEphemeral();
  });
  after(async () => { await a.stop(); await b.stop(); });

  test('positions, redeliveries and payload texts survive the move; ids of the old node are stale on the new one', async () => {
    const ea = a.services.ephemeral;
    const eb = b.services.ephemeral;
    const tenant = ea.defaultTenant;
    const payloads = ['1', '12345678901234567890', '{"x":1.0}', '"four"', '[5]'];
    ea.push(tenant, 'ho', 'p', payloads);
    // Group g (the ring's only group) acks the first two, which frees them, and holds a lease on the third.
    const got = await ea.pop(tenant, 'ho', popReq({ group: 'g', batch: 3 }));
    assert.deepEqual(ea.ack(tenant, 'ho', 'g', got.slice(0, 2).map((m) => ({ id: m.id, status: 'completed' as const }))), ['acked', 'acked']);
    const shipped = ea.takeRing(tenant, 'ho', 'p');
    assert.ok(shipped);
    assert.equal(ea.cellBytes, 0, 'the old holder keeps nothing');
    assert.equal(ea.takeRing(tenant, 'ho', 'p'), undefined);
    // Through the wire text, as _adopt receives it.
    const body = JSON.parse(EphemeralNodes.adoptBody([shipped])) as { rings: { queue: string; partition: string; messages: { t: number; p: unknown }[]; groups: never[] }[] };
    assert.equal(body.rings[0]!.messages.length, 3, 'the two acked by the only group were freed before the move');
    assert.deepEqual(body.rings[0]!.messages.map((m) => JSON.stringify(m.p)), ['{"x":1}', '"four"', '[5]'].map((x) => JSON.stringify(JSON.parse(x))));
    const r = eb.adopt(tenant, [{ ...shipped }]);
    assert.deepEqual(r, { adopted: 3, refusedRings: 0 });
    const g = await eb.pop(tenant, 'ho', popReq({ group: 'g' }));
    assert.deepEqual(g.map((m) => m.payload), payloads.slice(2), 'g gets the leased one again and the two it never read');
    assert.deepEqual((await eb.pop(tenant, 'ho', popReq({ group: 'g' }))).length, 0, 'nothing twice for g');
    assert.deepEqual(eb.ack(tenant, 'ho', 'g', [{ id: got[2]!.id, status: 'completed' }]), ['stale'], 'an id minted by the old node');
  });

  test('a ring that does not fit the adopter, or has a bad name, is refused whole', () => {
    const eb = b.services.ephemeral;
    const tenant = eb.defaultTenant;
    const big = { queue: 'small', partition: 'p', messages: Array.from({ length: 20_000 }, (_, i) => ({ t: 1, p: String(i) })), groups: [] };
    assert.deepEqual(eb.adopt(tenant, [big, { queue: 'bad\u0000name', partition: 'p', messages: [{ t: 1, p: '1' }], groups: [] }]), { adopted: 0, refusedRings: 2 });
    assert.equal(eb.find(tenant, 'small')?.length ?? 0, 0);
  });
});

describe('placement probes', () => {
  let s: TestServices;
  let peer: http.Server;
  let probed = 0;
  before(async () => {
    s = startTestServices({});
    await s.services.loadEphemeral();
    peer = http.createServer((req, res) => {
      if (req.url === '/api/v1/ephemeral/_ready') probed++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
  });
  after(async () => { await s.stop(); await new Promise((r) => peer.close(r)); });

  test('a member whose row names a new address is probed there at the next recomputation, not after the failed probe expires', async () => {
    // A node's first heartbeat can name its address before the port is bound (`host:0`); the next names the real one.
    const member = { serverId: 'peer', epoch: 1, address: '127.0.0.1:1', live: true, lastSeenMs: 0, leaving: false };
    const cluster = { serverId: 'self', epoch: 1, members: () => [member] } as unknown as ClusterView;
    const nodes = new EphemeralNodes(s.services.ephemeral, cluster, s.services.scheduler, { raftToken: undefined, log: pino({ level: 'silent' }) });
    nodes.recompute(); // probes 127.0.0.1:1: refused
    await waitFor(() => (nodes as unknown as { probes: Map<string, { ready?: boolean }> }).probes.get('peer')?.ready === false, { what: 'the probe of the dead address failing' });
    member.address = `127.0.0.1:${(peer.address() as AddressInfo).port}`;
    nodes.recompute(); // the address changed: probed again at once
    await waitFor(() => probed > 0, { what: 'a probe of the new address' });
    nodes.recompute();
    await waitFor(() => { nodes.recompute(); return nodes.peers().some((p) => p.serverId === 'peer' && p.address === member.address); }, { what: 'the peer a candidate at its new address' });
  });
});
