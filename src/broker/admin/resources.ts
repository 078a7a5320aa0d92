/**
 * Resource views (docs/http-api.md#resources): overview, namespaces, tasks, the partitions of a queue
 * and a queue's depth. Served from the engine's in-memory indexes and the activity counters: the
 * cost is arithmetic over queues and partitions in memory, never a scan of the messages; message
 * ages cost one indexed point read each, within a fixed budget.
 */
import { QueenError } from '../../errors.js';
import { iso, isoOrNull } from '../../util/time.js';
import type { Activity } from './activity.js';
import { OPTION_NAMES, type QueueOptions } from '../../model/options.js';
import { groupLagSummary, partitionLag, readersLag, readingGroups, type GroupLagSummary, type ViewReads } from '../messaging/positions.js';
import { QUEUE_MODE } from '../../model/subscription.js';
import type { ViewPartition as PartitionState, ViewQueue as QueueState } from '../../storage/contract.js';

/** Point reads at most per overview for time lags. */
const LAG_READS = 1000;
/** Partitions listed at most by a depth answer. */
const DEPTH_ROWS = 1000;

/** Message counts of one queue, as its readers see them (plus DLQ depth): see {@link queueCounts}. */
export interface QueueCounts {
  total: number;
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  deadLetter: number;
}

/**
 * Counts of `q` from memory. Pending/processing/completed follow the queue's readers: per
 * partition, the slowest of its named groups, or the queue-mode group when it has no named group
 * (docs/http-api.md#resources; `readersLag`).
 */
export function queueCounts(v: ViewReads, activity: Activity, q: QueueState, now: number): QueueCounts {
  const c: QueueCounts = { total: 0, pending: 0, processing: 0, completed: 0, failed: 0, deadLetter: activity.dlqDepth.get(q.name) ?? 0 };
  for (const p of q.partitions.values()) {
    const m = partitionCounts(v, p, now);
    c.total += m.total;
    c.pending += m.pending;
    c.processing += m.processing;
    c.completed += m.completed;
  }
  return c;
}

/** Pending/processing/completed of one partition as its queue's readers see them (all pending when nothing reads it). */
function partitionCounts(v: ViewReads, p: PartitionState, now: number): { total: number; pending: number; processing: number; completed: number } {
  const total = p.headOffset - p.firstOffset;
  const l = readersLag(v, p, now);
  if (!l) return { total, pending: total, processing: 0, completed: 0 };
  const lag = Math.min(l.lag, total);
  return { total, pending: lag - l.processing, processing: l.processing, completed: total - lag };
}

/** Summary of a set of lags: mean, median, least and greatest (all 0 for an empty set). */
export interface LagStats {
  avg: number;
  median: number;
  min: number;
  max: number;
}

/** `GET /api/v1/resources/overview`: inventory, depth, lag and throughput at one instant. */
export interface Overview {
  queues: number;
  partitions: number;
  namespaces: number;
  tasks: number;
  messages: QueueCounts;
  /** `time` in s (oldest unconsumed message per lagging partition, sampled when `timeSampled`), `offset` in messages. */
  lag: { time: LagStats; offset: LagStats; timeSampled?: true };
  /** Messages per second over the last complete minute. */
  throughput: { ingestedPerSecond: number; processedPerSecond: number };
  /** ISO-8601. */
  timestamp: string;
  /** Seconds since the figures were computed: always 0 (live). */
  statsAge: number;
}

/** Queues, partitions and message counts of one namespace or task. */
export interface GroupedCounts {
  queues: number;
  partitions: number;
  messages: { total: number; pending: number };
}

/** `GET /api/v1/resources/namespaces`. */
export interface NamespacesView {
  namespaces: (GroupedCounts & { namespace: string })[];
}

/** `GET /api/v1/resources/tasks`. */
export interface TasksView {
  tasks: (GroupedCounts & { task: string })[];
}

/** One partition with the queue-mode counts (times ISO-8601). */
export interface PartitionView {
  id: string;
  name: string;
  queue: string;
  createdAt: string;
  lastMessageAt: string | null;
  firstOffset: number;
  nextOffset: number;
  messages: { total: number; pending: number; processing: number; completed: number };
  leaseActive: boolean;
}

/** A keyset page of partitions: `nextAfter` is the `after` of the next page, null on the last. */
export interface PartitionPage {
  /** Set when the page is of one queue. */
  queue?: string;
  partitions: PartitionView[];
  /** Partitions of the queue (set with `queue`). */
  total?: number;
  pagination: { limit: number; nextAfter: string | null };
}

