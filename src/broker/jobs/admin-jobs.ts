/**
 * The broker's admin background jobs: wires the activity counters, retention sweep, maintenance modes and
 * Prometheus metrics to one {@link Broker}, and starts and stops their background work.
 * Built once by `Services` (src/broker/services.ts), which starts it after the broker loaded its
 * state and hands it to the HTTP routes.
 */
import { PromMetrics } from '../../observability/metrics.js';
import { Activity } from '../admin/activity.js';
import { AdminViews } from '../admin/views.js';
import type { Broker } from '../broker.js';
import type { CursorMoved } from '../admin/consumer-groups.js';
import { Maintenance } from './maintenance.js';
import { Retention } from './retention.js';
import type { BootState } from '../../storage/runtime.js';

/** Background operator work attached to one broker: activity, retention, maintenance, metrics. */
export class AdminJobs {
  readonly activity: Activity;
  readonly retention: Retention;
  readonly maintenance: Maintenance;
  readonly metrics: PromMetrics;
  /** The read-only operator views (resources, groups, status, messages, dead letters). */
  readonly views: AdminViews;
  /** Tells retention that a partition's consumption point moved. */
  readonly cursorMoved: CursorMoved;
  private started = false;

  /** Wires the jobs to `broker` (as an observer); nothing runs until {@link start}. */
  constructor(readonly broker: Broker) {
    this.activity = new Activity((id) => broker.queueOfPartition(id));
    this.retention = new Retention(broker, this.activity);
    this.maintenance = new Maintenance(broker, this.activity);
    this.metrics = new PromMetrics(broker, this.activity, this.maintenance, this.retention);
    this.views = new AdminViews(broker, this.activity);
    this.cursorMoved = (queue, partition) => this.retention.touchedByName(queue, partition);
    const retention = this.retention;
    broker.observers.push(this.activity, {
      popped(req, claimed) {
        if (req.autoAck) for (const c of claimed) retention.touched(c.partitionId);
      },
      acked(inputs) {
        for (const a of inputs) retention.touched(a.partitionId);
      },
      transacted(req, result) {
        if (!result.success) return;
        for (const op of req.operations) if (op.type === 'ack') retention.touched(op.ack.partitionId);
      },
    });
  }

  /** Seeds counters from the boot state, resumes an interrupted spool replay, starts the retention sweep. */
  start(boot: BootState = this.broker.storage.boot): void {
    if (this.started) return;
    this.started = true;
    this.activity.seedDlqDepth(boot.dlqDepth);
    this.maintenance.start(boot.settings);
    this.retention.start();
  }

  /** Stops background work (before the broker closes its store). */
  async stop(): Promise<void> {
    await this.retention.stop();
    await this.maintenance.stop();
    this.metrics.stop();
  }
}
