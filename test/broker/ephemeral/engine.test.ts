/**
 * The ephemeral engine on a test clock (docs/ephemeral.md#engine): the decisions of the contract
 * (empty rings are released, ids never repeat within a process) and memory released on ack.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { QUEUE_MODE } from '../../../src/broker/ephemeral/engine.js';
import { parseId } from '../../../src/broker/ephemeral/ids.js';
import { startTestServices, type TestServices } from '../../helpers/services.js';

const popReq = (over = {}) => ({ partition: undefined, group: QUEUE_MODE, batch: 100, wait: false, timeoutMs: 0, commitOnDelivery: false, ...over });

describe('ephemeral engine', () => {
  let t: TestServices;
  before(async () => {
    t = startTestServices({ QUEEN_EPHEMERAL_IDLE_GC_MS: '1000', QUEEN_EPHEMERAL_IMPLICIT_IDLE_S: '2' });
    await t.services.loadEphemeral();
  });
  after(async () => { await t.stop(); });

  test('acked messages free their bytes; an empty ring is released after the idle time and an implicit queue collected', async () => {
    const e = t.services.ephemeral;
    const tenant = e.defaultTenant;
    e.push(tenant, 'gc', 'p1', ['"a"', '"bb"']);
    assert.equal(e.cellBytes, 7);
    const got = await e.pop(tenant, 'gc', popReq());
    assert.deepEqual(e.ack(tenant, 'gc', QUEUE_MODE, got.map((m) => ({ id: m.id, status: 'completed' as const }))), ['acked', 'acked']);
    assert.equal(e.cellBytes, 0);
    assert.equal(e.find(tenant, 'gc')!.rings.size, 1);
    t.clock.advance(1000);
    e.sweep(t.clock.now());
    assert.equal(e.find(tenant, 'gc')?.rings.size ?? 0, 0, 'the empty ring is released');
    t.clock.advance(1000);
    e.sweep(t.clock.now());
    assert.equal(e.find(tenant, 'gc'), undefined, 'the empty implicit queue is collected');
  });

  test('acks in any order, redeliveries and two groups: a message\'s bytes are freed exactly when no group still needs it', async () => {
    const e = t.services.ephemeral;
    const tenant = e.defaultTenant;
    const q = 'reclaim-order';
    const before = e.cellBytes;
    e.push(tenant, q, 'p', ['"0"', '"1"', '"2"', '"3"', '"4"']); // 3 bytes each
    const held = () => e.cellBytes - before;
    const a = await e.pop(tenant, q, popReq({ group: 'a', batch: 5 }));
    const b = await e.pop(tenant, q, popReq({ group: 'b', batch: 2 }));
    const ack = (group: string, ms: { id: string }[], status: 'completed' | 'failed' = 'completed') => e.ack(tenant, q, group, ms.map((m) => ({ id: m.id, status })));
    assert.deepEqual(ack('a', [a[4]!, a[2]!]), ['acked', 'acked']);
    assert.equal(held(), 15, 'group b has not consumed 2..4, and a still leases 0, 1, 3');
    assert.deepEqual(ack('b', [b[1]!, b[0]!]), ['acked', 'acked']);
    assert.equal(held(), 15, 'a still leases 0');
    assert.deepEqual(ack('a', [a[0]!]), ['acked']);
    assert.equal(held(), 12, '0 is freed; a still leases 1');
    assert.deepEqual(ack('a', [a[1]!], 'failed'), ['redelivered']);
    assert.equal(held(), 12, '1 waits for its redelivery');
    const again = await e.pop(tenant, q, popReq({ group: 'a', batch: 5 }));
    assert.deepEqual(again.map((m) => [m.payload, m.attempts]), [['"1"', 2]], 'the second delivery counts 2 attempts');
    assert.deepEqual(ack('a', [again[0]!, a[3]!]), ['acked', 'acked']);
    assert.equal(held(), 9, '1 is freed; b has not consumed 2..4');
    const rest = await e.pop(tenant, q, popReq({ group: 'b', batch: 5 }));
    assert.deepEqual(ack('b', rest), ['acked', 'acked', 'acked']);
    assert.equal(held(), 0);
  });

  test('ids never repeat within a process, even after a ring is released and re-created', async () => {
    const e = t.services.ephemeral;
    const tenant = e.defaultTenant;
    const seen = new Set<string>();
    for (let round = 0; round < 5; round++) {
      e.push(tenant, 'ids', 'p', ['1', '2']);
      const got = await e.pop(tenant, 'ids', popReq({ commitOnDelivery: true }));
      assert.equal(got.length, 2);
      for (const m of got) {
        assert.ok(!seen.has(m.id), `id ${m.id} repeated`);
        seen.add(m.id);
        assert.equal(parseId(m.id)?.partition, 'p');
      }
      t.clock.advance(1000);
      e.sweep(t.clock.now());
      assert.equal(e.find(tenant, 'ids')?.rings.size ?? 0, 0);
    }
  });

  test('a partition containing colons round-trips through its id', async () => {
    const e = t.services.ephemeral;
    e.push(e.defaultTenant, 'colons', 'a:b:c', ['1']);
    const [m] = await e.pop(e.defaultTenant, 'colons', popReq());
    assert.equal(parseId(m!.id)?.partition, 'a:b:c');
    assert.deepEqual(e.ack(e.defaultTenant, 'colons', QUEUE_MODE, [{ id: m!.id, status: 'completed' }]), ['acked']);
  });
});
