/**
 * Status and analytics for the dashboard (docs/http-api.md#status-and-analytics; shapes are ours, the reference
 * leaves them to the dashboard). Everything comes from the activity buckets (per queue, per
 * minute) and the storage contract's view model (src/storage/contract.ts `ViewsSubStore`): no scan of the messages. History is what the activity keeps
 * (last hour per queue, last day broker-wide): `from` and `to` are clamped to that history and to now.
 */
import { QueenError } from '../../errors.js';
import { iso, isoOrNull } from '../../util/time.js';
import { mergeSeries, minuteOf, QUEUE_MINUTES, TOTAL_MINUTES, type Activity, type Bucket, type Series } from './activity.js';
import { partitionLag, type ViewReads } from '../messaging/positions.js';
import { queueCounts, type QueueCounts, type QueueIdentityView } from './resources.js';
import type { ViewQueue as QueueState } from '../../storage/contract.js';

export interface StatusFilter {
  from?: number | undefined;
  to?: number | undefined;
  queue?: string | undefined;
  namespace?: string | undefined;
  task?: string | undefined;
}

function selectQueues(v: ViewReads, f: StatusFilter): QueueState[] {
  if (f.queue !== undefined) {
    const q = v.model.queue(f.queue);
    if (!q) throw new QueenError('queue_not_found');
    return [q];
  }
  return [...v.model.queues()].filter((q) => (!f.namespace || q.namespace === f.namespace) && (!f.task || q.task === f.task));
}

/** Window of the series when `from` is absent. */
const DEFAULT_WINDOW_MINUTES = 60;

/**
 * The series window: `[from, to]` in epoch ms, clamped to what the activity keeps (`minutes` back
 * from now) and never past now, so an answer holds at most `minutes + 1` points whatever the
 * request names. Defaults to the last {@link DEFAULT_WINDOW_MINUTES} minutes before `to`.
 * @throws QueenError `invalid_request` when the requested `from` is after the requested `to`
 */
function window(f: StatusFilter, now: number, minutes: number): { from: number; to: number } {
  if (f.from !== undefined && f.to !== undefined && f.from > f.to) throw new QueenError('invalid_request', 'from must not be after to');
  const oldest = now - minutes * 60_000;
  const clamp = (t: number): number => Math.min(Math.max(t, oldest), now);
  const to = clamp(f.to ?? now);
  const from = Math.min(clamp(f.from ?? to - DEFAULT_WINDOW_MINUTES * 60_000), to);
  return { from, to };
}

/** One point of a throughput series: counts over its minute (or hour), times ISO-8601. */
export interface ThroughputPoint {
  timestamp: string;
  ingested: number;
  processed: number;
  ingestedPerSecond: number;
  processedPerSecond: number;
  pushRequests: number;
  popRequests: number;
  popEmpty: number;
  acked: number;
  failed: number;
  deadLettered: number;
  transactions: number;
  removedByRetention: number;
  /** Mean and greatest delay from push to pop in ms (per-minute points only: an hour keeps the max). */
  popLagAvgMs?: number;
  popLagMaxMs: number;
}

/** What the HTTP layer adds to {@link status}: the broker's process state. */
export interface StatusExtra {
  parkedConsumers: number;
  /** Seconds since the broker started. */
  uptimeSeconds: number;
  maintenance: { push: boolean; pop: boolean; bufferedMessages: number };
}

/** `GET /api/v1/status`. */
export interface StatusView extends StatusExtra {
  timeRange: { from: string; to: string };
  queues: number;
  partitions: number;
  messages: QueueCounts;
  throughput: ThroughputPoint[];
  leases: { active: number };
  deadLetterQueue: { totalMessages: number };
}

/** One queue of `GET /api/v1/status/queues` (per-minute figures over the last complete minute). */
export interface StatusQueueRow extends QueueIdentityView {
  consumerGroups: number;
  messages: QueueCounts;
  throughput: { pushPerMinute: number; popPerMinute: number; ackPerMinute: number };
  lag: { avgMs: number; maxMs: number };
}

/** `GET /api/v1/status/queues`. */
export interface StatusQueues {
  queues: StatusQueueRow[];
  pagination: { limit: number; offset: number; total: number };
}

/** A group's cursor on one partition (`leaseExpiresAt` ISO-8601). */
export interface StatusCursor {
  consumerGroup: string;
  nextOffset: number;
  lag: number;
  processing: number;
  leaseActive: boolean;
  leaseExpiresAt: string | null;
}