/** `GET /api/v1/resources/queues/:queue/depth`: unconsumed messages of one group. */
export interface DepthView {
  queue: string;
  group: string;
  pending: number;
  partitionsPending: number;
  conflation: boolean;
  /** `partitionsPending` under conflation (one message per partition), else `pending`. */
  effectivePending: number;
  partitions: { partition: string; pending: number }[];
  partitionsTruncated?: true;
}

/** A consumer group's lag on one queue (times ISO-8601, `maxTimeLag` in s). */
export interface LagView {
  name: string;
  subscriptionMode: string;
  subscriptionTimestamp: string | null;
  subscriptionCreatedAt: string;
  totalLag: number;
  partitionsWithLag: number;
  processing: number;
  activeLeases: number;
  oldestUnconsumedAt: string | null;
  maxTimeLag: number;
  timeLagSampled?: true;
}

/** The identity and size every queue listing starts with (resources and status views). */
export interface QueueIdentityView {
  id: string;
  name: string;
  namespace: string;
  task: string;
  /** ISO-8601 */
  createdAt: string;
  /** Number of partitions. */
  partitions: number;
}

/** One queue of `GET /api/v1/resources/queues`. */
export interface QueueListing extends QueueIdentityView {
  consumerGroups: string[];
  messages: { total: number; pending: number; processing: number };
  options: QueueOptions;
  groups: LagView[];
}

/** `GET /api/v1/resources/queues`. */
export interface QueueList {
  queues: QueueListing[];
}

/** `GET /api/v1/resources/queues/:queue`. */
export interface QueueDetail {
  id: string;
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  options: QueueOptions;
  partitions: {
    id: string;
    name: string;
    createdAt: string;
    newestMessage: string | null;
    oldestMessageOffset: number;
    nextOffset: number;
    stats: { total: number; pending: number; processing: number; completed: number; failed: number; deadLetter: number };
  }[];
  totals: QueueCounts;
  consumerGroups: LagView[];
}

function stats(values: number[]): LagStats {
  if (values.length === 0) return { avg: 0, median: 0, min: 0, max: 0 };
  const v = [...values].sort((a, b) => a - b);
  return { avg: v.reduce((s, x) => s + x, 0) / v.length, median: v[Math.floor(v.length / 2)]!, min: v[0]!, max: v[v.length - 1]! };
}

/** `GET /api/v1/resources/overview`. */
export async function overview(v: ViewReads, activity: Activity, now: number): Promise<Overview> {
  const messages: QueueCounts = { total: 0, pending: 0, processing: 0, completed: 0, failed: 0, deadLetter: 0 };
  let partitions = 0;
  const namespaces = new Set<string>();
  const tasks = new Set<string>();
  const offsetLags: number[] = [];
  const timeLags: number[] = [];
  let reads = 0;
  for (const q of v.model.queues()) {
    partitions += q.partitions.size;
    if (q.namespace) namespaces.add(q.namespace);
    if (q.task) tasks.add(q.task);
    const c = queueCounts(v, activity, q, now);
    for (const k of Object.keys(messages) as (keyof QueueCounts)[]) messages[k] += c[k];
    for (const g of q.groups.values()) {
      for (const p of q.partitions.values()) {
        const l = partitionLag(v, g, p, now);
        if (l.lag === 0) continue;
        offsetLags.push(l.lag);
        if (reads++ < LAG_READS) {
          const at = await v.store.createdAtFrom(v.tenant, p.pk, l.position);
          if (at !== undefined) timeLags.push(Math.max(0, (now - at) / 1000));
        }
      }
    }
  }
  const last = activity.total.lastComplete(now);
  return {
    queues: [...v.model.queues()].length, partitions, namespaces: namespaces.size, tasks: tasks.size, messages,
    lag: { time: stats(timeLags), offset: stats(offsetLags), ...(reads > LAG_READS ? { timeSampled: true } : {}) },
    throughput: { ingestedPerSecond: last.pushMessages / 60, processedPerSecond: last.popMessages / 60 },
    timestamp: iso(now), statsAge: 0,
  };
}

