/**
 * Memory follows what is live, not how many leases were ever granted: under the default 300 s
 * lease, every ack, nack, DLQ hand-off or seek that ends a lease removes its scheduler entry and
 * its `Engine.leases` record at once, and an extension moves the entry instead of adding one.
 * Domain-level, on a real SQLite store, with a test clock (no lease ever expires here).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { AckInput } from '../../../src/broker/messaging/ack.js';
import { Broker, QUEUE_MODE } from '../../../src/broker/broker.js';
import { plainCodec } from '../../../src/model/codec.js';
import type { PopRequest } from '../../../src/broker/messaging/pop.js';
import { loadConfig } from '../../../src/config/index.js';
import { SqliteStore } from '../../../src/storage/sqlite/store.js';
import { SqliteRuntime } from '../../../src/storage/sqlite/runtime.js';
import { TestClock } from '../../../src/util/clock.js';
import { tempDir } from '../../helpers/broker.js';

let broker: Broker;
let rt: SqliteRuntime;
let clock: TestClock;
before(() => {
  const dataDir = path.join(tempDir(), 'data');
  clock = new TestClock();
  const cfg = loadConfig({ QUEEN_DATA_DIR: dataDir });
  const log = pino({ level: 'silent' });
  rt = new SqliteRuntime(SqliteStore.open({ dataDir, sync: 'off' }), cfg, plainCodec, log, clock);
  broker = new Broker(rt, cfg, plainCodec, log, clock);
  broker.start();
});
after(async () => { await broker.shutdown(1000); });

function pop(queue: string, over: Partial<PopRequest> = {}): PopRequest {
  return { queue, partition: undefined, namespace: undefined, task: undefined, group: QUEUE_MODE, batch: 1, partitions: 1, wait: false, timeoutMs: 0, autoAck: false, leaseSeconds: undefined, subscription: {}, ...over };
}

/** What the engine holds for leases: scheduler entries and lease records. */
function held(): { scheduled: number; expiries: number; leaseIds: number } {
  const e = rt.engine;
  // The store's idle WAL checkpoint shares the scheduler; it is not lease bookkeeping.
  return { scheduled: e.scheduler.size - e.scheduler.lane('wal-checkpoint').size, expiries: e.leaseExpiry.size, leaseIds: e.leases.size };
}

describe('lease bookkeeping', () => {
  test('50,000 grants under the default lease, each ended by an ack: memory returns to the live leases', async () => {
    const PARTS = 200;
    const GRANTS = 50_000;
    const q = 'mem';
    assert.equal(rt.engine.queues.get(q), undefined);
    // Every partition gets enough messages for GRANTS pops of one message each.
    const perPart = GRANTS / PARTS;
    for (let i = 0; i < perPart; i += 50) {
      const items = [];
      for (let p = 0; p < PARTS; p++) for (let k = 0; k < 50; k++) items.push({ queue: q, partition: `p${p}`, payload: { p, i: i + k } });
      await broker.push(items, null);
    }
    assert.equal(rt.engine.queues.get(q)!.options.leaseTime, 300, 'the default lease');
    let grants = 0;
    let round = 0;
    for (;;) {
      const got = await Promise.all(Array.from({ length: PARTS }, () => broker.pop(pop(q))));
      const msgs = got.flatMap((r) => (r && 'leaseId' in r ? r.messages : []));
      if (msgs.length === 0) break;
      grants += msgs.length;
      assert.deepEqual(held(), { scheduled: msgs.length, expiries: msgs.length, leaseIds: msgs.length }, `round ${round}: one entry per live lease`);
      if (round % 50 === 0) {
        // extending moves the same entries
        await Promise.all(msgs.map((m) => broker.extendLease(m.leaseId, 600)));
        assert.equal(held().scheduled, msgs.length, `round ${round}: an extension adds no entry`);
      }
      // a nack (failed) ends the lease too; the message is redelivered later
      const acks: AckInput[] = msgs.map((m, i) => ({
        transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, group: QUEUE_MODE,
        status: round % 10 === 3 && i % 4 === 0 ? 'failed' : 'completed',
      }));
      const out = await broker.ack(acks);
      assert.ok(out.every((o) => o.success), `round ${round}: every ack applied`);
      assert.deepEqual(held(), { scheduled: 0, expiries: 0, leaseIds: 0 }, `round ${round}: acks leave nothing behind`);
      round++;
      clock.advance(1000);
    }
    assert.ok(grants >= GRANTS, `${grants} grants`);
    assert.deepEqual(held(), { scheduled: 0, expiries: 0, leaseIds: 0 });
  });

  test('a lease that expires leaves nothing behind either, and a long-poll deadline leaves with its pop', async () => {
    const q = 'expire';
    await broker.push([{ queue: q, payload: 1 }], null);
    const got = await broker.pop(pop(q));
    assert.ok(got && got.messages.length === 1);
    assert.equal(held().expiries, 1);
    clock.advance(300_000);
    assert.deepEqual(held(), { scheduled: 0, expiries: 0, leaseIds: 0 }, 'expired at the lease end');
    const again = await broker.pop(pop(q));
    assert.equal(again?.messages.length, 1, 'redelivered after expiry');
    await broker.ack([{ transactionId: again!.messages[0]!.transactionId, partitionId: again!.messages[0]!.partitionId, leaseId: again!.messages[0]!.leaseId, group: QUEUE_MODE, status: 'completed' }]);
    assert.deepEqual(held(), { scheduled: 0, expiries: 0, leaseIds: 0 });

    const parked = broker.pop(pop(q, { wait: true, timeoutMs: 30_000 }));
    const deadlines = rt.engine.scheduler.lane('pop-deadline');
    for (let i = 0; i < 1000 && deadlines.size === 0; i++) await new Promise((r) => setImmediate(r));
    assert.equal(deadlines.size, 1, 'the parked pop has a deadline entry');
    clock.advance(30_000);
    assert.equal(await parked, null, 'answered empty at its deadline, on the test clock');
    assert.equal(held().scheduled, 0);
  });
});
