/**
 * Time as a dependency: the broker's domain rules (leases, delays, window buffers, timers,
 * retention, KV TTL) read the instant and arm timers through a {@link Clock}, so tests can move
 * time instead of sleeping. Modelled on timgit/pg-boss: src/clock.ts.
 */

/** The longest delay `setTimeout` honours (2^31−1 ms); Node runs longer ones after 1 ms. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** An armed one-shot timer, opaque to its user; pass it back to {@link Clock.clearTimer}. */
export interface ClockTimer {
  readonly __clockTimer?: never;
}

/** A source of the current instant and of one-shot timers. */
export interface Clock {
  /** The current instant, epoch ms (integer). */
  now(): number;
  /**
   * Calls `fn` once after `delayMs` ms (negative counts as 0; delays above
   * {@link MAX_TIMER_DELAY_MS} are clamped to it, so the timer may fire early and callers re-check).
   * The timer never keeps the process alive.
   */
  setTimer(fn: () => void, delayMs: number): ClockTimer;
  /** Cancels a timer from {@link setTimer}; a fired or cleared one is ignored. */
  clearTimer(timer: ClockTimer): void;
}

/** Wall-clock time and Node timers (unref'd). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, delayMs) {
    const t = setTimeout(fn, Math.min(MAX_TIMER_DELAY_MS, Math.max(0, delayMs)));
    t.unref();
    return t as unknown as ClockTimer;
  },
  clearTimer(timer) {
    clearTimeout(timer as unknown as NodeJS.Timeout);
  },
};

interface TestTimer extends ClockTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock for tests: time stands still until {@link advance} or {@link set} moves it, and timers
 * due on the way fire synchronously, in due order (ties in arming order), each seeing `now()` at
 * its own due time.
 */
export class TestClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Set<TestTimer>();

  /** @param start the initial instant, epoch ms */
  constructor(start = Date.UTC(2030, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, delayMs: number): ClockTimer {
    const t: TestTimer = { at: this.current + Math.min(MAX_TIMER_DELAY_MS, Math.max(0, delayMs)), seq: this.seq++, fn };
    this.timers.add(t);
    return t;
  }

  clearTimer(timer: ClockTimer): void {
    this.timers.delete(timer as TestTimer);
  }

  /** Armed timers not yet fired. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms` (≥ 0), firing what falls due. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`TestClock.advance: ${ms} is not a non-negative number of ms`);
    this.set(this.current + ms);
  }

  /**
   * Moves time to `at` (epoch ms), firing every timer due at or before it, including timers armed
   * by the callbacks themselves. Moving backwards fires nothing.
   */
  set(at: number): void {
    for (;;) {
      let next: TestTimer | undefined;
      for (const t of this.timers) if (t.at <= at && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      if (!next) break;
      this.timers.delete(next);
      if (next.at > this.current) this.current = next.at;
      next.fn();
    }
    this.current = at;
  }
}
