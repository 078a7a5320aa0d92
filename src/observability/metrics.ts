/**
 * Prometheus exposition at `/metrics/prometheus` (docs/operations.md#prometheus-series) with prom-client, on a
 * registry of our own. Values are read at scrape time from what the broker maintains as it works
 * (lifetime counters, activity buckets, dead-letter depth, waiters): a scrape never scans the store.
 *
 * Families follow the reference's `queen_*` names where our semantics match; `*_per_minute` are
 * gauges holding the last complete minute. Per-queue series carry `tenant` (the queue's tenant UUID)
 * and `queue`, so two tenants' queues of one name are two series (docs/proxy.md#metrics); they are
 * capped at `QUEEN_METRICS_MAX_QUEUES` queues (default 100, the busiest by last-minute pushes + pops,
 * then the deepest dead-letter queues); the rest are summed under `tenant="",queue="__other__"`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { slotQueue } from '../model/tenancy.js';
import { logOutputStats } from './logger.js';

/** Label value standing for the queues beyond the cap. */
export const OTHER_QUEUES = '__other__';

/*
 * What the exposition reads, stated here so that observability does not import the broker: the
 * broker's own classes (src/broker/broker.ts, activity.ts, maintenance.ts, retention.ts) satisfy
 * these shapes structurally and are passed in by src/broker/jobs/admin-jobs.ts.
 */

/** Lifetime totals read by the `queen_cluster_*_total` counters (counts since boot). */
export interface MetricsCounters {
  readonly pushRequests: number;
  readonly pushMessages: number;
  readonly popRequests: number;
  readonly popMessages: number;
  readonly ackRequests: number;
  readonly ackMessages: number;
  readonly ackFailed: number;
  readonly transactions: number;
  readonly dlqMessages: number;
}

/** The broker state read at scrape time. */
export interface MetricsBroker {
  /** epoch ms */
  readonly startedAt: number;
  readonly config: { readonly metricsMaxQueues: number };
  readonly counters: MetricsCounters;
  readonly popMaintenanceEnabled: boolean;
  healthy(): boolean;
  /** Parked long-poll pops. */
  readonly waiters: { readonly size: number; perQueueCounts(): ReadonlyMap<string, number> };
  /** Slots (`queueSlot` of src/model/tenancy.ts) of the queues this broker knows (only the slots and the count are read). */
  readonly knownQueues: ReadonlySet<string>;
  /** The broker's clock (epoch ms): activity minutes and uptime are read at its instant. */
  readonly clock: { now(): number };
}

/** One minute of a queue's activity (counts; lag in ms). */
export interface MetricsBucket {
  pushRequests: number;
  pushMessages: number;
  popMessages: number;
  popEmpty: number;
  ackCompleted: number;
  ackFailed: number;
  transactions: number;
  lagSum: number;
  lagCount: number;
  lagMax: number;
}

/** Per-queue activity series and dead-letter depth. */
export interface MetricsActivity {
  /** Dead letters stored, by queue slot. */
  readonly dlqDepth: ReadonlyMap<string, number>;
  /** Cumulative retention removals, one entry per (queue slot, reason, consumed). */
  readonly removed: ReadonlyMap<string, { queue: string; reason: string; consumed: boolean; count: number }>;
  /** The series of a queue slot; `lastComplete(now)` is the last complete minute before `now` (epoch ms). */
  series(queue: string): { lastComplete(now: number): MetricsBucket };
}

/** Push maintenance and its spool. */
export interface MetricsMaintenance {
  readonly pushEnabled: boolean;
  status(): { bufferedMessages: number; bufferStats: { failed: number } };
}

/** The retention sweeper; `last.durationMs` is the last sweep's duration in ms. */
export interface MetricsRetention {
  readonly last: { durationMs: number } | undefined;
}

/** The `tenant` and `queue` labels of a queue slot (the summed rest: `tenant=""`, `queue="__other__"`). */
function labelsOf(slot: string): { tenant: string; queue: string } {
  return slot === OTHER_QUEUES ? { tenant: '', queue: OTHER_QUEUES } : slotQueue(slot);
}

/** The Prometheus registry of one broker; values are read at scrape time. */
export class PromMetrics {
  readonly registry = new Registry();
  private readonly loop = monitorEventLoopDelay({ resolution: 20 });
  private readonly maxQueues: number;

