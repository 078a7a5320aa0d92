/**
 * The broker's HTTP API, as the dashboard uses it (docs/http-api.md#operator-routes). Every shape is read
 * tolerantly: fields may be missing while routes are still being built, so the helpers below
 * coerce instead of trusting.
 */
import { store } from './store';
import { parseJson } from './json';
// The wire types are derived from the broker's response schemas (src/http/schemas): type-only, so
// nothing of the broker is bundled, and `npm run typecheck` fails when a reader and a schema disagree.
import type {
  ConsumerGroupsAnswer, DlqAnswer, MessagesAnswer, QueueAnswer, QueuesAnswer, TraceNamesAnswer, TracesAnswer,
} from '../../src/http/schemas/types';

export type {
  ConsumerGroupAnswer, ConsumerGroupsAnswer, DlqAnswer, HealthAnswer, MessagesAnswer, QueueAnswer, QueuesAnswer, TraceNamesAnswer, TracesAnswer,
} from '../../src/http/schemas/types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
  /** The broker does not serve this route at all (yet). */
  get missingRoute(): boolean {
    return this.status === 404 && (this.code === 'no_such_route' || this.code === undefined && /no such route/i.test(this.message));
  }
}

/** Set when the broker answers 401: JWT is on and this dashboard is off (docs/security.md#dashboard-and-auth-routes). */
export const authRequired = store(false);
/**
 * False when the dashboard is served behind the embedded proxy to a person whose role on the acting
 * cluster is not admin (docs/proxy.md#console): replay, purge, seek and delete are hidden (the
 * proxy refuses them anyway).
 */
export const canAdmin = store(true);

/** The acting cluster chosen in the proxy console (docs/proxy.md#console), sent as `x-queen-act-cluster`. */
function actingCluster(): string | null {
  try {
    return localStorage.getItem('queen.actCluster');
  } catch {
    return null;
  }
}

/** Set while the broker cannot be reached at all. */
export const offline = store(false);

export interface CallOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined | null>;
  signal?: AbortSignal;
}

export function withQuery(path: string, query?: CallOptions['query']): string {
  if (!query) return path;
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
}

