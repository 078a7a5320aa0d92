/**
 * Cross-node wake-up hints over PostgreSQL LISTEN/NOTIFY (design B6, docs/storage.md#postgresql-backend,
 * docs/storage.md#postgresql-backend): the hints of a transaction are sent with `pg_notify` on the
 * channel `queen_wake` inside that transaction, so PostgreSQL delivers them only after COMMIT; one
 * dedicated connection (outside the pool) LISTENs and hands the hints of other nodes to the
 * backend's ready listeners. A hint is never the only path to a message: parked pops keep their own
 * back-off re-check, so a lost hint (a dropped LISTEN connection) costs time, never a message.
 *
 * Payload: `{"s":"<server id>","i":[["<tenant>","<queue>",["<partition>",…],<visibleAtMs|null>],…]}`,
 * at most {@link MAX_PAYLOAD} bytes, split into several notifications when longer.
 */
import pg from 'pg';
import type { ClientConfig, PoolClient } from 'pg';
import type { QueueKey } from '../contract.js';

/** The channel wake-up hints travel on. */
export const WAKE_CHANNEL = 'queen_wake';
/** PostgreSQL's NOTIFY payload limit is 8000 bytes; keep a margin. */
export const MAX_PAYLOAD = 7900;

/** One wake-up hint: partitions of a queue that became claimable (at `visibleAt`, epoch ms, when later). */
export interface Hint {
  tenant: string;
  queue: string;
  partitions: string[];
  visibleAt: number | null;
}

type WireItem = [string, string, string[], number | null];

/** Hints merged by (tenant, queue, visibleAt), partitions deduplicated, in first-seen order. */
export function mergeHints(hints: Hint[]): Hint[] {
  const by = new Map<string, Hint>();
  for (const h of hints) {
    const k = JSON.stringify([h.tenant, h.queue, h.visibleAt]);
    const cur = by.get(k);
    if (!cur) by.set(k, { ...h, partitions: [...new Set(h.partitions)] });
    else for (const p of h.partitions) if (!cur.partitions.includes(p)) cur.partitions.push(p);
  }
  return [...by.values()];
}

/** The NOTIFY payloads carrying `hints` from `serverId`, each at most {@link MAX_PAYLOAD} bytes. */
export function encodeHints(serverId: string, hints: Hint[]): string[] {
  const out: string[] = [];
  let items: WireItem[] = [];
  const size = (it: WireItem[]) => Buffer.byteLength(JSON.stringify({ s: serverId, i: it }));
  for (const h of hints) {
    for (let k = 0; k < h.partitions.length || k === 0; k += 50) {
      const item: WireItem = [h.tenant, h.queue, h.partitions.slice(k, k + 50), h.visibleAt];
      if (items.length > 0 && size([...items, item]) > MAX_PAYLOAD) {
        out.push(JSON.stringify({ s: serverId, i: items }));
        items = [];
      }
      if (size([item]) <= MAX_PAYLOAD) items.push(item); // a name too long to carry is left to the re-check
      if (h.partitions.length === 0) break;
    }
  }
  if (items.length > 0) out.push(JSON.stringify({ s: serverId, i: items }));
  return out;
}

/** Sends `hints` inside the open transaction of `client` (delivered after its COMMIT); returns how many NOTIFYs. */
export async function notifyHints(client: PoolClient, serverId: string, hints: Hint[]): Promise<number> {
  const payloads = encodeHints(serverId, hints);
  for (const payload of payloads) await client.query('SELECT pg_notify($1, $2)', [WAKE_CHANNEL, payload]);
  return payloads.length;
}

/**
 * The LISTEN side: one connection, reconnected with back-off (250 ms doubling to 5 s) when lost;
 * hints from other servers go to `deliver`.
 */
export class WakeListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private backoffMs = 250;
  private timer: NodeJS.Timeout | undefined;
  /** Notifications received from other nodes. */
  received = 0;
  /** Reconnections (listening again) after a lost LISTEN connection. */
  reconnects = 0;

  constructor(
    private readonly config: ClientConfig,
    private readonly serverId: string,
    private readonly deliver: (queue: QueueKey, partitions: string[], visibleAt: number | null) => void,
    private readonly onError: (e: Error) => void = () => undefined,
  ) {}

  /** Connects and LISTENs; resolves once listening (rejects when the first connection fails). */
  async start(): Promise<void> {
    await this.connect();
  }

  /**
   * Keeps trying to LISTEN in the background with the reconnect back-off (a hot standby refuses
   * LISTEN until it is promoted, docs/cluster.md#standby).
   */
  startLater(): void {
    this.retry();
  }

  /** True while the LISTEN connection is up. */
  get listening(): boolean {
    return this.client !== undefined;
  }

  private async connect(): Promise<void> {
    const c = new pg.Client(this.config);
    c.on('error', (e) => { this.onError(e); this.lost(c); });
    c.on('end', () => this.lost(c));
    c.on('notification', (n) => { if (n.channel === WAKE_CHANNEL && n.payload) this.handle(n.payload); });
    try {
      await c.connect();
      await c.query(`LISTEN ${WAKE_CHANNEL}`);
    } catch (e) {
      c.removeAllListeners('end');
      await c.end().catch(() => undefined);
      throw e;
    }
    this.client = c;
    this.backoffMs = 250;
  }

  private lost(c: pg.Client): void {
    if (this.client !== c) return;
    this.client = undefined;
    c.removeAllListeners('end');
    void c.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    if (this.stopped || this.timer) return;
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 5_000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.connect().then(() => { this.reconnects++; }, (e: unknown) => { this.onError(e as Error); this.retry(); });
    }, wait);
    this.timer.unref();
  }

  private handle(payload: string): void {
    let msg: { s?: unknown; i?: unknown };
    try {
      msg = JSON.parse(payload) as { s?: unknown; i?: unknown };
    } catch {
      return;
    }
    if (msg.s === this.serverId || !Array.isArray(msg.i)) return;
    this.received++;
    for (const it of msg.i as unknown[]) {
      if (!Array.isArray(it) || it.length !== 4) continue;
      const [tenant, queue, parts, at] = it as unknown[];
      if (typeof tenant !== 'string' || typeof queue !== 'string' || !Array.isArray(parts)) continue;
      this.deliver({ tenant, queue }, parts.filter((p): p is string => typeof p === 'string'), typeof at === 'number' ? at : null);
    }
  }

  /** Stops listening and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    if (c) await c.end().catch(() => undefined);
  }
}
