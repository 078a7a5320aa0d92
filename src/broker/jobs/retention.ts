/**
 * Retention and eviction (docs/http-api.md#retention, docs/storage.md#costs-scale-with-work): a background sweep every
 * `RETENTION_INTERVAL` ms whose cost grows with the work to do, never with the number of
 * partitions.
 *
 * - Age rules (`retentionEnabled` + `retentionSeconds`; `maxWaitTimeSeconds`): the oldest rows of
 *   the queue come from the (queue, created_at) index, so an idle sweep is one empty index probe
 *   per queue with such a rule. Every row read is removed.
 * - Completed rule (`retentionEnabled` + `completedRetentionSeconds`): only partitions whose
 *   consumption point moved (an ack, an auto-ack pop, a transaction, a seek or a group delete told
 *   us) are visited; a partition whose consumed messages are still too young is re-visited when the
 *   oldest of them comes of age (a due-time heap), not on every sweep.
 *
 * A partition is a log: removal always cuts a prefix, moving `partitions.first_offset` (and the
 * engine's `firstOffset`) up. Nothing unconsumed goes silently: every removal is counted per
 * (queue, reason, consumed) and each sweep that removed unconsumed messages logs them per queue.
 */
import type { Activity } from '../admin/activity.js';
import type { Broker } from '../broker.js';
import type { Engine } from '../../storage/sqlite/engine.js';
import { minGroupPosition } from '../messaging/positions.js';
import type { PartitionState, QueueState } from '../../storage/sqlite/state.js';
import { MinHeap } from '../../util/heap.js';
import type { PruneCut } from '../../storage/contract.js';

/** Units of work per sweep for one rule on one queue (the rest waits for the next sweep). */
const MAX_STEPS = 50;

export type RetentionReason = 'retention' | 'max_wait' | 'completed';

/** What one sweep did (bench and tests read it). */
export interface SweepReport {
  startedAt: number;
  durationMs: number;
  queuesChecked: number;
  partitionsVisited: number;
  removed: number;
  removedUnconsumed: number;
}

function completedRuleOn(q: QueueState): boolean {
  return q.options.retentionEnabled && q.options.completedRetentionSeconds > 0;
}

/** The retention and eviction sweep (see the module comment); cost follows what is due. */
export class Retention {
  /** Partitions whose consumed prefix may be removable now. */
  private readonly dirty = new Set<number>();
  /** Partitions with consumed messages not old enough yet, by the time the oldest comes of age. */
  private readonly due = new MinHeap<number>();
  /** Queues whose partitions were seeded into `dirty` since the completed rule was switched on. */
  private readonly seeded = new Set<number>();
  private started = false;
  private running: Promise<SweepReport> | undefined;
  /** The last sweep's report. */
  last: SweepReport | undefined;

  constructor(private readonly broker: Broker, private readonly activity: Activity) {}

  private get engine(): Engine {
    return this.broker.engine;
  }

  /** Starts the periodic sweep: every `RETENTION_INTERVAL` ms on the broker's clock and scheduler. */
  start(): void {
    this.started = true;
    this.scheduleNext();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.engine.scheduler.lane<string>('retention').cancel('sweep');
    await this.running?.catch(() => undefined);
  }

  /** Arms the next periodic sweep one interval from now (a fixed cadence, like setInterval). */
  private scheduleNext(): void {
    if (!this.started) return;
    const lane = this.engine.scheduler.lane<string>('retention');
    lane.schedule('sweep', this.engine.clock.now() + this.broker.config.retentionIntervalMs, () => {
      this.scheduleNext();
      void this.sweep().catch((e: unknown) => this.broker.log.error({ err: e }, 'retention sweep failed'));
    });
  }

  /** The consumption point of `p` may have moved: visit it on the next sweep (O(1)). */
  touched(p: PartitionState): void {
    if (completedRuleOn(p.queue)) this.dirty.add(p.pk);
  }

