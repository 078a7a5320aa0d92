/**
 * Live data: one refresh loop for the whole app. Each cycle reads /health, /metrics, the queue
 * list, the consumer groups and the DLQ depth, keeps a one-hour ring of samples (rates from
 * counter deltas, backlog, lag) in memory and in localStorage, and bumps `tick` so pages re-read
 * their own data without a reload.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, enc, num, obj, QUEUE_MODE, readGroups, readQueueDetail, readQueues, type ConsumerGroupsAnswer, type GroupRow, type HealthAnswer, type Obj, type QueueAnswer, type QueueRow, type QueuesAnswer } from './api';
import { store, useStore } from './store';

export interface Sample {
  /** unix seconds */
  t: number;
  in: number | null;
  out: number | null;
  depth: number | null;
  lag: number | null;
  dlq: number | null;
}

export interface QueueSample {
  t: number;
  /** pushed per second */
  in: number | null;
  /** consumed per second in queue mode */
  out: number | null;
  depth: number;
  total: number;
  done: number;
}

export interface Snapshot {
  at: number;
  health?: Obj;
  metrics?: Obj;
  queues?: QueueRow[];
  queuesError?: ApiError;
  groups?: GroupRow[];
  groupsError?: ApiError;
  dlqDepth?: number;
  /** the DLQ depth is a lower bound (read from a capped listing) */
  dlqCapped?: boolean;
  rateIn?: number;
  rateOut?: number;
  rateAck?: number;
}

const WINDOW_SEC = 3600;
const STORE_KEY = 'queen.samples.v1';
const PREF_KEY = 'queen.refreshMs';

function loadPref(): number {
  const v = Number(localStorage.getItem(PREF_KEY));
  return [0, 2000, 5000, 15000, 30000].includes(v) && localStorage.getItem(PREF_KEY) !== null ? v : 5000;
}

/** Refresh period in ms; 0 pauses live refresh. */
export const refreshMs = store<number>(loadPref());
refreshMs.subscribe((v) => localStorage.setItem(PREF_KEY, String(v)));
/** Bumped after every refresh cycle. */
export const tick = store(0);
export const snapshot = store<Snapshot>({ at: 0 });
export const samples = store<Sample[]>(loadSamples());
const queueRing = new Map<string, QueueSample[]>();
export const queueSamplesVersion = store(0);

export function queueSamples(name: string): QueueSample[] {
  return queueRing.get(name) ?? [];
}

function loadSamples(): Sample[] {
  try {
    const raw = JSON.parse(localStorage.getItem(STORE_KEY) ?? '[]') as Sample[];
    const from = Date.now() / 1000 - WINDOW_SEC;
    return Array.isArray(raw) ? raw.filter((s) => s && typeof s.t === 'number' && s.t >= from) : [];
  } catch {
    return [];
  }
}

let prev: { t: number; pushed: number; popped: number; acked: number; uptime: number } | undefined;
let overviewMissing = false;
let running = false;

async function settle<T>(p: Promise<T>): Promise<{ ok: true; v: T } | { ok: false; e: ApiError }> {
  try {
    return { ok: true, v: await p };
  } catch (e) {
    return { ok: false, e: e instanceof ApiError ? e : new ApiError(0, 'error', String(e)) };
  }
}

async function dlqDepth(): Promise<{ depth?: number; capped?: boolean }> {
  if (!overviewMissing) {
    const r = await settle(api<Obj>('/api/v1/resources/overview'));
    if (r.ok) {
      const m = obj(obj(r.v).messages);
      if (m.deadLetter !== undefined) return { depth: num(m.deadLetter) };
    } else if (r.e.missingRoute) overviewMissing = true;
  }
  const LIMIT = 1000;
  const r = await settle(api<Obj>('/api/v1/dlq', { query: { limit: LIMIT } }));
  if (!r.ok) return {};
  const n = Array.isArray(obj(r.v).messages) ? (obj(r.v).messages as unknown[]).length : 0;
  return { depth: n, capped: n >= LIMIT };
}

/**
 * Brokers without `GET /api/v1/consumer-groups` still report each queue's groups (and, when
 * newer, their lag) in the queue detail: read those for up to 50 queues.
 */
async function groupsFromDetails(queues: QueueRow[]): Promise<GroupRow[]> {
  const named = queues.filter((q) => q.groups.some((g) => g !== QUEUE_MODE)).slice(0, 50);
  const details = await Promise.all(named.map((q) => settle(api<QueueAnswer>(`/api/v1/resources/queues/${enc(q.name)}`))));
  const out: GroupRow[] = [];
  for (const d of details) {
    if (!d.ok) continue;
    const qd = readQueueDetail(d.v);
    for (const g of qd.groups) {
      if (g.name === QUEUE_MODE) continue;
      out.push({
        name: g.name, queue: qd.name, members: 0, totalLag: g.totalLag ?? 0, partitionsWithLag: g.partitionsWithLag ?? 0, maxTimeLag: g.timeLag,
        state: '', subscriptionMode: g.subscriptionMode, subscriptionTimestamp: g.subscriptionTimestamp, partitions: [],
      });
    }
  }
  return out;
}

