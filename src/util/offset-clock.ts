/**
 * A clock that follows another one (the database's, docs/storage.md#time) by a measured offset:
 * `now()` is the base clock minus {@link OffsetClock.offsetMs}. Timers run on the base clock
 * (durations are the same on both).
 */
import { systemClock, type Clock, type ClockTimer } from './clock.js';

/** The base clock shifted by a measured offset (see the module comment). */
export class OffsetClock implements Clock {
  /** Base clock minus the followed clock, ms (positive when the base runs ahead). */
  offsetMs = 0;

  constructor(private readonly base: Clock = systemClock) {}

  /** The followed clock's instant, epoch ms (integer). */
  now(): number {
    return this.base.now() - this.offsetMs;
  }

  /** The base clock's own instant, epoch ms. */
  baseNow(): number {
    return this.base.now();
  }

  setTimer(fn: () => void, delayMs: number): ClockTimer {
    return this.base.setTimer(fn, delayMs);
  }

  clearTimer(timer: ClockTimer): void {
    this.base.clearTimer(timer);
  }
}
