/**
 * The broker domain tested directly (no HTTP), on a real SQLite store in a temp directory:
 * ack status normalisation, nack priority at one position, and the ready set that keeps pops
 * from scanning partitions (docs/storage.md).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { normalizeStatus } from '../../../src/broker/messaging/ack.js';
import { Broker, QUEUE_MODE } from '../../../src/broker/broker.js';
import { plainCodec } from '../../../src/model/codec.js';
import type { PopRequest } from '../../../src/broker/messaging/pop.js';
import { loadConfig } from '../../../src/config/index.js';
import { SqliteStore } from '../../../src/storage/sqlite/store.js';
import { SqliteRuntime } from '../../../src/storage/sqlite/runtime.js';
import { RawJson } from '../../../src/util/json.js';
import { tempDir } from '../../helpers/broker.js';
import { waitFor } from '../../helpers/wait.js';
import { DEFAULT_TENANT } from '../../../src/storage/contract.js';

let broker: Broker;
let rt: SqliteRuntime;
before(() => {
  const dataDir = path.join(tempDir(), 'data');
  const config = loadConfig({ QUEEN_DATA_DIR: dataDir });
  const cfg = config;
  const log = pino({ level: 'silent' });
  rt = new SqliteRuntime(SqliteStore.open({ dataDir, sync: 'off' }), cfg, plainCodec, log);
  broker = new Broker(rt, cfg, plainCodec, log);
  broker.start();
});
after(async () => { await broker.shutdown(1000); });

function pop(queue: string, over: Partial<PopRequest> = {}): PopRequest {
  return { queue, partition: undefined, namespace: undefined, task: undefined, group: QUEUE_MODE, batch: 100, partitions: 1, wait: false, timeoutMs: 0, autoAck: false, leaseSeconds: undefined, subscription: {}, ...over };
}

describe('ack statuses', () => {
  test('normalisation is case-sensitive and everything unknown is a failure', () => {
    const table: [string | null | undefined, string][] = [
      [undefined, 'completed'], [null, 'completed'], ['completed', 'completed'], ['success', 'completed'], ['acked', 'completed'], ['ok', 'completed'],
      ['retry', 'retry'], ['dlq', 'dlq'], ['failed', 'failed'], ['', 'failed'], ['COMPLETED', 'failed'], ['Retry', 'failed'], ['nope', 'failed'],
    ];
    for (const [wire, meaning] of table) assert.equal(normalizeStatus(wire), meaning, String(wire));
  });

  test('the lowest nacked position wins; at one position dlq beats failed beats retry', async () => {
    await broker.push([0, 1, 2].map((n) => ({ queue: 'prio', payload: n, transactionId: `t${n}` })), null);
    const got = (await broker.pop(pop('prio')))!;
    const [m0, m1, m2] = got.messages;
    const out = await broker.ack([
      { transactionId: m2!.transactionId, partitionId: m2!.partitionId, status: 'failed', group: QUEUE_MODE },
      { transactionId: m1!.transactionId, partitionId: m1!.partitionId, status: 'retry', group: QUEUE_MODE },
      { transactionId: m1!.transactionId, partitionId: m1!.partitionId, status: 'dlq', error: 'poison', group: QUEUE_MODE },
      { transactionId: m0!.transactionId, partitionId: m0!.partitionId, status: 'completed', group: QUEUE_MODE },
    ]);
    assert.equal(out.length, 4);
    assert.deepEqual(out.map((o) => o.dlq), [false, false, true, false], 'm1 is dead-lettered (dlq beats retry at its position)');
    const next = (await broker.pop(pop('prio')))!;
    assert.deepEqual(next.messages.map((m) => (m.data as RawJson).text), ['2'], 'm0 committed, m1 dead-lettered, m2 redelivered');
  });
});

describe('ready sets', () => {
  test('a pop looks only at partitions with work: after draining, a new push readies exactly its partition', async () => {
    const items = Array.from({ length: 2000 }, (_, i) => ({ queue: 'wide', partition: `p${i}`, payload: i }));
    await broker.push(items, null);
    const q = rt.engine.queues.get('wide')!;
    let drained = 0;
    for (;;) {
      const r = await broker.pop(pop('wide', { autoAck: true, partitions: 500, batch: 1000 }));
      if (!r) break;
      drained += r.messages.length;
    }
    assert.equal(drained, 2000);
    const g = q.groups.get(QUEUE_MODE)!;
    assert.equal(g.ready.size, 0, 'nothing left to look at');
    await broker.push([{ queue: 'wide', partition: 'p1234', payload: 'late' }], null);
    assert.deepEqual([...g.ready].map((p) => p.name), ['p1234']);
    const r = (await broker.pop(pop('wide')))!;
    assert.deepEqual(r.messages.map((m) => (m.data as RawJson).text), ['"late"']);
  });
});

describe('parked consumers', () => {
  test('a push wakes only waiters of its queue, and discovery waiters by label', async () => {
    const woken: string[] = [];
    const w = (name: string, queue: string | undefined, namespace?: string, task?: string) => ({
      tenant: DEFAULT_TENANT, queue, group: QUEUE_MODE, partition: undefined, namespace, task, wake: () => woken.push(name),
    });
    const waiters = broker.waiters;
    const a = w('a', 'wq-a');
    const b = w('b', 'wq-b');
    const d1 = w('ns-only', undefined, 'wq', undefined);
    const d2 = w('other-ns', undefined, 'elsewhere', undefined);
    for (const x of [a, b, d1, d2]) waiters.add(x);
    await broker.push([{ queue: 'wq.job', payload: 1 }], null);
    await broker.push([{ queue: 'wq-a', payload: 1 }], null);
    assert.deepEqual(woken.sort(), ['a', 'ns-only']);
    assert.equal(waiters.remove(b), true, 'b is still parked');
    assert.equal(waiters.remove(d2), true, 'the other namespace is still parked');
  });
});

describe('wake-up hints', () => {
  test('a push announces its partition after the commit, in the operation contract shape', async () => {
    const hints: [string, string, string[], number | null][] = [];
    rt.engine.onPartitionsReady((q, parts, at) => hints.push([q.tenant, q.queue, parts, at]));
    await broker.push([{ queue: 'hint-q', partition: 'p1', payload: 1 }, { queue: 'hint-q', partition: 'p1', payload: 2 }], null);
    assert.deepEqual(hints.filter((h) => h[1] === 'hint-q'), [[DEFAULT_TENANT, 'hint-q', ['p1'], null]], 'one hint per partition per unit');
  });

  test('a nack that rewinds the cursor wakes a pop parked on the partition', async () => {
    await broker.push([{ queue: 'hint-nack', payload: 1 }], null);
    const first = await broker.pop(pop('hint-nack'));
    assert.ok(first && first.messages.length === 1);
    const m = first.messages[0]!;
    const parked = broker.pop(pop('hint-nack', { wait: true, timeoutMs: 60_000 }));
    await waitFor(() => broker.waiters.size === 1, { what: 'the pop to park' });
    const [o] = await broker.ack([{ transactionId: m.transactionId, partitionId: m.partitionId, status: 'failed', leaseId: m.leaseId, group: QUEUE_MODE }]);
    assert.equal(o?.success, true);
    const again = await parked;
    assert.deepEqual(again?.messages.map((x) => x.transactionId), [m.transactionId], 'redelivered to the parked pop');
  });

  test('a push that commits while a waiting pop is claiming still reaches it (no park after a missed hint)', { timeout: 20_000 }, async () => {
    await broker.configure({ queue: 'hint-race', options: {}, mode: 'merge' });
    // Same turn: the empty claim and the push share one group commit; the push's hint arrives before the pop can park.
    const parked = broker.pop(pop('hint-race', { wait: true, timeoutMs: 600_000 }));
    const pushed = broker.push([{ queue: 'hint-race', payload: 'x' }], null);
    const [got] = await Promise.all([parked, pushed]);
    assert.equal(got?.messages.length, 1);
  });

  test('two acks planned on the same cursor before either commits never move it back (no redelivery)', async () => {
    await broker.push([{ queue: 'ack-race', payload: 1 }, { queue: 'ack-race', payload: 2 }], null);
    const got = await broker.pop(pop('ack-race'));
    assert.equal(got?.messages.length, 2);
    const [m1, m2] = got.messages as [typeof got.messages[0], typeof got.messages[0]];
    // No lease named: only the offset the decision was made on guards the commit.
    const ack = (m: typeof m1) => broker.ack([{ transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed', group: QUEUE_MODE }]);
    // Same turn: both are decided on committed offset 0; the second commit runs after the first moved it to 2.
    const [a2, a1] = await Promise.all([ack(m2), ack(m1)]);
    assert.equal(a2[0]?.success, true);
    assert.deepEqual([a1[0]?.success, a1[0]?.noop], [true, true], 'decided again behind the moved cursor: already committed');
    assert.equal(await broker.pop(pop('ack-race')), null, 'nothing is delivered again');
  });
});