  /** Runs one sweep now (waits for a running one instead of overlapping). */
  sweep(): Promise<SweepReport> {
    if (this.running) return this.running;
    this.running = this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<SweepReport> {
    const t0 = performance.now();
    const now = this.engine.clock.now();
    const report: SweepReport = { startedAt: now, durationMs: 0, queuesChecked: 0, partitionsVisited: 0, removed: 0, removedUnconsumed: 0 };
    const perQueue = new Map<string, Map<RetentionReason, { removed: number; unconsumed: number }>>();
    const note = (q: QueueState, reason: RetentionReason, removed: number, unconsumed: number) => {
      let m = perQueue.get(q.name);
      if (!m) perQueue.set(q.name, (m = new Map<RetentionReason, { removed: number; unconsumed: number }>()));
      const e = m.get(reason) ?? { removed: 0, unconsumed: 0 };
      e.removed += removed;
      e.unconsumed += unconsumed;
      m.set(reason, e);
      report.removed += removed;
      report.removedUnconsumed += unconsumed;
      if (unconsumed > 0) this.activity.retentionRemoved(q.name, reason, false, unconsumed, now);
      if (removed - unconsumed > 0) this.activity.retentionRemoved(q.name, reason, true, removed - unconsumed, now);
    };

    for (const q of [...this.engine.queues.values()]) {
      const o = q.options;
      const cutoffs: { at: number; reason: RetentionReason }[] = [];
      if (o.retentionEnabled && o.retentionSeconds > 0) cutoffs.push({ at: now - o.retentionSeconds * 1000, reason: 'retention' });
      if (o.maxWaitTimeSeconds > 0) cutoffs.push({ at: now - o.maxWaitTimeSeconds * 1000, reason: 'max_wait' });
      if (cutoffs.length > 0) {
        report.queuesChecked++;
        const rule = cutoffs.reduce((a, b) => (b.at > a.at ? b : a));
        await this.sweepByAge(q, rule.at, rule.reason, note, report);
      }
      if (completedRuleOn(q)) {
        if (!this.seeded.has(q.pk)) this.seed(q); // one-time O(partitions of q) when the rule is switched on
      } else {
        this.seeded.delete(q.pk);
      }
    }
    for (const pk of this.due.popDue(now)) this.dirty.add(pk);
    if (this.dirty.size > 0) await this.sweepCompleted(now, note, report);

    for (const [queue, reasons] of perQueue) {
      for (const [reason, e] of reasons) {
        if (e.unconsumed > 0) {
          this.broker.log.warn({ queue, reason, removed: e.removed, unconsumed: e.unconsumed }, 'retention removed unconsumed messages');
        } else {
          this.broker.log.info({ queue, reason, removed: e.removed }, 'retention removed consumed messages');
        }
      }
    }
    report.durationMs = performance.now() - t0;
    this.last = report;
    return report;
  }

  /**
   * Seeds the completed rule for `q` (at boot or when the rule is switched on): only partitions
   * where some group's cursor moved past the head can have a prefix consumed by every group, so
   * the cost is O(cursors written), not O(partitions).
   */
  private seed(q: QueueState): void {
    this.seeded.add(q.pk);
    for (const g of q.groups.values()) {
      for (const [pk, c] of g.cursors) {
        const p = this.engine.partitionsByPk.get(pk);
        if (p && c.materialized && c.committedOffset > p.firstOffset) this.dirty.add(pk);
      }
    }
  }

  /**
   * Removes the prefix `[firstOffset, end)` of each partition in one operation of the contract
   * (`admin.prune`); what it removed that some group had not consumed yet is counted as unconsumed.
   */
  private async cut(q: QueueState, ends: Map<PartitionState, number>, reason: RetentionReason, note: (q: QueueState, r: RetentionReason, removed: number, unconsumed: number) => void): Promise<void> {
    const engine = this.engine;
    const unconsumedBelow = new Map<string, { end: number; consumedUpTo: number }>();
    const cuts: PruneCut[] = [];
    for (const [p, end] of ends) {
      if (!engine.partitionsByPk.has(p.pk)) continue;
      cuts.push({ partition: p.name, end });
      unconsumedBelow.set(p.name, { end: Math.min(end, p.headOffset), consumedUpTo: minGroupPosition(engine, p) ?? p.firstOffset });
    }
    if (cuts.length === 0) return;
    const done = await this.broker.backend.admin.prune({ tenant: q.tenant, queue: q.name }, cuts);
    for (const e of done) {
      const u = unconsumedBelow.get(e.partition)!;
      const unconsumed = Math.max(0, u.end - Math.max(e.firstOffsetBefore, u.consumedUpTo));
      note(q, reason, e.removed, Math.min(unconsumed, e.removed));
    }
  }

  private async sweepByAge(q: QueueState, cutoff: number, reason: RetentionReason, note: Parameters<Retention['cut']>[3], report: SweepReport): Promise<void> {
    const batch = this.broker.config.retentionBatchSize;
    for (let step = 0; step < MAX_STEPS; step++) {
      if (!this.engine.queues.has(q.name)) return;
      const rows = this.engine.store.ops.messagesOlderThan(q.pk, cutoff, batch);
      if (rows.length === 0) return;
      const ends = new Map<PartitionState, number>();
      for (const r of rows) {
        const p = this.engine.partitionsByPk.get(r.partitionPk);
        if (!p) continue;
        ends.set(p, Math.max(ends.get(p) ?? 0, r.offset + 1)); // created_at is monotone per partition: a prefix
      }
      report.partitionsVisited += ends.size;
      await this.cut(q, ends, reason, note);
      if (rows.length < batch) return;
    }
  }

  private async sweepCompleted(now: number, note: Parameters<Retention['cut']>[3], report: SweepReport): Promise<void> {
    const engine = this.engine;
    const batch = this.broker.config.retentionBatchSize;
    const work = [...this.dirty];
    this.dirty.clear();
    const byQueue = new Map<QueueState, Map<PartitionState, number>>();
    let rows = 0;
    for (const pk of work) {
      const p = engine.partitionsByPk.get(pk);
      if (!p || !completedRuleOn(p.queue)) continue;
      report.partitionsVisited++;
      if (rows >= batch * MAX_STEPS) {
        this.dirty.add(pk); // next sweep
        continue;
      }
      const consumed = minGroupPosition(engine, p);
      if (consumed === undefined || consumed <= p.firstOffset) continue;
      const keepMs = p.queue.options.completedRetentionSeconds * 1000;
      const youngFrom = engine.store.firstOffsetAfter(p.pk, p.firstOffset, now - keepMs - 1) ?? p.headOffset;
      const end = Math.min(consumed, youngFrom, p.firstOffset + batch);
      if (end > p.firstOffset) {
        let m = byQueue.get(p.queue);
        if (!m) byQueue.set(p.queue, (m = new Map<PartitionState, number>()));
        m.set(p, end);
        rows += end - p.firstOffset;
      }
      if (end < consumed) {
        if (end === p.firstOffset + batch && end < youngFrom) {
          this.dirty.add(pk); // more than one batch to remove: continue next sweep
        } else {
          const at = engine.store.ops.createdAtFrom(p.pk, end);
          if (at !== undefined) this.due.push(at + keepMs + 1, pk);
        }
      }
    }
    for (const [q, ends] of byQueue) {
      const entries = [...ends];
      for (let i = 0; i < entries.length; i += batch) await this.cut(q, new Map(entries.slice(i, i + batch)), 'completed', note);
    }
  }
}