function groupBy(v: ViewReads, activity: Activity, key: 'namespace' | 'task', now: number): [string, GroupedCounts][] {
  const m = new Map<string, { queues: number; partitions: number; total: number; pending: number }>();
  for (const q of v.model.queues()) {
    const k = q[key];
    if (!k) continue;
    const e = m.get(k) ?? { queues: 0, partitions: 0, total: 0, pending: 0 };
    const c = queueCounts(v, activity, q, now);
    e.queues++;
    e.partitions += q.partitions.size;
    e.total += c.total;
    e.pending += c.pending;
    m.set(k, e);
  }
  return [...m].sort(([a], [b]) => a.localeCompare(b)).map(([k, e]) => [k, {
    queues: e.queues, partitions: e.partitions, messages: { total: e.total, pending: e.pending },
  }]);
}

/** `GET /api/v1/resources/namespaces`: queues, partitions and message counts per namespace. */
export function namespaces(v: ViewReads, activity: Activity, now: number): NamespacesView {
  return { namespaces: groupBy(v, activity, 'namespace', now).map(([namespace, c]) => ({ namespace, ...c })) };
}

/** `GET /api/v1/resources/tasks`: queues, partitions and message counts per task. */
export function tasks(v: ViewReads, activity: Activity, now: number): TasksView {
  return { tasks: groupBy(v, activity, 'task', now).map(([task, c]) => ({ task, ...c })) };
}

function partitionView(v: ViewReads, p: PartitionState, now: number): PartitionView {
  return {
    id: p.id, name: p.name, queue: p.queue.name, createdAt: iso(p.createdAt), lastMessageAt: isoOrNull(p.lastMessageAt),
    firstOffset: p.firstOffset, nextOffset: p.headOffset,
    messages: partitionCounts(v, p, now),
    leaseActive: readingGroups(p.queue).some((g) => partitionLag(v, g, p, now).leaseActive),
  };
}

