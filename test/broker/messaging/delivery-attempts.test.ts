/**
 * The delivery attempt of each popped message (docs/http-api.md#delivery-attempts), driven by a test
 * clock on a real SQLite store: redeliveries by lease expiry in batches of other sizes than the
 * first, a hand-back of a claim nobody received, auto-ack after a lease. The count never falls
 * below the deliveries the message has had to the group.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '../../../src/broker/broker.js';
import { QUEUE_MODE } from '../../../src/broker/broker.js';
import type { TestClock } from '../../../src/util/clock.js';
import { RawJson } from '../../../src/util/json.js';
import { popOf, startTestServices, type TestServices } from '../../helpers/services.js';

let t: TestServices;
let broker: Broker;
let clock: TestClock;
before(() => {
  t = startTestServices();
  broker = t.services.broker;
  clock = t.clock;
});
after(() => t.stop());

type Popped = Awaited<ReturnType<Broker['pop']>>;
type Msg = Extract<NonNullable<Popped>, { messages: unknown }>['messages'][number];

const msgs = (r: Popped): Msg[] => (r && 'messages' in r ? r.messages : []);
/** [payload, deliveryAttempt] of each message. */
const seen = (r: Popped) => msgs(r).map((m) => [Number((m.data as RawJson).text ?? m.data), m.deliveryAttempt]);

async function queueOf(queue: string, n: number): Promise<void> {
  await broker.configure({ queue, mode: 'replace', options: { leaseTime: 10 } });
  await broker.push(Array.from({ length: n }, (_, i) => ({ queue, partition: 'p', payload: i, transactionId: `t${i}` })), null);
}

async function ackAll(r: Popped): Promise<void> {
  const out = await broker.ack(msgs(r).map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status: 'completed', group: QUEUE_MODE })));
  assert.ok(out.every((o) => o.success), JSON.stringify(out));
}

describe('delivery attempts on a test clock', () => {
  test('6 popped, the lease expires, 2 popped and acked: the other 4 are on their second delivery', async () => {
    await queueOf('probe', 6);
    assert.deepEqual(seen(await broker.pop(popOf('probe', { batch: 6 }))), [[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1]]);
    clock.advance(10_000);
    const two = await broker.pop(popOf('probe', { batch: 2 }));
    assert.deepEqual(seen(two), [[0, 2], [1, 2]]);
    await ackAll(two);
    assert.deepEqual(seen(await broker.pop(popOf('probe'))), [[2, 2], [3, 2], [4, 2], [5, 2]]);
  });

  test('expiries with batches of changing sizes: every message counts its own deliveries, never fewer', async () => {
    await queueOf('sizes', 6);
    const truth = new Map<number, number>();
    const check = (r: Popped, what: string) => {
      for (const [n, attempt] of seen(r)) {
        truth.set(n!, (truth.get(n!) ?? 0) + 1);
        assert.ok(attempt! >= truth.get(n!)!, `${what}: message ${n} has been delivered ${truth.get(n!)} times, told ${attempt}`);
      }
    };
    for (const [batch, expected] of [
      [6, [[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1]]],
      [2, [[0, 2], [1, 2]]],
      [4, [[0, 3], [1, 3], [2, 2], [3, 2]]],
      [10, undefined], // three levels of counts by now: an upper bound, not exact
      [1, undefined],
      [10, undefined],
    ] as const) {
      const r = await broker.pop(popOf('sizes', { batch }));
      check(r, `batch ${batch}`);
      if (expected) assert.deepEqual(seen(r), expected, `batch ${batch}`);
      clock.advance(10_000);
    }
  });

  test('a claim handed back (its caller left) is not counted, in a redelivery smaller than the first', async () => {
    await queueOf('handback', 6);
    await broker.pop(popOf('handback', { batch: 6 }));
    clock.advance(10_000);
    const two = await broker.pop(popOf('handback', { batch: 2 }));
    await ackAll(two);
    const left = new AbortController();
    const popping = broker.pop(popOf('handback'), left.signal);
    left.abort(); // the claim goes on, for nobody, and is handed back
    assert.equal(await popping, null);
    assert.deepEqual(seen(await broker.pop(popOf('handback'))), [[2, 2], [3, 2], [4, 2], [5, 2]], 'the first batch delivered them once; the hand-back did not count');
  });

  test('an auto-ack pop after an expired lease counts the redelivery; a lease after it goes on counting', async () => {
    await queueOf('auto', 6);
    await broker.pop(popOf('auto', { batch: 6 }));
    clock.advance(10_000);
    assert.deepEqual(seen(await broker.pop(popOf('auto', { batch: 3, autoAck: true }))), [[0, 2], [1, 2], [2, 2]]);
    assert.deepEqual(seen(await broker.pop(popOf('auto'))), [[3, 2], [4, 2], [5, 2]]);
  });
});