  constructor(
    private readonly broker: MetricsBroker,
    private readonly activity: MetricsActivity,
    maintenance: MetricsMaintenance,
    retention: MetricsRetention,
  ) {
    this.maxQueues = broker.config.metricsMaxQueues;
    this.loop.enable();
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 });
    const self = this;
    const c = () => broker.counters;

    // ------------------------------------------------------------ process / broker
    new Gauge({ name: 'queen_uptime_seconds', help: 'Seconds since the broker started', registers, collect() { this.set((broker.clock.now() - broker.startedAt) / 1000); } });
    new Gauge({ name: 'queen_process_resident_memory_bytes', help: 'Resident set size', registers, collect() { this.set(process.memoryUsage().rss); } });
    new Gauge({ name: 'queen_process_heap_used_bytes', help: 'V8 heap in use', registers, collect() { this.set(process.memoryUsage().heapUsed); } });
    const cpu = (name: string, help: string, pick: (u: NodeJS.CpuUsage) => number) => {
      let seen = 0;
      new Counter({ name, help, registers, collect() { const v = pick(process.cpuUsage()); if (v > seen) { this.inc(v - seen); seen = v; } } });
    };
    cpu('queen_cpu_user_microseconds_total', 'User CPU time', (u) => u.user);
    cpu('queen_cpu_system_microseconds_total', 'System CPU time', (u) => u.system);
    let droppedSeen = 0;
    new Counter({
      name: 'queen_log_lines_dropped_total', help: 'Log lines dropped: stdout not read fast enough, or closed (docs/operations.md#logs)', registers,
      collect() { const v = logOutputStats().dropped; if (v > droppedSeen) { this.inc(v - droppedSeen); droppedSeen = v; } },
    });
    new Gauge({
      name: 'queen_event_loop_lag_seconds', help: 'Event-loop delay since the last scrape', labelNames: ['stat'], registers,
      collect() {
        const h = self.loop;
        this.set({ stat: 'mean' }, h.count > 0 ? h.mean / 1e9 : 0);
        this.set({ stat: 'p99' }, h.count > 0 ? h.percentile(99) / 1e9 : 0);
        this.set({ stat: 'max' }, h.count > 0 ? h.max / 1e9 : 0);
        h.reset();
      },
    });

    // ------------------------------------------------------------ state
    new Gauge({ name: 'queen_maintenance_mode_enabled', help: 'Push maintenance (1 = pushes are spooled)', registers, collect() { this.set(maintenance.pushEnabled ? 1 : 0); } });
    new Gauge({ name: 'queen_pop_maintenance_mode_enabled', help: 'Pop maintenance (1 = every pop answers 204)', registers, collect() { this.set(broker.popMaintenanceEnabled ? 1 : 0); } });
    new Gauge({ name: 'queen_file_buffer_pending', help: 'Spooled pushes not replayed yet', registers, collect() { this.set(maintenance.status().bufferedMessages); } });
    new Gauge({ name: 'queen_file_buffer_failed', help: 'Spooled pushes refused at replay', registers, collect() { this.set(maintenance.status().bufferStats.failed); } });
    new Gauge({ name: 'queen_file_buffer_db_healthy', help: 'Store reachable (1) or not (0)', registers, collect() { this.set(broker.healthy() ? 1 : 0); } });
    new Gauge({ name: 'queen_parked_consumers', help: 'Long-poll pops parked, all queues', registers, collect() { this.set(broker.waiters.size); } });

    // ------------------------------------------------------------ lifetime totals (this broker = the cluster)
    const total = (name: string, help: string, read: () => number) => {
      let seen = 0;
      new Counter({ name, help, registers, collect() { const v = read(); if (v > seen) { this.inc(v - seen); seen = v; } } });
    };
    total('queen_cluster_push_requests_total', 'Push requests', () => c().pushRequests);
    total('queen_cluster_pop_requests_total', 'Pop requests', () => c().popRequests);
    total('queen_cluster_ack_requests_total', 'Ack requests', () => c().ackRequests);
    total('queen_cluster_transactions_total', 'Transactions', () => c().transactions);
    total('queen_cluster_push_messages_total', 'Messages pushed', () => c().pushMessages);
    total('queen_cluster_pop_messages_total', 'Messages delivered', () => c().popMessages);
    total('queen_cluster_ack_messages_total', 'Acknowledgements applied', () => c().ackMessages);
    total('queen_cluster_dlq_total', 'Messages dead-lettered', () => c().dlqMessages);
    const acks = { success: 0, failed: 0 };
    new Counter({
      name: 'queen_cluster_ack_total', help: 'Acknowledgements by result', labelNames: ['result'], registers,
      collect() {
        const now = { success: c().ackMessages, failed: c().ackFailed };
        for (const k of ['success', 'failed'] as const) {
          if (now[k] > acks[k]) { this.inc({ result: k }, now[k] - acks[k]); acks[k] = now[k]; }
        }
      },
    });

    // ------------------------------------------------------------ dead letters
    new Gauge({ name: 'queen_dlq_depth', help: 'Dead letters stored', labelNames: ['scope'], registers, collect() { let n = 0; for (const v of activity.dlqDepth.values()) n += v; this.set({ scope: 'cluster' }, n); } });
    new Gauge({
      name: 'queen_dlq_depth_by_queue', help: 'Dead letters stored per queue', labelNames: ['tenant', 'queue'], registers,
      collect() { this.reset(); for (const [q, n] of self.capped((q) => activity.dlqDepth.get(q) ?? 0)) this.set(labelsOf(q), n); },
    });

    // ------------------------------------------------------------ per queue, last complete minute
    const perMinute = (name: string, help: string, pick: (b: MetricsBucket) => number) =>
      new Gauge({
        name, help, labelNames: ['tenant', 'queue'], registers,
        collect() { this.reset(); const now = broker.clock.now(); for (const [q, n] of self.capped((q) => pick(activity.series(q).lastComplete(now)))) this.set(labelsOf(q), n); },
      });
    perMinute('queen_queue_push_requests_per_minute', 'Push requests in the last complete minute', (b) => b.pushRequests);
    perMinute('queen_queue_push_messages_per_minute', 'Messages pushed in the last complete minute', (b) => b.pushMessages);
    perMinute('queen_queue_pop_messages_per_minute', 'Messages delivered in the last complete minute', (b) => b.popMessages);
    perMinute('queen_queue_pop_empty_per_minute', 'Empty pops in the last complete minute', (b) => b.popEmpty);
    perMinute('queen_queue_transactions_per_minute', 'Transactions in the last complete minute', (b) => b.transactions);
    new Gauge({
      name: 'queen_queue_ack_per_minute', help: 'Acknowledgements in the last complete minute', labelNames: ['tenant', 'queue', 'result'], registers,
      collect() {
        this.reset();
        const now = broker.clock.now();
        for (const [q, n] of self.capped((q) => activity.series(q).lastComplete(now).ackCompleted)) this.set({ ...labelsOf(q), result: 'success' }, n);
        for (const [q, n] of self.capped((q) => activity.series(q).lastComplete(now).ackFailed)) this.set({ ...labelsOf(q), result: 'failed' }, n);
      },
    });
    new Gauge({
      name: 'queen_queue_pop_lag_milliseconds', help: 'Age of delivered messages at delivery, last complete minute', labelNames: ['tenant', 'queue', 'stat'], registers,
      collect() {
        this.reset();
        const now = broker.clock.now();
        for (const q of self.labelledQueues()) {
          const b = activity.series(q).lastComplete(now);
          this.set({ ...labelsOf(q), stat: 'avg' }, b.lagCount > 0 ? b.lagSum / b.lagCount : 0);
          this.set({ ...labelsOf(q), stat: 'max' }, b.lagMax);
        }
      },
    });
    new Gauge({
      name: 'queen_queue_parked_consumers', help: 'Long-poll pops parked per queue', labelNames: ['tenant', 'queue'], registers,
      collect() { this.reset(); const w = broker.waiters.perQueueCounts(); for (const [q, n] of self.capped((q) => w.get(q) ?? 0)) this.set(labelsOf(q), n); },
    });

    // ------------------------------------------------------------ retention
    new Counter({
      name: 'queen_retention_removed_messages_total', help: 'Messages removed by retention or eviction', labelNames: ['tenant', 'queue', 'reason', 'consumed'], registers,
      collect() {
        // Rebuilt from the cumulative per-(queue, reason, consumed) totals (bounded by the queue cap).
        this.reset();
        const keep = new Set(self.labelledQueues());
        const other = new Map<string, number>();
        for (const e of activity.removed.values()) {
          const q = keep.has(e.queue) ? e.queue : OTHER_QUEUES;
          const k = `${q}\u0000${e.reason}\u0000${e.consumed}`;
          other.set(k, (other.get(k) ?? 0) + e.count);
        }
        for (const [k, n] of other) {
          const at = k.lastIndexOf('\u0000', k.lastIndexOf('\u0000') - 1); // the slot may hold a NUL itself
          const [reason, consumed] = k.slice(at + 1).split('\u0000') as [string, string];
          this.inc({ ...labelsOf(k.slice(0, at)), reason, consumed }, n);
        }
      },
    });
    new Gauge({ name: 'queen_retention_last_sweep_seconds', help: 'Duration of the last retention sweep', registers, collect() { this.set((retention.last?.durationMs ?? 0) / 1000); } });
  }

  /** The queues that get their own label value (busiest first, capped). */
  private labelledQueues(): string[] {
    const now = this.broker.clock.now();
    const names = [...this.broker.knownQueues.keys()];
    if (names.length <= this.maxQueues) return names;
    const score = (q: string) => {
      const b = this.activity.series(q).lastComplete(now);
      return b.pushMessages + b.popMessages;
    };
    return names
      .map((q) => ({ q, s: score(q), d: this.activity.dlqDepth.get(q) ?? 0 }))
      .sort((a, b) => b.s - a.s || b.d - a.d || a.q.localeCompare(b.q))
      .slice(0, this.maxQueues)
      .map((e) => e.q);
  }

  /** `value(q)` per labelled queue, plus the sum over the others under {@link OTHER_QUEUES}. */
  private capped(value: (q: string) => number): [string, number][] {
    const keep = this.labelledQueues();
    const out: [string, number][] = keep.map((q) => [q, value(q)]);
    if (this.broker.knownQueues.size > keep.length) {
      const set = new Set(keep);
      let rest = 0;
      for (const q of this.broker.knownQueues.keys()) if (!set.has(q)) rest += value(q);
      out.push([OTHER_QUEUES, rest]);
    }
    return out;
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  stop(): void {
    this.loop.disable();
  }
}