/** `GET /api/v1/status/queues/:queue`. */
export interface StatusQueueDetail {
  queue: StatusQueueRow;
  partitions: {
    id: string;
    name: string;
    createdAt: string;
    lastMessageAt: string | null;
    messages: { total: number; firstOffset: number; nextOffset: number };
    cursor: StatusCursor[];
  }[];
  totalPartitions: number;
  partitionsTruncated?: true;
  throughput: ThroughputPoint[];
}

/** `GET /api/v1/status/analytics` (`from`, `to` ISO-8601). */
export interface AnalyticsView {
  interval: 'minute' | 'hour';
  from: string;
  to: string;
  queues: number;
  series: ThroughputPoint[];
  totals: { ingested: number; processed: number; acked: number; failed: number; deadLettered: number };
}

/** A minute bucket as answers list it. */
function point(b: Bucket): ThroughputPoint {
  return {
    timestamp: iso(b.minute), ingested: b.pushMessages, processed: b.popMessages,
    ingestedPerSecond: b.pushMessages / 60, processedPerSecond: b.popMessages / 60,
    pushRequests: b.pushRequests, popRequests: b.popRequests, popEmpty: b.popEmpty, acked: b.ackCompleted, failed: b.ackFailed,
    deadLettered: b.dlq, transactions: b.transactions, removedByRetention: b.removed,
    popLagAvgMs: b.lagCount > 0 ? Math.round(b.lagSum / b.lagCount) : 0, popLagMaxMs: b.lagMax,
  };
}

/** Dense per-minute series over [from, to] (minutes without activity are zeros). */
function dense(buckets: Bucket[], from: number, to: number): ThroughputPoint[] {
  const by = new Map(buckets.map((b) => [b.minute, b]));
  const out: ThroughputPoint[] = [];
  for (let m = minuteOf(from); m <= to; m += 60_000) {
    const b = by.get(m);
    out.push(point(b ?? { minute: m, pushRequests: 0, pushMessages: 0, popRequests: 0, popMessages: 0, popEmpty: 0, ackCompleted: 0, ackFailed: 0, dlq: 0, transactions: 0, lagSum: 0, lagCount: 0, lagMax: 0, removed: 0 }));
  }
  return out;
}

function seriesFor(activity: Activity, queues: QueueState[], all: boolean): { series: Series[]; minutes: number } {
  if (all) return { series: [activity.total], minutes: TOTAL_MINUTES };
  return { series: queues.map((q) => activity.series(q.name)), minutes: QUEUE_MINUTES };
}

function sumCounts(v: ViewReads, activity: Activity, queues: QueueState[], now: number): QueueCounts & { partitions: number } {
  const t = { total: 0, pending: 0, processing: 0, completed: 0, failed: 0, deadLetter: 0, partitions: 0 };
  for (const q of queues) {
    const c = queueCounts(v, activity, q, now);
    for (const k of Object.keys(c) as (keyof QueueCounts)[]) t[k] += c[k];
    t.partitions += q.partitions.size;
  }
  return t;
}

/** `GET /api/v1/status`: totals now and the per-minute throughput of the window. */
export function status(v: ViewReads, activity: Activity, f: StatusFilter, extra: StatusExtra, now: number): StatusView {
  const queues = selectQueues(v, f);
  const all = f.queue === undefined && !f.namespace && !f.task;
  const { series, minutes } = seriesFor(activity, queues, all);
  const { from, to } = window(f, now, minutes);
  const buckets = mergeSeries(series, from, to);
  const counts = sumCounts(v, activity, queues, now);
  let leases = 0;
  for (const q of queues) for (const g of q.groups.values()) for (const p of q.partitions.values()) if (partitionLag(v, g, p, now).leaseActive) leases++;
  const { partitions, ...messages } = counts;
  return {
    timeRange: { from: iso(from), to: iso(to) }, queues: queues.length, partitions, messages,
    throughput: dense(buckets, from, to),
    leases: { active: leases }, deadLetterQueue: { totalMessages: messages.deadLetter },
    ...extra,
  };
}

function queueRow(v: ViewReads, activity: Activity, q: QueueState, now: number): StatusQueueRow {
  const last = activity.series(q.name).lastComplete(now);
  return {
    id: q.id, name: q.name, namespace: q.namespace, task: q.task, createdAt: iso(q.createdAt), partitions: q.partitions.size,
    consumerGroups: q.groups.size, messages: queueCounts(v, activity, q, now),
    throughput: { pushPerMinute: last.pushMessages, popPerMinute: last.popMessages, ackPerMinute: last.ackCompleted },
    lag: { avgMs: last.lagCount > 0 ? Math.round(last.lagSum / last.lagCount) : 0, maxMs: last.lagMax },
  };
}

