/**
 * The broker's admin background jobs: wires the activity counters, retention sweep, maintenance modes and
 * Prometheus metrics to one {@link Broker}, and starts and stops their background work.
 * `main.ts` starts it after the broker loaded its state; the HTTP routes reach it with
 * {@link AdminJobs.for}.
 */
import { PromMetrics } from '../../observability/metrics.js';
import { Activity } from '../admin/activity.js';
import type { Broker } from '../broker.js';
import type { CursorMoved } from '../admin/consumer-groups.js';
import { Maintenance } from './maintenance.js';
import { Retention } from './retention.js';

const attached = new WeakMap<Broker, AdminJobs>();

/** Background operator work attached to one broker: activity, retention, maintenance, metrics. */
export class AdminJobs {
  readonly activity: Activity;
  readonly retention: Retention;
  readonly maintenance: Maintenance;
  readonly metrics: PromMetrics;
  /** Tells retention that a partition's consumption point moved. */
  readonly cursorMoved: CursorMoved;
  private started = false;

  private constructor(readonly broker: Broker) {
    this.activity = new Activity(broker.engine);
    this.retention = new Retention(broker, this.activity);
    this.maintenance = new Maintenance(broker, this.activity);
    this.metrics = new PromMetrics(broker, this.activity, this.maintenance, this.retention);
    this.cursorMoved = (p) => this.retention.touched(p);
    const engine = broker.engine;
    const retention = this.retention;
    broker.observers.push(this.activity, {
      popped(req, claimed) { if (req.autoAck) for (const c of claimed) retention.touched(c.partition); },
      acked(inputs) {
        for (const a of new Set(inputs.map((i) => i.partitionId))) {
          const p = engine.partitionsById.get(a);
          if (p) retention.touched(p);
        }
      },
      transacted(req, result) {
        if (!result.success) return;
        for (const op of req.operations) {
          if (op.type !== 'ack') continue;
          const p = engine.partitionsById.get(op.ack.partitionId);
          if (p) retention.touched(p);
        }
      },
    });
  }

  /** The admin jobs of `broker` (created on first use, not started). */
  static for(broker: Broker): AdminJobs {
    let jobs = attached.get(broker);
    if (!jobs) attached.set(broker, (jobs = new AdminJobs(broker)));
    return jobs;
  }

  /** Seeds counters from the store, resumes an interrupted spool replay, starts the retention sweep. */
  start(settings: ReadonlyMap<string, string> = this.broker.store.loadSnapshot().settings): void {
    if (this.started) return;
    this.started = true;
    const store = this.broker.store;
    this.activity.seedDlqDepth(store.ops.dlqDepthByQueue());
    this.maintenance.start(settings);
    this.retention.start();
  }

  /** Stops background work (before the broker closes its store). */
  async stop(): Promise<void> {
    await this.retention.stop();
    await this.maintenance.stop();
    this.metrics.stop();
  }
}
