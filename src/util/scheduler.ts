/**
 * One due-time scheduler for the whole broker: a keyed, indexed min-heap of due times and ONE
 * armed timer, for the earliest. Every due-time user (lease expiry, delayed and window-buffered
 * partitions, the timer firing loop, the KV TTL sweep, retention, long-poll deadlines) owns a
 * {@link SchedulerLane}: a namespace of keys in the shared heap. Insert, cancel and reschedule by
 * key are O(log n), so ending a lease removes its entry at once and memory follows what is live.
 *
 * The armed delay is capped ({@link SchedulerOptions.maxDelayMs}, 1 hour by default, far below
 * setTimeout's 2^31−1 ms): a far due time costs one wake-up per cap, never a
 * `TimeoutOverflowWarning` or a 1 ms re-arm loop.
 */
import type { Clock, ClockTimer } from './clock.js';

/** Default cap on one armed delay, ms. */
export const DEFAULT_MAX_DELAY_MS = 60 * 60 * 1000;

export interface SchedulerOptions {
  /** Longest single armed delay, ms (1..2^31−1; default {@link DEFAULT_MAX_DELAY_MS}). */
  maxDelayMs?: number;
  /** Told about a callback that threw (the other due callbacks still run); default: rethrown later. */
  onError?: (err: unknown, lane: string) => void;
}

interface Entry {
  at: number;
  /** Arming order: ties on `at` fire first-armed first. */
  seq: number;
  /** Position in the heap array. */
  index: number;
  lane: SchedulerLane<unknown>;
  key: unknown;
  fire: () => void;
}

