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
 *   oldest of them comes of age (a due-time heap), not on every sweep. Several nodes on one
 *   database (docs/cluster.md#singletons): the sweeping node reads from the store which partitions
 *   have a consumed prefix still held, every sweep, because acks made through other nodes tell it nothing.
 *
 * A partition is a log: removal always cuts a prefix, moving its first offset up. What to cut is
 * decided on the contract's retention reads (`admin.queueOptions`, `agedPrefixes`,
 * `retentionPartitions`, `firstAfter`) and cut with `admin.prune`. Nothing unconsumed goes silently: every removal is counted per
 * (queue, reason, consumed) and each sweep that removed unconsumed messages logs them per queue.
 */
import type { Activity } from '../admin/activity.js';
import { DEFAULT_TENANT } from '../../storage/contract.js';
import type { Broker } from '../broker.js';
import type { QueueOptions } from '../../model/options.js';
import { MinHeap } from '../../util/heap.js';
import type { PruneCut, QueueKey, RetentionPartition } from '../../storage/contract.js';
import { queueSlot } from '../../model/tenancy.js';

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

function completedRuleOn(o: QueueOptions | undefined): o is QueueOptions {
  return o !== undefined && o.retentionEnabled && o.completedRetentionSeconds > 0;
}

/** A queue's key as one string (tenant and name). */
function slot(q: QueueKey): string {
  return `${q.tenant}\u0000${q.queue}`;
}

type Note = (q: QueueKey, reason: RetentionReason, removed: number, unconsumed: number) => void;

/** The retention and eviction sweep (see the module comment); cost follows what is due. */
export class Retention {
  /** Partitions (public ids) whose consumed prefix may be removable now. */
  private readonly dirty = new Set<string>();
  /** Partitions touched by name (queue, partition of the default tenant), resolved to ids at the next sweep. */
  private readonly dirtyNames = new Map<string, { queue: string; partition: string }>();
  /** Partitions with consumed messages not old enough yet, by the time the oldest comes of age. */
  private readonly due = new MinHeap<string>();
  /** Queues (tenant and name) whose partitions were seeded into `dirty` since the completed rule was switched on. */
  private readonly seeded = new Set<string>();
  private started = false;
  private running: Promise<SweepReport> | undefined;
  /** The last sweep's report. */
  last: SweepReport | undefined;

  constructor(private readonly broker: Broker, private readonly activity: Activity) {}

  /** Starts the periodic sweep: every `RETENTION_INTERVAL` ms on the broker's clock and scheduler. */
  start(): void {
    this.started = true;
    this.scheduleNext();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.broker.scheduler.lane<string>('retention').cancel('sweep');
    await this.running?.catch(() => undefined);
  }

  /** Arms the next periodic sweep one interval from now (a fixed cadence, like setInterval). */
  private scheduleNext(): void {
    if (!this.started) return;
    const lane = this.broker.scheduler.lane<string>('retention');
    lane.schedule('sweep', this.broker.clock.now() + this.broker.config.retentionIntervalMs, () => {
      this.scheduleNext();
      // One node of a cluster sweeps per period (docs/cluster.md#singletons).
      const cluster = this.broker.storage.cluster;
      if (cluster && !cluster.holds('retention')) return;
      cluster?.ran('retention');
      void this.sweep().catch((e: unknown) => this.broker.log.error({ err: e }, 'retention sweep failed'));
    });
  }

  /** The consumption point of the partition with public id `partitionId` may have moved: visit it on the next sweep (O(1)). */
  touched(partitionId: string): void {
    this.dirty.add(partitionId);
  }

  /** Like {@link touched}, for a partition known by its queue and partition names (resolved on the next sweep). */
  touchedByName(queue: string, partition: string): void {
    this.dirtyNames.set(`${queue}\u0000${partition}`, { queue, partition });
  }

