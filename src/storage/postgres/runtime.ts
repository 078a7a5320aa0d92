/**
 * The PostgreSQL backend as a {@link StorageRuntime} (src/storage/runtime.ts,
 * docs/storage.md#postgresql-backend): the backend is opened by the caller (pool, migrations,
 * LISTEN); boot state is read here once; the scheduler is this process's own (due times of its
 * parked pops, timers, sweeps), on the injected clock.
 */
import type { Logger } from 'pino';
import type { PayloadCodec } from '../../model/codec.js';
import type { Clock } from '../../util/clock.js';
import { Scheduler } from '../../util/scheduler.js';
import { DEFAULT_TENANT } from '../contract.js';
import type { LogReadStore } from '../log-read.js';
import type { BootState, StorageRuntime } from '../runtime.js';
import type { PgBackend } from './backend.js';
import { PgMembership, type MembershipOptions } from './membership.js';

/** Longest single timer the scheduler arms, ms (it re-arms beyond). */
const SCHEDULER_MAX_DELAY_MS = 60_000;

/** The PostgreSQL runtime (see the module comment). */
export class PgRuntime implements StorageRuntime {
  readonly kind = 'postgres' as const;
  readonly scheduler: Scheduler;
  readonly logs: LogReadStore;
  /** Membership and singleton leases (membership.ts); set by {@link open} when it joins. */
  cluster: PgMembership | undefined;
  private closed = false;

  private constructor(readonly backend: PgBackend, readonly boot: BootState, readonly recheckMs: number, codec: PayloadCodec, clock: Clock, log: Logger) {
    this.scheduler = new Scheduler(clock, {
      maxDelayMs: SCHEDULER_MAX_DELAY_MS,
      onError: (err, lane) => log.error({ err, lane }, 'scheduled callback failed'),
    });
    this.logs = backend.logReads(codec);
  }

  /**
   * Reads the boot state (settings, dead-letter depths of the default tenant) from `backend`.
   * @throws the driver's error when the database does not answer
   */
  /**
   * @param recheckMs longest a parked pop waits before it claims again, ms (`QUEEN_PG_RECHECK_MS`)
   * @param membership joins the cluster's membership table with these options (docs/cluster.md#membership); omitted, the node stays out of it
   * @throws DuplicateServerId (membership.ts) when a live node already has the server id
   */
  static async open(backend: PgBackend, codec: PayloadCodec, clock: Clock, log: Logger, recheckMs = 1000, membership?: MembershipOptions): Promise<PgRuntime> {
    const [settings, dlqDepth, queues] = await Promise.all([backend.views.settings(), backend.views.dlqDepth(DEFAULT_TENANT), backend.admin.queues(DEFAULT_TENANT)]);
    const rt = new PgRuntime(backend, { settings, dlqDepth, queueNames: queues.map((q) => q.queue) }, recheckMs, codec, clock, log);
    if (membership) rt.cluster = await PgMembership.join(backend.db, membership, rt.scheduler, log);
    return rt;
  }

  stopAccepting(): void {
    // Requests still running finish; the front doors stopped taking new ones.
  }

  /** Waits until no pooled connection is checked out, or `graceMs` passed (wall time). */
  async drain(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    while (this.backend.busyConnections > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  /** False once closed, or while the database has not answered two heartbeats in a row (docs/cluster.md#failures). */
  healthy(): boolean {
    return !this.closed && (this.cluster === undefined || this.cluster.failures < 2);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.cluster?.leave();
    this.scheduler.clear();
    await this.backend.close();
  }
}