/** `GET /api/v1/status/queues`: one row per queue, by name, paginated. */
export function statusQueues(v: ViewReads, activity: Activity, f: StatusFilter, limit: number, offset: number, now: number): StatusQueues {
  const queues = selectQueues(v, f).sort((a, b) => a.name.localeCompare(b.name));
  return {
    queues: queues.slice(offset, offset + limit).map((q) => queueRow(v, activity, q, now)),
    pagination: { limit, offset, total: queues.length },
  };
}

/** Partitions listed at most by a queue status answer. */
const STATUS_PARTITIONS = 1000;

/**
 * `GET /api/v1/status/queues/:queue`: the queue, its partitions (messages and cursors per group)
 * and its last hour per minute.
 * @throws QueenError `queue_not_found`
 */
export function statusQueue(v: ViewReads, activity: Activity, name: string, now: number): StatusQueueDetail {
  const q = v.model.queue(name);
  if (!q) throw new QueenError('queue_not_found');
  const parts = [...q.partitions.values()].sort((a, b) => a.name.localeCompare(b.name));
  const partitions = parts.slice(0, STATUS_PARTITIONS).map((p) => {
    const total = p.headOffset - p.firstOffset;
    const cursors = [...q.groups.values()].map((g): StatusCursor => {
      const l = partitionLag(v, g, p, now);
      return { consumerGroup: g.name, nextOffset: l.position, lag: l.lag, processing: l.processing, leaseActive: l.leaseActive, leaseExpiresAt: isoOrNull(l.leaseExpiresAt) };
    });
    return {
      id: p.id, name: p.name, createdAt: iso(p.createdAt), lastMessageAt: isoOrNull(p.lastMessageAt),
      messages: { total, firstOffset: p.firstOffset, nextOffset: p.headOffset }, cursor: cursors,
    };
  });
  const from = now - QUEUE_MINUTES * 60_000;
  return {
    queue: queueRow(v, activity, q, now), partitions, totalPartitions: q.partitions.size,
    ...(q.partitions.size > STATUS_PARTITIONS ? { partitionsTruncated: true } : {}),
    throughput: dense(activity.series(q.name).range(from, now), from, now),
  };
}

/** The counts an hour point sums over its minutes (the mean lag is dropped, the max lag kept). */
const HOUR_SUMS = ['ingested', 'processed', 'pushRequests', 'popRequests', 'popEmpty', 'acked', 'failed', 'deadLettered', 'transactions', 'removedByRetention'] as const;

/** `GET /api/v1/status/analytics`: per-minute series (interval `minute`; `hour` sums 60 minutes). */
export function analytics(v: ViewReads, activity: Activity, f: StatusFilter, interval: 'minute' | 'hour', now: number): AnalyticsView {
  const queues = selectQueues(v, f);
  const all = f.queue === undefined && !f.namespace && !f.task;
  const { series, minutes } = seriesFor(activity, queues, all);
  const { from, to } = window(f, now, minutes);
  const buckets = mergeSeries(series, from, to);
  let points = dense(buckets, from, to);
  if (interval === 'hour') {
    const byHour = new Map<string, ThroughputPoint>();
    for (const pnt of points) {
      const h = iso(Math.floor(Date.parse(pnt.timestamp) / 3_600_000) * 3_600_000);
      const acc = byHour.get(h) ?? {
        timestamp: h, ingested: 0, processed: 0, ingestedPerSecond: 0, processedPerSecond: 0, pushRequests: 0, popRequests: 0, popEmpty: 0,
        acked: 0, failed: 0, deadLettered: 0, transactions: 0, removedByRetention: 0, popLagMaxMs: 0,
      };
      for (const k of HOUR_SUMS) acc[k] += pnt[k];
      acc.popLagMaxMs = Math.max(acc.popLagMaxMs, pnt.popLagMaxMs);
      byHour.set(h, acc);
    }
    points = [...byHour.values()].map((p) => ({ ...p, ingestedPerSecond: p.ingested / 3600, processedPerSecond: p.processed / 3600 }));
  }
  const totals = { ingested: 0, processed: 0, acked: 0, failed: 0, deadLettered: 0 };
  for (const b of buckets) {
    totals.ingested += b.pushMessages;
    totals.processed += b.popMessages;
    totals.acked += b.ackCompleted;
    totals.failed += b.ackFailed;
    totals.deadLettered += b.dlq;
  }
  return { interval, from: iso(from), to: iso(to), queues: queues.length, series: points, totals };
}
