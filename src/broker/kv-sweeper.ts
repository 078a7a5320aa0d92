/**
 * Prunes expired KV rows (spec §5.1). Expired rows are already invisible to reads; this only
 * reclaims space. One timer, armed for the earliest expiry the store holds (an index read) and
 * re-armed earlier when a write expires sooner; each run deletes what is due, in bounded units of
 * work, so its cost follows what expired, never the number of keys.
 */
import type { Broker } from './broker.js';

/** Rows deleted per unit of work. */
const BATCH = 1000;
/** Longest single wait (setTimeout's range, and a periodic re-read of the index). */
const MAX_WAIT_MS = 60 * 60 * 1000;

/** The expiry sweep of one broker's KV rows (see the module comment). */
export class KvSweeper {
  private timer: NodeJS.Timeout | undefined;
  private armedAt: number | undefined;
  private running = false;
  private stopped = false;
  /** Rows pruned since start (for tests and metrics). */
  pruned = 0;

  constructor(private readonly broker: Broker) {}

  /** Arms the timer for the earliest stored expiry. */
  start(): void {
    this.stopped = false;
    const t = this.broker.store.kv.nextExpiry();
    if (t !== undefined) this.due(t);
  }

  /** A row now expires at `at` (epoch ms): make sure the sweep runs by then. */
  due(at: number): void {
    if (this.stopped || this.running) return;
    if (this.armedAt !== undefined && this.armedAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedAt = at;
    const wait = Math.min(Math.max(0, at - Date.now()) + 1, MAX_WAIT_MS);
    this.timer = setTimeout(() => void this.sweep(), wait);
    this.timer.unref();
  }

  /** Deletes every row due now, then re-arms for the next expiry. */
  async sweep(): Promise<void> {
    this.timer = undefined;
    this.armedAt = undefined;
    if (this.stopped || this.running) return;
    this.running = true;
    let retryAt = 10;
    try {
      for (;;) {
        const n = await this.broker.runUnit(() => this.broker.store.kv.pruneExpired(Date.now(), BATCH));
        this.pruned += n;
        if (n < BATCH || this.stopped) break;
      }
    } catch (e) {
      if (!this.stopped) this.broker.log.warn({ err: e }, 'kv expiry sweep failed; retrying in 1 s');
      retryAt = 1000;
    } finally {
      this.running = false;
    }
    if (this.stopped) return;
    const next = this.broker.store.kv.nextExpiry();
    if (next !== undefined) this.due(Math.max(next, Date.now() + retryAt));
  }

  /** Stops the timer (before the store closes). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