/** One JSON call. 204 resolves to `null`. Non-2xx throws {@link ApiError}. */
export async function api<T = unknown>(path: string, opts: CallOptions = {}): Promise<T> {
  const init: RequestInit = { method: opts.method ?? 'GET', headers: { accept: 'application/json' }, signal: opts.signal, cache: 'no-store' };
  const acting = actingCluster();
  if (acting) (init.headers as Record<string, string>)['x-queen-act-cluster'] = acting;
  if (opts.body !== undefined) {
    init.body = JSON.stringify(opts.body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  let r: Response;
  try {
    r = await fetch(withQuery(path, opts.query), init);
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    offline.set(true);
    throw new ApiError(0, 'network', 'The broker cannot be reached');
  }
  offline.set(false);
  if (r.status === 401) authRequired.set(true);
  if (r.status === 204) return null as T;
  const text = await r.text();
  let body: unknown = undefined;
  if (text) {
    try {
      body = parseJson(text);
    } catch {
      body = text;
    }
  }
  if (!r.ok) {
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const msg = str(b.error) || str(b.message) || `${r.status} ${r.statusText}`;
    throw new ApiError(r.status, str(b.code) || undefined, msg, body);
  }
  return body as T;
}

// ------------------------------------------------------------------ tolerant readers

export type Obj = Record<string, unknown>;

export function obj(v: unknown): Obj {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}
export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
export function num(...vs: unknown[]): number {
  for (const v of vs) {
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  }
  return 0;
}
/** Like {@link num} but `undefined` when none of the candidates is a number. */
export function numOr(...vs: unknown[]): number | undefined {
  for (const v of vs) {
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  }
  return undefined;
}
export function str(...vs: unknown[]): string {
  for (const v of vs) if (typeof v === 'string') return v;
  return '';
}
export function enc(s: string): string {
  return encodeURIComponent(s);
}

// ------------------------------------------------------------------ domain shapes

export const QUEUE_MODE = '__QUEUE_MODE__';

export interface QueueRow {
  id: string;
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  partitions: number;
  total: number;
  pending: number;
  processing: number;
  groups: string[];
  options: Obj;
}

/** The identifying fields every queue answer carries (list and detail shapes alike). */
function queueIdentity(q: Obj): { id: string; name: string; namespace: string; task: string; createdAt: string } {
  return { id: str(q.id), name: str(q.name, q.queue), namespace: str(q.namespace), task: str(q.task), createdAt: str(q.createdAt) };
}

/** Rows of `GET /api/v1/resources/queues`. */
export function readQueues(body: QueuesAnswer | null): QueueRow[] {
  const list: unknown[] = body?.queues ?? [];
  return list.map((x) => {
    const q = obj(x);
    const m = obj(q.messages);
    const parts = Array.isArray(q.partitions) ? q.partitions.length : num(q.partitions, q.partitionCount);
    const groups = arr(q.consumerGroups).map((g) => (typeof g === 'string' ? g : str(obj(g).name))).filter((g) => g !== '');
    return {
      ...queueIdentity(q),
      partitions: parts,
      total: num(m.total, q.total),
      pending: num(m.pending, q.pending, q.depth),
      processing: num(m.processing, q.processing),
      groups,
      options: obj(q.options),
    };
  });
}

export interface PartitionRow {
  id: string;
  name: string;
  createdAt: string;
  total: number;
  pending: number;
  processing: number;
  completed: number;
  deadLetter: number;
  newest: string;
  oldest: string;
}

export interface QueueDetail {
  id: string;
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  options: Obj;
  partitions: PartitionRow[];
  totals: { total: number; pending: number; processing: number; completed: number; failed: number; deadLetter: number };
  groups: DetailGroup[];
}

/** A consumer group as the queue detail reports it (lag fields only on newer brokers). */
export interface DetailGroup {
  name: string;
  subscriptionMode: string;
  subscriptionTimestamp: string;
  totalLag: number | undefined;
  partitionsWithLag: number | undefined;
  /** seconds since the oldest unconsumed message was created */
  timeLag: number | undefined;
}

/** Age in seconds of an ISO timestamp, or `undefined`. */
export function ageOf(iso: string): number | undefined {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? Math.max(0, (Date.now() - t) / 1000) : undefined;
}

/** The answer of `GET /api/v1/resources/queues/:queue`. */
export function readQueueDetail(body: QueueAnswer | null): QueueDetail {
  const q: Obj = body ?? {};
  const partitions = arr(q.partitions).map((x) => {
    const p = obj(x);
    const s = obj(p.stats ?? p.messages);
    return {
      id: str(p.id, p.partitionId),
      name: str(p.name, p.partition),
      createdAt: str(p.createdAt),
      total: num(s.total, p.total),
      pending: num(s.pending, p.pending),
      processing: num(s.processing, p.processing),
      completed: num(s.completed, p.completed),
      deadLetter: num(s.deadLetter, p.deadLetter),
      newest: str(p.newestMessage, p.newestMessageAt, p.lastMessageAt),
      oldest: str(p.oldestMessage, p.oldestMessageAt),
    };
  });
  const t = obj(q.totals ?? q.messages);
  const sum = (k: keyof PartitionRow) => partitions.reduce((a, p) => a + (p[k] as number), 0);
  return {
    ...queueIdentity(q),
    options: obj(q.options ?? q.config),
    partitions,
    totals: {
      total: num(t.total, sum('total')),
      pending: num(t.pending, sum('pending')),
      processing: num(t.processing, sum('processing')),
      completed: num(t.completed, sum('completed')),
      failed: num(t.failed),
      deadLetter: num(t.deadLetter, t.dlq, sum('deadLetter')),
    },
    groups: arr(q.consumerGroups).map((g): DetailGroup => {
      const o = obj(g);
      if (typeof g === 'string') return { name: g, subscriptionMode: '', subscriptionTimestamp: '', totalLag: undefined, partitionsWithLag: undefined, timeLag: undefined };
      const oldest = str(o.oldestUnconsumedAt);
      const totalLag = numOr(o.totalLag, o.lag);
      return {
        name: str(o.name, o.consumerGroup),
        subscriptionMode: str(o.subscriptionMode),
        subscriptionTimestamp: str(o.subscriptionTimestamp),
        totalLag,
        partitionsWithLag: numOr(o.partitionsWithLag),
        timeLag: totalLag === 0 ? 0 : oldest ? ageOf(oldest) : numOr(o.maxTimeLag),
      };
    }),
  };
}

export interface GroupPartitionLag {
  partition: string;
  partitionId: string;
  lag: number;
  timeLag: number | undefined;
  cursor: string;
}

export interface GroupRow {
  name: string;
  queue: string;
  members: number;
  totalLag: number;
  partitionsWithLag: number;
  maxTimeLag: number | undefined;
  state: string;
  subscriptionMode: string;
  subscriptionTimestamp: string;
  partitions: GroupPartitionLag[];
}

function readGroupPartitions(v: unknown): GroupPartitionLag[] {
  return arr(v).map((x) => {
    const p = obj(x);
    return {
      partition: str(p.partition, p.partitionName, p.name),
      partitionId: str(p.partitionId, p.id),
      lag: num(p.lag, p.offsetLag, p.pending, p.lagMessages),
      timeLag: str(p.oldestUnconsumedAt) ? ageOf(str(p.oldestUnconsumedAt)) : numOr(p.timeLag, p.lagSeconds, p.timeLagSeconds, p.oldestUnconsumedAgeSeconds, p.maxTimeLag),
      cursor: str(p.lastConsumedAt, p.cursor === undefined ? undefined : String(p.cursor)),
    };
  });
}

/** Rows of `GET /api/v1/consumer-groups` (one per group and queue). */
export function readGroups(body: ConsumerGroupsAnswer | null): GroupRow[] {
  const list: unknown[] = body ?? [];
  const out: GroupRow[] = [];
  for (const x of list) {
    const g = obj(x);
    const name = str(g.name, g.consumerGroup, g.group);
    const queues = arr(g.queues);
    // Either one row per (group, queue) — the spec's shape — or one row per group with `queues`.
    if (queues.length > 0 && !g.queueName) {
      for (const qx of queues) {
        const q = obj(qx);
        out.push(groupRow(name, str(q.queueName, q.queue, q.name), q, g));
      }
    } else {
      const topics = arr(g.topics);
      out.push(groupRow(name, str(g.queueName, g.queue, topics[0]), g, g));
    }
  }
  return out;
}

function groupRow(name: string, queue: string, q: Obj, g: Obj): GroupRow {
  const partitions = readGroupPartitions(q.partitions);
  return {
    name,
    queue,
    members: num(q.members, g.members),
    totalLag: num(q.totalLag, q.lag, partitions.reduce((a, p) => a + p.lag, 0)),
    partitionsWithLag: num(q.partitionsWithLag, partitions.filter((p) => p.lag > 0).length),
    maxTimeLag: str(q.oldestUnconsumedAt) ? ageOf(str(q.oldestUnconsumedAt)) : numOr(q.maxTimeLag, q.maxTimeLagSeconds, q.timeLag, ...partitions.map((p) => p.timeLag)),
    state: str(q.state, g.state),
    subscriptionMode: str(q.subscriptionMode, g.subscriptionMode),
    subscriptionTimestamp: str(q.subscriptionTimestamp, g.subscriptionTimestamp),
    partitions,
  };
}

export interface DeadLetter {
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  consumerGroup: string;
  errorMessage: string;
  retryCount: number;
  data: unknown;
  traceId: string;
  createdAt: string;
  failedAt: string;
}

/** Rows of `GET /api/v1/dlq`. */
export function readDlq(body: DlqAnswer | null): DeadLetter[] {
  const list: unknown[] = body?.messages ?? [];
  return list.map((x) => {
    const m = obj(x);
    return {
      id: str(m.id, m.dlqId),
      transactionId: str(m.transactionId),
      partitionId: str(m.partitionId),
      queue: str(m.queue, m.queueName),
      partition: str(m.partition, m.partitionName),
      consumerGroup: str(m.consumerGroup),
      errorMessage: str(m.errorMessage, m.error),
      retryCount: num(m.retryCount),
      data: 'data' in m ? m.data : m.payload,
      traceId: str(m.traceId),
      createdAt: str(m.createdAt),
      failedAt: str(m.failedAt, m.createdAt),
    };
  });
}

export interface MessageRow {
  id: string;
  transactionId: string;
  partitionId: string;
  partition: string;
  queue: string;
  data: unknown;
  traceId: string;
  producerSub: string;
  createdAt: string;
  status: string;
  offset: number | undefined;
  raw: Obj;
}

export function readMessage(x: unknown): MessageRow {
  const m = obj(x);
  return {
    id: str(m.id, m.messageId),
    transactionId: str(m.transactionId),
    partitionId: str(m.partitionId),
    partition: str(m.partition, m.partitionName),
    queue: str(m.queue, m.queueName),
    data: 'data' in m ? m.data : m.payload,
    traceId: str(m.traceId),
    producerSub: str(m.producerSub),
    createdAt: str(m.createdAt),
    status: str(m.status),
    offset: numOr(m.offset),
    raw: m,
  };
}

/** A page of `GET /api/v1/messages`. */
export function readMessages(body: MessagesAnswer | null): { messages: MessageRow[]; next: string; hasMore: boolean | undefined } {
  if (!body) return { messages: [], next: '', hasMore: undefined };
  return { messages: body.messages.map(readMessage), next: body.pagination.nextCursor ?? '', hasMore: body.pagination.hasMore };
}

export interface TraceEvent {
  id: string;
  eventType: string;
  data: unknown;
  consumerGroup: string;
  workerId: string;
  createdAt: string;
  traceNames: string[];
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
}

/** Events of `GET /api/v1/traces/:partitionId/:transactionId` or `/by-name/:traceName`. */
export function readTraces(body: TracesAnswer | null): TraceEvent[] {
  const list: unknown[] = body?.traces ?? [];
  return list.map((x) => {
    const t = obj(x);
    const names = t.trace_names ?? t.traceNames;
    return {
      id: str(t.id),
      eventType: str(t.event_type, t.eventType) || 'info',
      data: t.data,
      consumerGroup: str(t.consumer_group, t.consumerGroup),
      workerId: str(t.worker_id, t.workerId),
      createdAt: str(t.created_at, t.createdAt),
      traceNames: Array.isArray(names) ? names.map(String) : typeof names === 'string' ? [names] : [],
      transactionId: str(t.transaction_id, t.transactionId),
      partitionId: str(t.partition_id, t.partitionId),
      queue: str(t.queue_name, t.queueName, t.queue),
      partition: str(t.partition_name, t.partitionName, t.partition),
    };
  });
}

export interface TraceName {
  name: string;
  traces: number;
  messages: number;
  lastSeen: string;
}

/** Rows of `GET /api/v1/traces/names`. */
export function readTraceNames(body: TraceNamesAnswer | null): TraceName[] {
  const list: unknown[] = body?.trace_names ?? [];
  return list.map((x) => {
    if (typeof x === 'string') return { name: x, traces: 0, messages: 0, lastSeen: '' };
    const n = obj(x);
    return {
      name: str(n.trace_name, n.traceName, n.name),
      traces: num(n.trace_count, n.traceCount, n.count),
      messages: num(n.message_count, n.messageCount),
      lastSeen: str(n.last_seen, n.lastSeen),
    };
  });
}