/** (queue, partition) name order: by queue, then by partition (code-unit order, as `<` on strings). */
function byQueueThenPartition(a: readonly [string, string], b: readonly [string, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

/**
 * The queue-less `after`: the JSON text `["<queue>","<partition>"]` of a previous `nextAfter`.
 * (A NUL between the two names, as before, cannot travel in a URL: `%00` is refused on every route.)
 * @throws QueenError `invalid_request` for anything else
 */
function partitionCursor(after: string): [string, string] {
  let v: unknown;
  try {
    v = JSON.parse(after);
  } catch {
    v = undefined;
  }
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string' || typeof v[1] !== 'string') {
    throw new QueenError('invalid_request', 'after must be the nextAfter of the previous page: ["<queue>","<partition>"]');
  }
  return [v[0], v[1]];
}

/**
 * Partitions of every queue, ordered by (queue, partition) name, paginated: `after` is the
 * previous page's `nextAfter` (`["<queue>","<partition>"]`, see {@link partitionCursor}). For the
 * JS Admin's queue-less `getPartitions()`.
 * @throws QueenError `invalid_request` for an `after` that is no such cursor
 */
export function allPartitions(v: ViewReads, limit: number, after: string | undefined, now: number): PartitionPage {
  const from = after === undefined ? undefined : partitionCursor(after);
  const keys: [readonly [string, string], PartitionState][] = [];
  for (const q of v.model.queues()) {
    for (const p of q.partitions.values()) {
      const k = [q.name, p.name] as const;
      if (from === undefined || byQueueThenPartition(k, from) > 0) keys.push([k, p]);
    }
  }
  keys.sort((a, b) => byQueueThenPartition(a[0], b[0]));
  const page = keys.slice(0, limit).map(([, p]) => partitionView(v, p, now));
  const next = keys.length > limit ? JSON.stringify(keys[limit - 1]![0]) : null;
  return { partitions: page, pagination: { limit, nextAfter: next } };
}

/**
 * The partitions of a queue, by name, paginated (`after` = last name of the previous page).
 * @throws QueenError `queue_not_found`
 */
export function partitionsOf(v: ViewReads, queue: string, limit: number, after: string | undefined, now: number): PartitionPage {
  const q = v.model.queue(queue);
  if (!q) throw new QueenError('queue_not_found');
  const names = [...q.partitions.keys()].filter((n) => after === undefined || n > after).sort();
  const page = names.slice(0, limit).map((n) => partitionView(v, q.partitions.get(n)!, now));
  const next = names.length > limit ? names[limit - 1]! : null;
  return { queue: q.name, partitions: page, total: q.partitions.size, pagination: { limit, nextAfter: next } };
}

/**
 * `GET /api/v1/resources/queues/:queue/depth`: unconsumed messages for `group` (queue mode when absent).
 * @throws QueenError `queue_not_found`, `group_not_found`
 */
export function depth(v: ViewReads, queue: string, group: string | undefined, now: number): DepthView {
  const q = v.model.queue(queue);
  if (!q) throw new QueenError('queue_not_found');
  const name = group || QUEUE_MODE;
  const g = q.groups.get(name);
  if (!g && name !== QUEUE_MODE) throw new QueenError('group_not_found', `consumer group ${name} has not consumed queue ${queue}`);
  let pending = 0;
  const rows: { partition: string; pending: number }[] = [];
  for (const p of q.partitions.values()) {
    const n = g ? partitionLag(v, g, p, now).lag : p.headOffset - p.firstOffset;
    if (n === 0) continue;
    pending += n;
    rows.push({ partition: p.name, pending: n });
  }
  rows.sort((a, b) => b.pending - a.pending || a.partition.localeCompare(b.partition));
  return {
    queue: q.name, group: name, pending, partitionsPending: rows.length, conflation: g?.subscription.conflation ?? false,
    effectivePending: g?.subscription.conflation ? rows.length : pending,
    partitions: rows.slice(0, DEPTH_ROWS), ...(rows.length > DEPTH_ROWS ? { partitionsTruncated: true } : {}),
  };
}

/** Options as answers list them (every option, in the spellings /configure accepts). */
export function optionsView(o: QueueOptions): QueueOptions {
  const out: Record<string, unknown> = {};
  for (const k of OPTION_NAMES) out[k] = o[k];
  return out as unknown as QueueOptions;
}

/** A group's lag as answers list it (consumer-group routes and queue views). */
export function lagView(s: GroupLagSummary, now: number): LagView {
  return {
    name: s.name, subscriptionMode: s.subscriptionMode, subscriptionTimestamp: isoOrNull(s.subscriptionTimestamp),
    subscriptionCreatedAt: iso(s.subscriptionCreatedAt), totalLag: s.totalLag, partitionsWithLag: s.partitionsWithLag,
    processing: s.processing, activeLeases: s.activeLeases,
    oldestUnconsumedAt: isoOrNull(s.oldestUnconsumedAt),
    maxTimeLag: s.oldestUnconsumedAt === null ? 0 : Math.max(0, Math.floor((now - s.oldestUnconsumedAt) / 1000)),
    ...(s.timeLagSampled ? { timeLagSampled: true } : {}),
  };
}

/** `GET /api/v1/resources/queues`: every queue with counts, options and lag per group (from memory). */
export async function listQueues(v: ViewReads, activity: Activity, now: number): Promise<QueueList> {
  return {
    queues: await Promise.all([...v.model.queues()].map(async (q) => {
      const c = queueCounts(v, activity, q, now);
      return {
        id: q.id, name: q.name, namespace: q.namespace, task: q.task, createdAt: iso(q.createdAt),
        partitions: q.partitions.size, consumerGroups: [...q.groups.keys()],
        messages: { total: c.total, pending: c.pending, processing: c.processing },
        options: optionsView(q.options),
        groups: await Promise.all([...q.groups.values()].map(async (g) => lagView(await groupLagSummary(v, g, now, 0), now))),
      };
    })),
  };
}

/**
 * `GET /api/v1/resources/queues/:queue`: options, partitions with counts, totals, groups with lag.
 * @throws QueenError `queue_not_found`
 */
export async function queueDetail(v: ViewReads, activity: Activity, name: string, now: number): Promise<QueueDetail> {
  const q = v.model.queue(name);
  if (!q) throw new QueenError('queue_not_found');
  const partitions = [...q.partitions.values()].map((p) => {
    const m = partitionView(v, p, now).messages;
    return {
      id: p.id, name: p.name, createdAt: iso(p.createdAt), newestMessage: isoOrNull(p.lastMessageAt),
      oldestMessageOffset: p.firstOffset, nextOffset: p.headOffset,
      stats: { ...m, failed: 0, deadLetter: 0 },
    };
  });
  const totals = queueCounts(v, activity, q, now);
  return {
    id: q.id, name: q.name, namespace: q.namespace, task: q.task, createdAt: iso(q.createdAt),
    options: optionsView(q.options), partitions, totals,
    consumerGroups: await Promise.all([...q.groups.values()].map(async (g) => lagView(await groupLagSummary(v, g, now, 1000), now))),
  };
}