/** One refresh cycle. Safe to call at any time (overlapping calls are merged). */
export async function refresh(): Promise<void> {
  if (running) return;
  running = true;
  try {
    const [health, metrics, queues, groups, dlq] = await Promise.all([
      settle(api<HealthAnswer>('/health')),
      settle(api<Obj>('/metrics')),
      settle(api<QueuesAnswer>('/api/v1/resources/queues')),
      settle(api<ConsumerGroupsAnswer>('/api/v1/consumer-groups')),
      dlqDepth(),
    ]);
    const now = Date.now() / 1000;
    const snap: Snapshot = { at: Date.now() };
    if (health.ok) snap.health = obj(health.v);
    else if (health.e.body) snap.health = obj(health.e.body);
    if (queues.ok) snap.queues = readQueues(queues.v);
    else snap.queuesError = queues.e;
    if (groups.ok) snap.groups = readGroups(groups.v);
    else if (groups.e.missingRoute && snap.queues) snap.groups = await groupsFromDetails(snap.queues);
    else snap.groupsError = groups.e;
    snap.dlqDepth = dlq.depth;
    snap.dlqCapped = dlq.capped;

    let rateIn: number | null = null;
    let rateOut: number | null = null;
    if (metrics.ok) {
      const m = obj(metrics.v);
      snap.metrics = m;
      const cur = {
        t: now,
        pushed: num(obj(m.push).messages, obj(m.messages).total),
        popped: num(obj(m.pop).messages),
        acked: num(obj(m.ack).messages),
        uptime: num(m.uptime),
      };
      if (prev && cur.t > prev.t && cur.uptime >= prev.uptime && cur.pushed >= prev.pushed) {
        const dt = cur.t - prev.t;
        rateIn = (cur.pushed - prev.pushed) / dt;
        rateOut = Math.max(0, cur.popped - prev.popped) / dt;
        snap.rateAck = Math.max(0, cur.acked - prev.acked) / dt;
      }
      prev = cur;
    }
    if (rateIn !== null) snap.rateIn = rateIn;
    if (rateOut !== null) snap.rateOut = rateOut;

    const depth = snap.queues ? snap.queues.reduce((a, q) => a + q.pending, 0) : null;
    // the same figure as the overview's "Total lag": named groups only (queue mode is the backlog)
    const lag = snap.groups ? snap.groups.filter((g) => g.name !== QUEUE_MODE).reduce((a, g) => a + g.totalLag, 0) : null;
    const s: Sample = { t: now, in: rateIn, out: rateOut, depth, lag, dlq: snap.dlqDepth ?? null };
    samples.set((list) => {
      const next = list.filter((x) => x.t >= now - WINDOW_SEC);
      next.push(s);
      try {
        localStorage.setItem(STORE_KEY, JSON.stringify(next));
      } catch {
        /* storage full or disabled: the ring still lives in memory */
      }
      return next;
    });

    if (snap.queues) {
      const seen = new Set<string>();
      for (const q of snap.queues) {
        seen.add(q.name);
        const ring = queueRing.get(q.name) ?? [];
        const last = ring[ring.length - 1];
        const done = Math.max(0, q.total - q.pending - q.processing);
        const dt = last ? now - last.t : 0;
        const qin = last && dt > 0 && q.total >= last.total ? (q.total - last.total) / dt : null;
        const qout = last && dt > 0 ? Math.max(0, done - last.done) / dt : null;
        ring.push({ t: now, in: qin, out: qout, depth: q.pending, total: q.total, done });
        while (ring.length > 0 && ring[0]!.t < now - WINDOW_SEC) ring.shift();
        queueRing.set(q.name, ring);
      }
      for (const k of [...queueRing.keys()]) if (!seen.has(k)) queueRing.delete(k);
      queueSamplesVersion.set((v) => v + 1);
    }
    snapshot.set(snap);
  } finally {
    running = false;
    tick.set((n) => n + 1);
  }
}

let timer: ReturnType<typeof setTimeout> | undefined;

function schedule(ms: number): void {
  if (timer) clearTimeout(timer);
  timer = undefined;
  const period = refreshMs.get();
  if (period === 0) return;
  timer = setTimeout(async () => {
    if (document.visibilityState === 'visible') await refresh();
    schedule(refreshMs.get());
  }, ms);
}

/** Starts the loop: an immediate read, a quick second one (so rates appear), then the period. */
export function startLive(): void {
  void refresh().then(() => schedule(1500));
  refreshMs.subscribe(() => schedule(refreshMs.get()));
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && refreshMs.get() !== 0) {
      void refresh();
      schedule(refreshMs.get());
    }
  });
}

export interface Loaded<T> {
  data?: T;
  error?: ApiError;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads `fn` when `key` changes and again on every live tick. Keeps the last good data across
 * refresh errors; clears it when `key` changes.
 */
export function usePoll<T>(fn: (signal: AbortSignal) => Promise<T>, key: string, enabled = true): Loaded<T> {
  const t = useStore(tick);
  const [state, setState] = useState<{ key: string; data?: T; error?: ApiError; loading: boolean }>({ key, loading: enabled });
  const [nonce, setNonce] = useState(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  useEffect(() => {
    if (!enabled) {
      setState({ key, loading: false });
      return;
    }
    const ac = new AbortController();
    setState((s) => (s.key === key ? { ...s, loading: true } : { key, loading: true }));
    fnRef
      .current(ac.signal)
      .then((data) => {
        if (!ac.signal.aborted) setState({ key, data, loading: false });
      })
      .catch((e: unknown) => {
        if (ac.signal.aborted || (e as Error).name === 'AbortError') return;
        const err = e instanceof ApiError ? e : new ApiError(0, 'error', String(e));
        setState((s) => ({ key, data: s.key === key ? s.data : undefined, error: err, loading: false }));
      });
    return () => ac.abort();
  }, [key, t, nonce, enabled]);
  const reload = useCallback(() => setNonce((n) => n + 1), []);
  const same = state.key === key;
  return { data: same ? state.data : undefined, error: same ? state.error : undefined, loading: !same || state.loading, reload };
}