  /** Runs one sweep now (waits for a running one instead of overlapping). */
  sweep(): Promise<SweepReport> {
    if (this.running) return this.running;
    this.running = this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<SweepReport> {
    const t0 = performance.now();
    const now = this.broker.clock.now();
    const report: SweepReport = { startedAt: now, durationMs: 0, queuesChecked: 0, partitionsVisited: 0, removed: 0, removedUnconsumed: 0 };
    const perQueue = new Map<string, Map<RetentionReason, { removed: number; unconsumed: number }>>();
    const note: Note = (q, reason, removed, unconsumed) => {
      let m = perQueue.get(q.queue);
      if (!m) perQueue.set(q.queue, (m = new Map<RetentionReason, { removed: number; unconsumed: number }>()));
      const e = m.get(reason) ?? { removed: 0, unconsumed: 0 };
      e.removed += removed;
      e.unconsumed += unconsumed;
      m.set(reason, e);
      report.removed += removed;
      report.removedUnconsumed += unconsumed;
      if (unconsumed > 0) this.activity.retentionRemoved(queueSlot(q.tenant, q.queue), reason, false, unconsumed, now);
      if (removed - unconsumed > 0) this.activity.retentionRemoved(queueSlot(q.tenant, q.queue), reason, true, removed - unconsumed, now);
    };

    const admin = this.broker.backend.admin;
    const rules = new Map<string, QueueOptions>();
    for (const { queue: q, options: o } of await admin.queueOptions()) {
      rules.set(slot(q), o);
      const cutoffs: { at: number; reason: RetentionReason }[] = [];
      if (o.retentionEnabled && o.retentionSeconds > 0) cutoffs.push({ at: now - o.retentionSeconds * 1000, reason: 'retention' });
      if (o.maxWaitTimeSeconds > 0) cutoffs.push({ at: now - o.maxWaitTimeSeconds * 1000, reason: 'max_wait' });
      if (cutoffs.length > 0) {
        report.queuesChecked++;
        const rule = cutoffs.reduce((a, b) => (b.at > a.at ? b : a));
        await this.sweepByAge(q, rule.at, rule.reason, note, report);
      }
      if (completedRuleOn(o)) {
        // One-time O(cursors of q) when the rule is switched on. Several nodes on one database: every
        // sweep, since the acks made through the other nodes reach no observer here (and the job may
        // have moved here since they were made); the cost is the partitions with a consumed prefix still held.
        if (!this.seeded.has(slot(q)) || this.broker.storage.cluster) await this.seed(q);
      } else {
        this.seeded.delete(slot(q));
      }
    }
    for (const id of this.due.popDue(now)) this.dirty.add(id);
    const named = [...this.dirtyNames.values()];
    this.dirtyNames.clear();
    for (const n of named) {
      const p = await this.broker.backend.readPartition({ tenant: DEFAULT_TENANT, ...n });
      if (p) this.dirty.add(p.partitionId);
    }
    if (this.dirty.size > 0) await this.sweepCompleted(now, rules, note, report);

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
   * where some group's cursor moved past the first offset can have a prefix consumed by every
   * group, so the cost is O(cursors written), not O(partitions).
   */
  private async seed(q: QueueKey): Promise<void> {
    this.seeded.add(slot(q));
    for (const p of await this.broker.backend.admin.retentionPartitions({ consumedOn: q })) this.dirty.add(p.partitionId);
  }

  /**
   * Removes the prefix `[firstOffset, end)` of each partition in one operation of the contract
   * (`admin.prune`); what it removed that some group had not consumed yet is counted as unconsumed.
   */
  private async cut(q: QueueKey, ends: readonly { partition: RetentionPartition; end: number }[], reason: RetentionReason, note: Note): Promise<void> {
    const unconsumedBelow = new Map<string, { end: number; consumedUpTo: number }>();
    const cuts: PruneCut[] = [];
    for (const { partition: p, end } of ends) {
      cuts.push({ partition: p.partition, end });
      unconsumedBelow.set(p.partition, { end: Math.min(end, p.headOffset), consumedUpTo: p.consumedUpTo ?? p.firstOffset });
    }
    if (cuts.length === 0) return;
    const done = await this.broker.backend.admin.prune(q, cuts);
    for (const e of done) {
      const u = unconsumedBelow.get(e.partition)!;
      const unconsumed = Math.max(0, u.end - Math.max(e.firstOffsetBefore, u.consumedUpTo));
      note(q, reason, e.removed, Math.min(unconsumed, e.removed));
    }
  }

  private async sweepByAge(q: QueueKey, cutoff: number, reason: RetentionReason, note: Note, report: SweepReport): Promise<void> {
    const batch = this.broker.config.retentionBatchSize;
    for (let step = 0; step < MAX_STEPS; step++) {
      const { prefixes, rows } = await this.broker.backend.admin.agedPrefixes(q, cutoff, batch);
      if (rows === 0) return;
      report.partitionsVisited += prefixes.length;
      await this.cut(q, prefixes, reason, note);
      if (rows < batch) return;
    }
  }

  private async sweepCompleted(now: number, rules: ReadonlyMap<string, QueueOptions>, note: Note, report: SweepReport): Promise<void> {
    const admin = this.broker.backend.admin;
    const batch = this.broker.config.retentionBatchSize;
    const work = [...this.dirty];
    this.dirty.clear();
    const byQueue = new Map<string, { queue: QueueKey; ends: { partition: RetentionPartition; end: number }[] }>();
    let rows = 0;
    for (const p of await admin.retentionPartitions({ partitionIds: work })) {
      const o = rules.get(slot(p.queue));
      if (!completedRuleOn(o)) continue;
      report.partitionsVisited++;
      if (rows >= batch * MAX_STEPS) {
        this.dirty.add(p.partitionId); // next sweep
        continue;
      }
      const consumed = p.consumedUpTo;
      if (consumed === undefined || consumed <= p.firstOffset) continue;
      const keepMs = o.completedRetentionSeconds * 1000;
      const key = { ...p.queue, partition: p.partition };
      const young = await admin.firstAfter(key, p.firstOffset, now - keepMs - 1);
      const youngFrom = young?.offset ?? p.headOffset;
      const end = Math.min(consumed, youngFrom, p.firstOffset + batch);
      if (end > p.firstOffset) {
        let m = byQueue.get(slot(p.queue));
        if (!m) byQueue.set(slot(p.queue), (m = { queue: p.queue, ends: [] }));
        m.ends.push({ partition: p, end });
        rows += end - p.firstOffset;
      }
      if (end < consumed) {
        if (end === p.firstOffset + batch && end < youngFrom) {
          this.dirty.add(p.partitionId); // more than one batch to remove: continue next sweep
        } else if (young) {
          this.due.push(young.createdAt + keepMs + 1, p.partitionId); // end is youngFrom: its message comes of age then
        }
      }
    }
    for (const { queue, ends } of byQueue.values()) {
      for (let i = 0; i < ends.length; i += batch) await this.cut(queue, ends.slice(i, i + batch), 'completed', note);
    }
  }
}
