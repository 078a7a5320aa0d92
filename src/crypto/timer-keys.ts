/**
 * The boot key check's view of timers: a timer for an encrypted queue holds an envelope until it
 * fires, so the key that sealed it is still in use (a key must not be retired, nor the broker boot
 * without it, while a pending timer needs it).
 */
import type { TimerKey, TimerStore } from '../storage/timers.js';
import { envelopeKeyId } from './envelope.js';

const PAGE = 1000;

/**
 * Adds to `ids` the key ids named by every encrypted timer payload, and returns `ids`.
 * A full walk of the timers: the boot key check runs it only when a recorded key is missing.
 */
export function addTimerKeyIds(timers: TimerStore, ids: Set<string>): Set<string> {
  let after: TimerKey | undefined;
  for (;;) {
    const rows = timers.scanTimers(after, PAGE);
    for (const t of rows) {
      if (!t.encrypted) continue;
      const id = envelopeKeyId(t.payload);
      if (id) ids.add(id);
    }
    if (rows.length < PAGE) return ids;
    const last = rows[rows.length - 1]!;
    after = { queue: last.queue, timerKey: last.timerKey };
  }
}