function before(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** The heap and its timer (see the module comment). */
export class Scheduler {
  private readonly heap: Entry[] = [];
  private readonly lanes = new Map<string, SchedulerLane<unknown>>();
  private seq = 0;
  private timer: ClockTimer | undefined;
  /** The due time the armed timer was set for (it may wake earlier, at the cap). */
  private armedFor = Number.POSITIVE_INFINITY;
  private readonly maxDelayMs: number;
  private readonly onError: (err: unknown, lane: string) => void;

  constructor(readonly clock: Clock, opts: SchedulerOptions = {}) {
    this.maxDelayMs = opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    if (!(this.maxDelayMs >= 1 && this.maxDelayMs <= 2_147_483_647)) throw new RangeError(`maxDelayMs ${this.maxDelayMs} is outside 1..2^31−1`);
    this.onError = opts.onError ?? ((err) => queueMicrotask(() => { throw err; }));
  }

  /**
   * The lane called `name` (created on first use; the same object afterwards).
   * @typeParam K the lane's key type (compared as Map keys: by value for strings, by identity for objects)
   */
  lane<K>(name: string): SchedulerLane<K> {
    let l = this.lanes.get(name);
    if (!l) this.lanes.set(name, (l = new SchedulerLane<unknown>(this, name)));
    return l as SchedulerLane<K>;
  }

  /** Entries scheduled over all lanes. */
  get size(): number {
    return this.heap.length;
  }

  /** The earliest due time (epoch ms), or undefined when nothing is scheduled. */
  get nextDueAt(): number | undefined {
    return this.heap[0]?.at;
  }

  /** True while a timer is armed (tests check that an empty scheduler holds none). */
  get armed(): boolean {
    return this.timer !== undefined;
  }

  /** Cancels every entry of every lane and the timer. */
  clear(): void {
    for (const l of this.lanes.values()) l.forget();
    this.heap.length = 0;
    this.arm();
  }

  /** @internal Adds or moves `e` (a lane's entry) to `at`. */
  put(e: Entry, at: number, isNew: boolean): void {
    e.at = at;
    e.seq = this.seq++;
    if (isNew) {
      e.index = this.heap.length;
      this.heap.push(e);
      this.up(e.index);
    } else {
      this.fix(e.index);
    }
    if (this.heap[0] === e) this.arm();
  }

  /** @internal Removes `e` from the heap. */
  remove(e: Entry): void {
    const i = e.index;
    const last = this.heap.pop()!;
    if (last !== e) {
      this.heap[i] = last;
      last.index = i;
      this.fix(i);
    }
    e.index = -1;
    // An earlier timer than needed stays armed: it wakes, finds nothing due and re-arms.
    if (this.heap.length === 0) this.arm();
  }

  /** Fires every entry due at `clock.now()`, in due order; entries armed meanwhile wait for the next round. */
  private runDue(): void {
    const now = this.clock.now();
    const round = this.seq;
    for (;;) {
      const top = this.heap[0];
      if (!top || top.at > now || top.seq >= round) break;
      top.lane.take(top);
      try {
        top.fire();
      } catch (e) {
        this.onError(e, top.lane.name);
      }
    }
  }

  private wake(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.runDue();
    this.arm();
  }

  /** Keeps one timer armed for the earliest entry, its delay capped. */
  private arm(): void {
    const top = this.heap[0];
    if (!top) {
      if (this.timer) this.clock.clearTimer(this.timer);
      this.timer = undefined;
      this.armedFor = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.timer && this.armedFor <= top.at) return;
    if (this.timer) this.clock.clearTimer(this.timer);
    this.armedFor = top.at;
    const delay = Math.min(this.maxDelayMs, Math.max(0, top.at - this.clock.now()));
    this.timer = this.clock.setTimer(() => this.wake(), delay);
  }

  private fix(i: number): void {
    if (i > 0 && before(this.heap[i]!, this.heap[(i - 1) >> 1]!)) this.up(i);
    else this.down(i);
  }

  private up(i: number): void {
    const h = this.heap;
    const e = h[i]!;
    while (i > 0) {
      const pi = (i - 1) >> 1;
      const parent = h[pi]!;
      if (!before(e, parent)) break;
      h[i] = parent;
      parent.index = i;
      i = pi;
    }
    h[i] = e;
    e.index = i;
  }

  private down(i: number): void {
    const h = this.heap;
    const n = h.length;
    const e = h[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(h[r]!, h[l]!) ? r : l;
      const child = h[c]!;
      if (!before(child, e)) break;
      h[i] = child;
      child.index = i;
      i = c;
    }
    h[i] = e;
    e.index = i;
  }
}

/** One user's keys in a {@link Scheduler}: at most one due time per key. */
export class SchedulerLane<K> {
  private readonly entries = new Map<K, Entry>();

  /** @internal use {@link Scheduler.lane} */
  constructor(private readonly scheduler: Scheduler, readonly name: string) {}

  /**
   * Calls `fire` once at `at` (epoch ms), replacing any due time and callback `key` had.
   * A due time in the past fires on the next round (asynchronously).
   * @throws RangeError when `at` is not a finite number
   */
  schedule(key: K, at: number, fire: () => void): void {
    if (!Number.isFinite(at)) throw new RangeError(`${this.name}: due time ${at} is not a finite epoch ms`);
    const e = this.entries.get(key);
    if (e) {
      e.fire = fire;
      this.scheduler.put(e, at, false);
      return;
    }
    const fresh: Entry = { at, seq: 0, index: -1, lane: this as SchedulerLane<unknown>, key, fire };
    this.entries.set(key, fresh);
    this.scheduler.put(fresh, at, true);
  }

  /** Removes `key`'s entry. @returns whether there was one */
  cancel(key: K): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    this.entries.delete(key);
    this.scheduler.remove(e);
    return true;
  }

  /** `key`'s due time (epoch ms), or undefined. */
  dueAt(key: K): number | undefined {
    return this.entries.get(key)?.at;
  }

  /** Entries in this lane. */
  get size(): number {
    return this.entries.size;
  }

  /** Cancels every entry of this lane (O(k log n)). */
  clear(): void {
    for (const e of this.entries.values()) this.scheduler.remove(e);
    this.entries.clear();
  }

  /** @internal the entry is due: drop it from the lane and the heap before its callback runs */
  take(e: Entry): void {
    this.entries.delete(e.key as K);
    this.scheduler.remove(e);
  }

  /** @internal the scheduler is dropping every entry at once */
  forget(): void {
    this.entries.clear();
  }
}
