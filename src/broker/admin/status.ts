/**
 * Status and analytics for the dashboard (docs/http-api.md#status-and-analytics; shapes are ours, the reference
 * leaves them to the dashboard). Everything comes from the activity buckets (per queue, per
 * minute) and the in-memory indexes: no scan of the messages. History is what the activity keeps
 * (last hour per queue, last day broker-wide): `from` and `to` are clamped to that history and to now.
 */
import { QueenError } from '../../errors.js';
import { iso, isoOrNull } from '../../util/time.js';
import { mergeSeries, minuteOf, QUEUE_MINUTES, TOTAL_MINUTES, type Activity, type Bucket, type Series } from './activity.js';
import type { Engine } from '../messaging/engine.js';
import { partitionLag } from '../messaging/positions.js';
import { queueCounts, type QueueCounts } from './resources.js';
import type { QueueState } from '../messaging/state.js';

export interface StatusFilter {
  from?: number | undefined;
  to?: number | undefined;
  queue?: string | undefined;
  namespace?: string | undefined;
  task?: string | undefined;
}

function selectQueues(engine: Engine, f: StatusFilter): QueueState[] {
  if (f.queue !== undefined) {
    const q = engine.queues.get(f.queue);
    if (!q) throw new QueenError('queue_not_found');
    return [q];
  }
  return [...engine.queues.values()].filter((q) => (!f.namespace || q.namespace === f.namespace) && (!f.task || q.task === f.task));
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

/** A minute bucket as answers list it. */
function point(b: Bucket): Record<string, unknown> {
  return {
    timestamp: iso(b.minute), ingested: b.pushMessages, processed: b.popMessages,
    ingestedPerSecond: b.pushMessages / 60, processedPerSecond: b.popMessages / 60,
    pushRequests: b.pushRequests, popRequests: b.popRequests, popEmpty: b.popEmpty, acked: b.ackCompleted, failed: b.ackFailed,
    deadLettered: b.dlq, transactions: b.transactions, removedByRetention: b.removed,
    popLagAvgMs: b.lagCount > 0 ? Math.round(b.lagSum / b.lagCount) : 0, popLagMaxMs: b.lagMax,
  };
}

/** Dense per-minute series over [from, to] (minutes without activity are zeros). */
function dense(buckets: Bucket[], from: number, to: number): Record<string, unknown>[] {
  const by = new Map(buckets.map((b) => [b.minute, b]));
  const out: Record<string, unknown>[] = [];
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

function sumCounts(engine: Engine, activity: Activity, queues: QueueState[], now: number): QueueCounts & { partitions: number } {
  const t = { total: 0, pending: 0, processing: 0, completed: 0, failed: 0, deadLetter: 0, partitions: 0 };
  for (const q of queues) {
    const c = queueCounts(engine, activity, q, now);
    for (const k of Object.keys(c) as (keyof QueueCounts)[]) t[k] += c[k];
    t.partitions += q.partitions.size;
  }
  return t;
}

/** `GET /api/v1/status`: totals now and the per-minute throughput of the window. */
export function status(engine: Engine, activity: Activity, f: StatusFilter, extra: Record<string, unknown>, now: number): Record<string, unknown> {
  const queues = selectQueues(engine, f);
  const all = f.queue === undefined && !f.namespace && !f.task;
  const { series, minutes } = seriesFor(activity, queues, all);
  const { from, to } = window(f, now, minutes);
  const buckets = mergeSeries(series, from, to);
  const counts = sumCounts(engine, activity, queues, now);
  let leases = 0;
  for (const q of queues) for (const g of q.groups.values()) for (const p of q.partitions.values()) if (partitionLag(engine, g, p, now).leaseActive) leases++;
  const { partitions, ...messages } = counts;
  return {
    timeRange: { from: iso(from), to: iso(to) }, queues: queues.length, partitions, messages,
    throughput: dense(buckets, from, to),
    leases: { active: leases }, deadLetterQueue: { totalMessages: messages.deadLetter },
    ...extra,
  };
}

function queueRow(engine: Engine, activity: Activity, q: QueueState, now: number): Record<string, unknown> {
  const last = activity.series(q.name).lastComplete(now);
  return {
    id: q.id, name: q.name, namespace: q.namespace, task: q.task, createdAt: iso(q.createdAt), partitions: q.partitions.size,
    consumerGroups: q.groups.size, messages: queueCounts(engine, activity, q, now),
    throughput: { pushPerMinute: last.pushMessages, popPerMinute: last.popMessages, ackPerMinute: last.ackCompleted },
    lag: { avgMs: last.lagCount > 0 ? Math.round(last.lagSum / last.lagCount) : 0, maxMs: last.lagMax },
  };
}

/** `GET /api/v1/status/queues`: one row per queue, by name, paginated. */
export function statusQueues(engine: Engine, activity: Activity, f: StatusFilter, limit: number, offset: number, now: number): Record<string, unknown> {
  const queues = selectQueues(engine, f).sort((a, b) => a.name.localeCompare(b.name));
  return {
    queues: queues.slice(offset, offset + limit).map((q) => queueRow(engine, activity, q, now)),
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
export function statusQueue(engine: Engine, activity: Activity, name: string, now: number): Record<string, unknown> {
  const q = engine.queues.get(name);
  if (!q) throw new QueenError('queue_not_found');
  const parts = [...q.partitions.values()].sort((a, b) => a.name.localeCompare(b.name));
  const partitions = parts.slice(0, STATUS_PARTITIONS).map((p) => {
    const total = p.headOffset - p.firstOffset;
    const cursors = [...q.groups.values()].map((g) => {
      const l = partitionLag(engine, g, p, now);
      return { consumerGroup: g.name, nextOffset: l.position, lag: l.lag, processing: l.processing, leaseActive: l.leaseActive, leaseExpiresAt: isoOrNull(l.leaseExpiresAt) };
    });
    return {
      id: p.id, name: p.name, createdAt: iso(p.createdAt), lastMessageAt: isoOrNull(p.lastMessageAt),
      messages: { total, firstOffset: p.firstOffset, nextOffset: p.headOffset }, cursor: cursors,
    };
  });
  const from = now - QUEUE_MINUTES * 60_000;
  return {
    queue: queueRow(engine, activity, q, now), partitions, totalPartitions: q.partitions.size,
    ...(q.partitions.size > STATUS_PARTITIONS ? { partitionsTruncated: true } : {}),
    throughput: dense(activity.series(q.name).range(from, now), from, now),
  };
}

/** `GET /api/v1/status/analytics`: per-minute series (interval `minute`; `hour` sums 60 minutes). */
export function analytics(engine: Engine, activity: Activity, f: StatusFilter, interval: 'minute' | 'hour', now: number): Record<string, unknown> {
  const queues = selectQueues(engine, f);
  const all = f.queue === undefined && !f.namespace && !f.task;
  const { series, minutes } = seriesFor(activity, queues, all);
  const { from, to } = window(f, now, minutes);
  const buckets = mergeSeries(series, from, to);
  let points = dense(buckets, from, to);
  if (interval === 'hour') {
    const byHour = new Map<string, Record<string, number | string>>();
    for (const pnt of points) {
      const h = iso(Math.floor(Date.parse(pnt.timestamp as string) / 3_600_000) * 3_600_000);
      const acc = byHour.get(h) ?? { timestamp: h };
      for (const [k, v] of Object.entries(pnt)) {
        if (typeof v !== 'number') continue;
        if (k === 'popLagMaxMs') acc[k] = Math.max(Number(acc[k] ?? 0), v);
        else if (k === 'popLagAvgMs') continue;
        else acc[k] = Number(acc[k] ?? 0) + v;
      }
      byHour.set(h, acc);
    }
    points = [...byHour.values()].map((p) => ({ ...p, ingestedPerSecond: Number(p.ingested) / 3600, processedPerSecond: Number(p.processed) / 3600 }));
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
