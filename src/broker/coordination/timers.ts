/**
 * Scheduled messages (docs/http-api.md#timers): the operations the HTTP routes call, and the firing
 * loop. The loop keeps ONE entry in the broker's scheduler for the earliest deliverAt in the store's due-time index;
 * when it goes off it reads only what is due (an index range with a limit), fires each timer in
 * its own unit of work (they share the group commit) and re-arms for the next due time. Nothing
 * scans the pending timers, and restarts need no rebuild: `start()` arms for whatever is due,
 * including timers that fell due while the broker was down.
 *
 * Every timer belongs to a tenant (docs/proxy.md#tenancy): operations, peeks and listings name
 * it, the due-time index yields it with each due timer, and firing pushes into that tenant's queue.
 *
 * Built once by `Services` (src/broker/services.ts), which starts and stops it and hands it to
 * the routes.
 */
import { isQueenError, QueenError } from '../../errors.js';
import { DEFAULT_TENANT } from '../../storage/contract.js';
import type { TimerRow } from '../../storage/timers.js';
import type { SchedulerLane } from '../../util/scheduler.js';
import type { Broker } from '../broker.js';
import { checkTimerOps, decideTimerOps, timerFiring, timerView, type TimerOp, type TimerResult, type TimerView } from './timer-ops.js';
import type { PushResult } from '../messaging/push.js';

/** Timers fired per wake-up; more due ones are fired by an immediate next round. */
const FIRE_BATCH = 256;
/** The one key of this loop in its scheduler lane. */
const NEXT = 'next';
/**
 * Pause (ms) before the next round while push maintenance diverts pushes (due timers wait rather
 * than overtake the spool) or after a failure could not even be recorded (no hot loop).
 */
const RETRY_LATER_MS = 1_000;
/** On several nodes, longest the loop goes without reading the earliest due time again, ms. */
const CLUSTER_POLL_MS = 1_000;
/** Decisions a batch of operations is made on at most (a refused unit means a timer it read changed meanwhile). */
const UNIT_ATTEMPTS = 8;

/** Backoff before retrying a timer whose firing failed: 1 s doubling, at most 60 s. */
function retryDelay(attempts: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.min(attempts, 6));
}

/** The timers of one broker: operations, listings and the firing loop. */
export class Timers {
  /** The next round's due time (the scheduler caps each wait, so far deadlines and clock jumps are re-checked). */
  private readonly next: SchedulerLane<string>;
  private firing: Promise<void> | undefined;
  private started = false;
  private stopped = false;
  /** Lifetime count of messages pushed by timers. */
  fired = 0;

  /** Wires the loop to `broker` (as an observer of committed transactions); nothing fires until {@link start}. */
  constructor(readonly broker: Broker) {
    this.next = broker.scheduler.lane<string>('timers');
    // a committed transaction with a `timers` rider may have scheduled the earliest timer
    broker.observers.push({
      transacted: (req, result) => {
        if (result.success && req.timers && req.timers.length > 0) this.rearm();
      },
    });
  }

  /** Arms the firing timer for the earliest stored deliverAt (timers due during downtime fire now). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.rearm();
  }

  /**
   * Arms for the earliest stored deliverAt (read through the contract); one already due (the
   * clock may have moved on while the read ran) starts a round at once.
   */
  private rearm(): void {
    this.broker.backend.timers.nextDueAt().then((at) => {
      if (at !== undefined && at <= this.broker.clock.now() && this.started && !this.stopped && !this.firing) {
        this.next.cancel(NEXT);
        this.wake();
      } else {
        this.arm(at);
      }
    }, (e: unknown) => this.broker.log.error({ err: e }, 'timer re-arm failed'));
  }

  /** Stops firing and waits for a round in progress (before the broker closes its store). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.next.cancel(NEXT);
    await this.firing;
  }

  /**
   * Checks a batch of operations before any unit of work (names, horizon, payload sizes).
   * @param where the field named in error messages (e.g. `timers` for a transaction's rider)
   * @throws QueenError as {@link apply} does for malformed input
   */
  check(ops: readonly TimerOp[], where?: string): void {
    checkTimerOps(this.broker, ops, where);
  }

  /**
   * Applies a batch of operations all or nothing (docs/http-api.md#timers).
   * @param producerSub the scheduler's JWT `sub` (stamped on the delivered messages)
   * @param tenant the tenant whose timers and queues the operations name
   * @throws QueenError `invalid_request`, `name_too_long`, `timer_horizon_exceeded`, `payload_too_large`,
   *   `encryption_unavailable`
   */
  async apply(ops: TimerOp[], producerSub: string | null, tenant: string = DEFAULT_TENANT): Promise<TimerResult[]> {
    const { clock, backend } = this.broker;
    checkTimerOps(this.broker, ops);
    if (ops.length === 0) return [];
    for (let attempt = 1; ; attempt++) {
      const d = await decideTimerOps(this.broker, backend, ops, producerSub, clock.now(), tenant);
      const unit = await backend.unit(d.ops);
      if (unit.committed) {
        if (d.earliest !== undefined) this.arm(d.earliest);
        return d.results;
      }
      if (attempt >= UNIT_ATTEMPTS) throw new QueenError('storage_error', `timers kept changing under the call (${UNIT_ATTEMPTS} attempts)`);
    }
  }

