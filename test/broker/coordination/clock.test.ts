/**
 * Coordination rules that depend on time, driven by a test clock on a real SQLite store: timers
 * fire at their due time (and a failing firing backs off), KV rows expire at their TTL (and the
 * sweep prunes them), lock permits lapse at their TTL. No sleeps: the clock moves when the test
 * says so; the async work a due time starts (a timer's unit of work, the sweep) is awaited by
 * polling for its result.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '../../../src/broker/broker.js';
import { runLocks } from '../../../src/broker/coordination/locks.js';
import type { Services } from '../../../src/broker/services.js';
import type { TestClock } from '../../../src/util/clock.js';
import { RawJson } from '../../../src/util/json.js';
import { popOf, startTestServices, type TestServices } from '../../helpers/services.js';
import { waitFor } from '../../helpers/wait.js';

let t: TestServices;
let services: Services;
let broker: Broker;
let clock: TestClock;
before(() => {
  t = startTestServices();
  ({ services, clock } = t);
  broker = services.broker;
});
after(() => t.stop());

describe('on a test clock', () => {
  test('a timer fires at its due time, not before', async () => {
    const [r] = await services.timers.apply([{ op: 'schedule', queue: 'timed', timerKey: 'k1', delayMs: 60_000, txn: 't1', payloadJson: '"wake"' }], null);
    assert.equal(r!.ok, true);
    clock.advance(59_999);
    assert.equal(await broker.pop(popOf('timed')), null, 'not due yet');
    assert.equal(services.timers.fired, 0);
    clock.advance(1);
    await waitFor(() => services.timers.fired === 1, { what: 'the timer to fire' });
    const got = await broker.pop(popOf('timed'));
    assert.ok(got && 'messages' in got);
    assert.deepEqual(got.messages.map((m) => [m.transactionId, (m.data as RawJson).text ?? m.data]), [['t1', '"wake"']]);
  });

  test('a KV row expires at its TTL on the broker clock, and the sweep prunes it', async () => {
    const put = await services.kv.batch([{ op: 'put', ns: 'ttl', key: 'k', value: 1, expiry: 5_000, required: false }]);
    assert.ok(put.ok);
    const get = async () => {
      const a = await services.kv.batch([{ op: 'get', ns: 'ttl', key: 'k' }]);
      assert.ok(a.ok);
      return (a.results[0] as unknown as { found: boolean }).found;
    };
    clock.advance(4_999);
    assert.equal(await get(), true, 'live 1 ms before its expiry');
    const prunedBefore = services.kv.sweeper.pruned;
    clock.advance(1);
    assert.equal(await get(), false, 'invisible at its expiry');
    assert.equal((await services.kv.reader().scan('ttl', '', undefined, 10)).length, 0, 'console reads agree');
    await waitFor(() => services.kv.sweeper.pruned > prunedBefore, { what: 'the KV sweep to prune the row' });
  });

  test('a lock permit lapses at its TTL: another owner acquires it then, not before', async () => {
    const acquire = async (owner: string) => {
      const r = (await runLocks(services.kv, [{ op: 'acquire', name: 'L', ttlMs: 10_000, owner, limit: 1 }]))[0]!;
      return 'acquired' in r ? r.acquired : undefined;
    };
    assert.equal(await acquire('a'), true);
    assert.equal(await acquire('b'), false, 'held by a');
    clock.advance(9_999);
    assert.equal(await acquire('b'), false, 'still held 1 ms before its TTL');
    clock.advance(1);
    assert.equal(await acquire('b'), true, 'lapsed: b acquires');
  });
});

describe('a failing timer firing on a test clock', () => {
  /** Lets every pending callback and I/O completion run (not a sleep: the clock stands still). */
  async function settle(): Promise<void> {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  }

  test('is retried with a growing backoff and recorded (attempts, lastError); it fires once the cause is gone', async () => {
    const first = startTestServices();
    const { clock, dataDir } = first;
    const big = JSON.stringify('x'.repeat(200));
    const [r] = await first.services.timers.apply([{ op: 'schedule', queue: 'tf', timerKey: 'big', delayMs: 1000, txn: 'big-1', payloadJson: big }], null);
    assert.equal(r!.ok, true);
    await first.stop();

    // restarted with a payload limit the timer's message exceeds: every firing attempt is refused
    const limited = startTestServices({ QUEEN_MAX_PAYLOAD_BYTES: '64' }, { dataDir, clock });
    try {
      const peek = async () => (await limited.services.timers.peek('tf', 'big'))!;
      clock.advance(1000);
      await waitFor(async () => (await peek()).attempts === 1, { what: 'a first failed firing attempt' });
      assert.match((await peek()).lastError ?? '', /exceeds 64 bytes/);
      let lastGap = 0;
      for (let attempts = 1; attempts <= 4; attempts++) {
        await settle();
        assert.equal((await peek()).attempts, attempts, 'no retry while the clock stands still (no hot loop)');
        const gap = Date.parse((await peek()).deliverAt) - clock.now();
        assert.ok(gap >= 1000 && gap > lastGap, `backoff after attempt ${attempts}: ${gap} ms (before: ${lastGap} ms)`);
        lastGap = gap;
        clock.advance(gap - 1);
        await settle();
        assert.equal((await peek()).attempts, attempts, 'not retried before its backoff has passed');
        clock.advance(1);
        await waitFor(async () => (await peek()).attempts === attempts + 1, { what: `failed firing attempt ${attempts + 1}` });
      }
      assert.equal(limited.services.timers.fired, 0);
      assert.equal(await limited.services.broker.pop(popOf('tf')), null, 'nothing was pushed');
    } finally {
      await limited.stop();
    }

    const healed = startTestServices({}, { dataDir, clock });
    try {
      clock.advance(Date.parse((await healed.services.timers.peek('tf', 'big'))!.deliverAt) - clock.now());
      await waitFor(() => healed.services.timers.fired === 1, { what: 'the timer to fire once the limit is gone' });
      const got = await healed.services.broker.pop(popOf('tf'));
      assert.ok(got && 'messages' in got);
      assert.deepEqual(got.messages.map((m) => (m.data as RawJson).text ?? m.data), [big]);
    } finally {
      await healed.stop();
    }
  });
});
