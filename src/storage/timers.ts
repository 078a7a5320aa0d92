/**
 * The timer part of the storage contract (scheduled messages, docs/http-api.md#timers): one row per
 * (queue, timerKey), found by key and by due time. The due-time index is what the firing loop
 * reads: "what is due now" and "when is the next one" are index seeks whose cost grows with the
 * rows returned, never with the number of pending timers (docs/storage.md#costs-scale-with-work).
 *
 * Reads are callable anywhere; writes only inside {@link Store.run} (they join that unit of work
 * and its group commit), so firing a timer deletes it in the same commit that pushes its message.
 */
import type { StoredPayload } from './store.js';

/** A pending timer as stored. Timers name their queue (it may not exist until the first firing). */
export interface TimerRow {
  queue: string;
  timerKey: string;
  partition: string;
  /** epoch ms; the message is pushed at or after this moment, never before. */
  deliverAt: number;
  /** transactionId the delivered message carries (dedup key in its partition). */
  txn: string;
  /** id the delivered message gets. */
  messageId: string;
  /** JSON text, or an encryption envelope when `encrypted` (the queue's `encryptionEnabled`). */
  payload: StoredPayload;
  encrypted: boolean;
  /** JWT `sub` of the scheduler; stamped as the message's producerSub. */
  producerSub: string | null;
  /** Failed firing attempts so far. */
  attempts: number;
  lastError: string | null;
  /** epoch ms */
  createdAt: number;
  /** epoch ms */
  updatedAt: number;
}

/** Identity of a timer. */
export interface TimerKey {
  queue: string;
  timerKey: string;
}

/** A due timer as the firing loop finds it: its key and the tenant it belongs to. */
export interface DueTimer extends TimerKey {
  tenant: string;
}

/** Timer reads and writes; see the module comment. */
export interface TimerStore {
  getTimer(queue: string, timerKey: string): TimerRow | undefined;
  /** A queue's timers with key > `after` (all when undefined), ascending by key, at most `limit`. */
  listTimers(queue: string, after: string | undefined, limit: number): TimerRow[];
  /** Up to `limit` timers with deliverAt ≤ `now`, earliest first (due-time index range). */
  dueTimers(now: number, limit: number): TimerKey[];
  /** The earliest deliverAt of any timer; undefined when there is none (one index seek). */
  nextDueAt(): number | undefined;
  /**
   * Every timer in key order, a page at a time (rows after `after`). A full walk: only for the boot
   * key check, which runs it when a recorded encryption key is missing from the ring.
   */
  scanTimers(after: TimerKey | undefined, limit: number): TimerRow[];

  // ---------------------------------------------------------------- writes (inside Store.run)

  /** Inserts or replaces the timer (queue, timerKey). */
  putTimer(row: TimerRow): void;
  /** Deletes a timer; true when it existed. */
  deleteTimer(queue: string, timerKey: string): boolean;
  /** Records a failed firing: attempts + 1, `error`, and the next attempt at `retryAt` (epoch ms). */
  timerFailed(queue: string, timerKey: string, error: string, retryAt: number, now: number): void;
}
