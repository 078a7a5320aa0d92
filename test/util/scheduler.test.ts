/**
 * The due-time scheduler driven by a TestClock: order, cancel, reschedule, lanes, and the delay
 * cap that keeps far due times from overflowing setTimeout.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_TIMER_DELAY_MS, TestClock, type Clock, type ClockTimer } from '../../src/util/clock.js';
import { Scheduler } from '../../src/util/scheduler.js';

/** A TestClock that records every delay it was asked to arm. */
class RecordingClock extends TestClock {
  readonly delays: number[] = [];
  override setTimer(fn: () => void, delayMs: number): ClockTimer {
    this.delays.push(delayMs);
    return super.setTimer(fn, delayMs);
  }
}

describe('TestClock', () => {
  test('fires due timers synchronously in due order, each at its own instant', () => {
    const clock = new TestClock(1000);
    const seen: [string, number][] = [];
    clock.setTimer(() => seen.push(['b', clock.now()]), 20);
    clock.setTimer(() => seen.push(['a', clock.now()]), 10);
    const c = clock.setTimer(() => seen.push(['x', clock.now()]), 15);
    clock.clearTimer(c);
    clock.advance(5);
    assert.deepEqual(seen, []);
    clock.advance(100);
    assert.deepEqual(seen, [['a', 1010], ['b', 1020]]);
    assert.equal(clock.now(), 1105);
    assert.equal(clock.pending, 0);
  });
});

describe('Scheduler', () => {
  test('fires in due-time order, ties in arming order, each once', () => {
    const clock = new TestClock(0);
    const s = new Scheduler(clock);
    const lane = s.lane<string>('t');
    const fired: string[] = [];
    for (const [k, at] of [['c', 30], ['a', 10], ['b', 20], ['b2', 20], ['d', 40]] as const) lane.schedule(k, at, () => fired.push(k));
    clock.advance(25);
    assert.deepEqual(fired, ['a', 'b', 'b2']);
    clock.advance(100);
    assert.deepEqual(fired, ['a', 'b', 'b2', 'c', 'd']);
    assert.equal(s.size, 0);
    assert.equal(lane.size, 0);
    assert.equal(s.armed, false, 'nothing scheduled, no timer');
  });

  test('cancel removes the entry at once; reschedule moves it without a duplicate', () => {
    const clock = new TestClock(0);
    const s = new Scheduler(clock);
    const lane = s.lane<object>('leases');
    const k1 = {};
    const k2 = {};
    const fired: string[] = [];
    lane.schedule(k1, 100, () => fired.push('k1'));
    lane.schedule(k2, 200, () => fired.push('k2'));
    assert.equal(s.size, 2);
    assert.equal(lane.cancel(k1), true);
    assert.equal(lane.cancel(k1), false);
    assert.equal(s.size, 1, 'a cancelled entry leaves the heap at once');
    lane.schedule(k2, 500, () => fired.push('k2 moved'));
    lane.schedule(k2, 400, () => fired.push('k2 moved again'));
    assert.equal(s.size, 1, 'rescheduling keeps one entry per key');
    assert.equal(lane.dueAt(k2), 400);
    clock.advance(399);
    assert.deepEqual(fired, []);
    clock.advance(1);
    assert.deepEqual(fired, ['k2 moved again']);
  });

  test('lanes share one heap and one timer but keep their keys apart', () => {
    const clock = new TestClock(0);
    const s = new Scheduler(clock);
    const a = s.lane<string>('a');
    const b = s.lane<string>('b');
    const fired: string[] = [];
    a.schedule('k', 10, () => fired.push('a'));
    b.schedule('k', 5, () => fired.push('b'));
    assert.equal(s.size, 2);
    assert.equal(clock.pending, 1, 'one armed timer');
    a.clear();
    assert.equal(s.size, 1);
    clock.advance(20);
    assert.deepEqual(fired, ['b']);
  });

  test('a callback may schedule again; one due now waits for the next round (no unbounded loop)', () => {
    const clock = new TestClock(0);
    const s = new Scheduler(clock);
    const lane = s.lane<string>('r');
    let n = 0;
    const again = (): void => { n++; if (n < 3) lane.schedule('k', clock.now(), again); };
    lane.schedule('k', 10, again);
    clock.advance(10);
    assert.equal(n, 3, 'each re-schedule at now ran in a following round');
    assert.equal(s.size, 0);
  });

  test('a throwing callback is reported and does not stop the others', () => {
    const clock = new TestClock(0);
    const errors: string[] = [];
    const s = new Scheduler(clock, { onError: (e, lane) => errors.push(`${lane}:${(e as Error).message}`) });
    const lane = s.lane<number>('x');
    const fired: number[] = [];
    lane.schedule(1, 5, () => { throw new Error('boom'); });
    lane.schedule(2, 5, () => fired.push(2));
    clock.advance(5);
    assert.deepEqual(errors, ['x:boom']);
    assert.deepEqual(fired, [2]);
  });

  test('a due time ten years out arms capped delays and fires exactly once, at its due time', () => {
    const clock = new RecordingClock(0);
    const cap = 60 * 60 * 1000;
    const s = new Scheduler(clock as Clock, { maxDelayMs: cap });
    const tenYears = 10 * 365 * 24 * 3600 * 1000;
    const firedAt: number[] = [];
    s.lane<string>('far').schedule('k', tenYears, () => firedAt.push(clock.now()));
    assert.ok(tenYears > MAX_TIMER_DELAY_MS, 'the due time is beyond what setTimeout can hold');
    const step = 37 * 24 * 3600 * 1000; // 37 days, not a multiple of the cap
    while (clock.now() + step < tenYears) {
      clock.advance(step);
      assert.deepEqual(firedAt, [], `not before the due time (now ${clock.now()})`);
    }
    clock.set(tenYears - 1);
    assert.deepEqual(firedAt, []);
    clock.advance(1);
    assert.deepEqual(firedAt, [tenYears]);
    clock.advance(step);
    assert.deepEqual(firedAt, [tenYears], 'once');
    assert.ok(clock.delays.length > 1, 'it re-armed as the cap passed');
    assert.ok(clock.delays.every((d) => d >= 0 && d <= cap), `every armed delay within the cap: max ${Math.max(...clock.delays)}`);
    assert.equal(s.armed, false);
  });

  test('many keys: the heap returns them sorted after random inserts, moves and cancels', () => {
    const clock = new TestClock(0);
    const s = new Scheduler(clock);
    const lane = s.lane<number>('rand');
    let seed = 42;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const due = new Map<number, number>();
    const fired: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const at = 1 + Math.floor(rnd() * 100_000);
      lane.schedule(i, at, () => fired.push(at));
      due.set(i, at);
    }
    for (let i = 0; i < 5000; i += 3) {
      const at = 1 + Math.floor(rnd() * 100_000);
      lane.schedule(i, at, () => fired.push(at));
      due.set(i, at);
    }
    for (let i = 0; i < 5000; i += 7) { lane.cancel(i); due.delete(i); }
    assert.equal(s.size, due.size);
    clock.advance(100_001);
    assert.equal(fired.length, due.size);
    assert.deepEqual(fired, [...fired].sort((x, y) => x - y));
    assert.equal(s.size, 0);
  });
});
