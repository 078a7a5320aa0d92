/**
 * Prunes expired KV rows (docs/http-api.md#kv). Expired rows are already invisible to reads; this only
 * reclaims space. One entry in the broker's scheduler, due at the earliest expiry the store holds
 * (an index read) and moved earlier when a write expires sooner; each run deletes what is due, in bounded units of
 * work, so its cost follows what expired, never the number of keys.
 */
import type { Clock } from '../../util/clock.js';
import type { SchedulerLane } from '../../util/scheduler.js';
import type { Broker } from '../broker.js';

/** Rows deleted per unit of work. */
const BATCH = 1000;
/** On several nodes, longest between two looks at the earliest expiry, ms. */
const CLUSTER_POLL_MS = 1_000;
/** The sweep's one key in its scheduler lane. */
const SWEEP = 'sweep';

/** The expiry sweep of one broker's KV rows (see the module comment). */
export class KvSweeper {
  private readonly next: SchedulerLane<string>;
  private readonly clock: Clock;
  private running = false;
  private stopped = false;
  /** Rows pruned since start (for tests and metrics). */
  pruned = 0;

  constructor(private readonly broker: Broker) {
    this.next = broker.scheduler.lane<string>('kv-ttl');
    this.clock = broker.clock;
  }

  /** Arms the timer for the earliest stored expiry. */
  async start(): Promise<void> {
    this.stopped = false;
    const t = await this.broker.backend.kv.nextExpiry();
    if (this.stopped) return;
    if (t === undefined) {
      if (this.broker.storage.cluster) this.due(this.clock.now() + CLUSTER_POLL_MS);
      return;
    }
    // already due (the clock may have moved on while the read ran): sweep at once
    if (t <= this.clock.now()) await this.sweep();
    else this.due(t);
  }

  /** A row now expires at `at` (epoch ms): make sure the sweep runs by then. */
  due(at: number): void {
    if (this.stopped || this.running) return;
    const armed = this.next.dueAt(SWEEP);
    if (armed !== undefined && armed <= at) return;
    this.next.schedule(SWEEP, at, () => void this.sweep());
  }

  /** Deletes every row due now, then re-arms for the next expiry. */
  async sweep(): Promise<void> {
    this.next.cancel(SWEEP);
    if (this.stopped || this.running) return;
    // One node of a cluster prunes (docs/cluster.md#singletons); every node looks again each
    // CLUSTER_POLL_MS, since expiries written through other nodes are not announced here.
    const cluster = this.broker.storage.cluster;
    if (cluster && !cluster.holds('kv-expiry')) {
      this.due(this.clock.now() + CLUSTER_POLL_MS);
      return;
    }
    this.running = true;
    let retryAt = 10;
    try {
      for (let first = true; ; first = false) {
        const n = await this.broker.backend.kv.pruneExpired(this.clock.now(), BATCH);
        if (first && n > 0) cluster?.ran('kv-expiry');
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
    try {
      const next = await this.broker.backend.kv.nextExpiry();
      if (next !== undefined) this.due(Math.max(next, this.clock.now() + retryAt));
    } catch (e) {
      // The store is unreachable: look again in a second (an unhandled rejection here would end the process).
      if (!this.stopped) this.broker.log.warn({ err: e }, 'kv expiry sweep cannot read the next expiry; retrying in 1 s');
      this.due(this.clock.now() + 1000);
    }
    if (cluster) this.due(this.clock.now() + CLUSTER_POLL_MS);
  }

  /** Stops the timer (before the store closes). */
  stop(): void {
    this.stopped = true;
    this.next.cancel(SWEEP);
  }
}