  /** One of `tenant`'s timers in the wire shape, or undefined. */
  async peek(queue: string, timerKey: string, tenant: string = DEFAULT_TENANT): Promise<TimerView | undefined> {
    const t = await this.broker.backend.timers.get(tenant, queue, timerKey);
    return t ? timerView(this.broker.codec, t, this.broker.clock.now()) : undefined;
  }

  /** A keyset page of `tenant`'s timers on a queue, by key: `{rows, truncated, nextAfter}`. */
  async list(queue: string, after: string | undefined, limit: number, tenant: string = DEFAULT_TENANT): Promise<{ rows: TimerView[]; truncated: boolean; nextAfter: string | null }> {
    const rows: TimerRow[] = await this.broker.backend.timers.list(tenant, queue, after, limit + 1);
    const truncated = rows.length > limit;
    const page = truncated ? rows.slice(0, limit) : rows;
    const now = this.broker.clock.now();
    return {
      rows: page.map((t) => timerView(this.broker.codec, t, now)),
      truncated,
      nextAfter: truncated ? page[page.length - 1]!.timerKey : null,
    };
  }

  /** Keeps the single timer armed for the earliest known deliverAt. */
  private arm(at: number | undefined): void {
    // Several nodes (docs/cluster.md#singletons): timers scheduled through other nodes are not
    // announced here, and the lease may move here, so look again at least every CLUSTER_POLL_MS.
    if (this.broker.storage.cluster) at = Math.min(at ?? Infinity, this.broker.clock.now() + CLUSTER_POLL_MS);
    if (at === undefined || this.stopped || !this.started) return;
    if (this.firing) return; // the round in progress re-reads the next due time when it ends
    const armed = this.next.dueAt(NEXT);
    if (armed !== undefined && at >= armed) return;
    this.next.schedule(NEXT, at, () => this.wake());
  }

  private wake(): void {
    if (this.stopped || this.firing) return;
    this.firing = this.round()
      .catch((e: unknown): 'later' => { this.broker.log.error({ err: e }, 'timer round failed'); return 'later'; })
      .then((again) => {
        this.firing = undefined;
        const now = this.broker.clock.now();
        if (again === 'more') this.arm(now);
        else if (again === 'later') this.arm(now + RETRY_LATER_MS);
        else this.rearm();
      });
  }

  /**
   * Fires one timer as one unit (delete it + append its message), decided again when the timer
   * changed between the read and the unit.
   * @returns the push result, or undefined when the timer was cancelled or rescheduled meanwhile
   */
  private async fire(tenant: string, queue: string, timerKey: string): Promise<PushResult | undefined> {
    const { clock, backend } = this.broker;
    for (let attempt = 1; ; attempt++) {
      const f = await timerFiring(this.broker, backend, tenant, queue, timerKey, clock.now());
      if (!f) return undefined;
      const unit = await backend.unit(f.ops);
      if (unit.committed) return f.answer(unit.results);
      if (attempt >= UNIT_ATTEMPTS) throw new QueenError('storage_error', `timer ${timerKey} kept changing while firing (${UNIT_ATTEMPTS} attempts)`);
    }
  }

  /**
   * Fires what is due now.
   * @returns `more` when a full batch fired (more may be due), `later` to pause (pushes diverted,
   *   or a failure that could not be recorded), `idle` otherwise
   */
  private async round(): Promise<'idle' | 'more' | 'later'> {
    const broker = this.broker;
    const clock = broker.clock;
    // One node of a cluster fires timers at a time (docs/cluster.md#singletons); the others look again later.
    const cluster = broker.storage.cluster;
    if (cluster && !cluster.holds('timers')) return 'idle';
    const now = clock.now();
    const due = await broker.backend.timers.due(now, FIRE_BATCH);
    if (due.length === 0) return 'idle';
    cluster?.ran('timers');
    if (broker.pushesDiverted?.()) return 'later';
    let unrecorded = false;
    const fired: (PushResult & { tenant: string })[] = [];
    await Promise.all(due.map(async ({ tenant, queue, timerKey }) => {
      try {
        const r = await this.fire(tenant, queue, timerKey);
        if (r) fired.push({ ...r, tenant });
      } catch (e) {
        if (this.stopped || (isQueenError(e) && e.code === 'shutting_down')) return;
        const msg = (e as Error)?.message ?? String(e);
        broker.log.warn({ queue, timerKey, err: msg }, 'timer firing failed; retrying later');
        try {
          const t = await broker.backend.timers.get(tenant, queue, timerKey);
          if (t) {
            const at = clock.now();
            await broker.backend.unit([{ op: 'timerFailed', tenant, queue, timerKey, error: msg, retryAt: at + retryDelay(t.attempts), now: at }]);
          }
        } catch (e2) {
          unrecorded = true;
          broker.log.error({ err: e2 }, 'cannot record a failed timer firing');
        }
      }
    }));
    const queued = fired.filter((r) => r.status === 'queued');
    this.fired += queued.length;
    broker.counters.pushMessages += queued.length;
    const byTenant = new Map<string, PushResult[]>();
    for (const { tenant, ...r } of fired) {
      const list = byTenant.get(tenant);
      if (list) list.push(r);
      else byTenant.set(tenant, [r]);
    }
    for (const [tenant, results] of byTenant) {
      for (const o of broker.observers) {
        try { o.pushed?.(results, broker.clock.now(), tenant); } catch (e) { broker.log.error({ err: e }, 'broker observer failed'); }
      }
    }
    if (unrecorded) return 'later';
    return due.length === FIRE_BATCH ? 'more' : 'idle';
  }
}
