/**
 * {@link LogReadStore} on the engine's in-memory indexes and the SQLite store (every tenant):
 * bounds and group positions from memory, messages by offset from the store.
 */
import type { CursorKey, PartitionKey, QueueKey } from '../contract.js';
import type { GroupPosition, LogEntry, LogReadStore, PartitionBounds } from '../log-read.js';
import type { Engine } from './engine.js';
import { QUEUE_MODE } from './state.js';

export class SqliteLogReads implements LogReadStore {
  constructor(private readonly engine: Engine, private readonly run: <T>(work: (tx: Parameters<Engine['ensureQueue']>[0]) => T) => Promise<T>) {}

  queueNames(tenant: string): Promise<string[]> {
    return Promise.resolve([...this.engine.tenantQueues(tenant)].map((q) => q.name));
  }

  partitions(queue: QueueKey): Promise<PartitionBounds[] | undefined> {
    const q = this.engine.queue(queue.tenant, queue.queue);
    if (!q) return Promise.resolve(undefined);
    return Promise.resolve([...q.partitions.values()].map((p) => ({ name: p.name, headOffset: p.headOffset, firstOffset: p.firstOffset })));
  }

  read(key: PartitionKey, fromOffset: number, limit: number, maxBytes: number): Promise<LogEntry[]> {
    const p = this.engine.queue(key.tenant, key.queue)?.partitions.get(key.partition);
    if (!p) return Promise.resolve([]);
    const out: LogEntry[] = [];
    let bytes = 0;
    let from = Math.max(fromOffset, p.firstOffset);
    while (out.length < limit && from < p.headOffset) {
      const rows = this.engine.store.readMessages(p.pk, from, Math.min(500, limit - out.length));
      if (rows.length === 0) break;
      for (const m of rows) {
        let json: string | null;
        try {
          json = this.engine.codec.decode(m.payload, m.encrypted);
        } catch {
          json = null;
        }
        const size = json?.length ?? 0;
        if (out.length > 0 && bytes + size > maxBytes) return Promise.resolve(out);
        bytes += size;
        out.push({ offset: m.offset, createdAt: m.createdAt, json });
      }
      from = rows[rows.length - 1]!.offset + 1;
    }
    return Promise.resolve(out);
  }

  firstAtOrAfter(key: PartitionKey, timeMs: number): Promise<{ offset: number; createdAt: number } | undefined> {
    const p = this.engine.queue(key.tenant, key.queue)?.partitions.get(key.partition);
    if (!p) return Promise.resolve(undefined);
    const offset = this.engine.store.firstOffsetAfter(p.pk, p.firstOffset, timeMs - 1);
    if (offset === undefined) return Promise.resolve(undefined);
    const m = this.engine.store.readMessage(p.pk, offset);
    return Promise.resolve(m ? { offset, createdAt: m.createdAt } : undefined);
  }

  groupPositions(tenant: string, group: string): Promise<GroupPosition[]> {
    const out: GroupPosition[] = [];
    for (const q of this.engine.tenantQueues(tenant)) {
      const g = q.groups.get(group);
      if (!g) continue;
      for (const p of q.partitions.values()) {
        const c = g.cursors.get(p.pk);
        if (c?.materialized) out.push({ queue: q.name, partition: p.name, committedOffset: c.committedOffset });
      }
    }
    return Promise.resolve(out);
  }

  groupNames(tenant: string): Promise<string[]> {
    const names = new Set<string>();
    for (const q of this.engine.tenantQueues(tenant)) for (const g of q.groups.keys()) if (g !== QUEUE_MODE) names.add(g);
    return Promise.resolve([...names]);
  }

  async ensureGroup(key: CursorKey, now: number): Promise<void> {
    if (this.engine.queue(key.tenant, key.queue)?.groups.has(key.group) !== false) return;
    await this.run((tx) => {
      const q = this.engine.queue(key.tenant, key.queue);
      if (q) this.engine.ensureGroup(tx, q, key.group, { mode: 'all' }, now);
    });
  }

  async clearPosition(key: CursorKey, now: number): Promise<void> {
    const e = this.engine;
    await this.run((tx) => {
      const q = e.queue(key.tenant, key.queue);
      const p = q?.partitions.get(key.partition);
      const g = q?.groups.get(key.group);
      const c = p && g ? g.cursors.get(p.pk) : undefined;
      if (!p || !g || !c) return;
      e.noteCursor(g, p, c); // a rolled-back unit puts the cursor back
      if (c.leaseId !== null) e.untrackLease(c.leaseId, g, p);
      g.cursors.delete(p.pk);
      tx.deleteCursor(p.pk, g.name);
      if (e.maybeReady(g, p, now)) {
        g.ready.add(p);
        tx.afterCommit(() => e.markReady(g, p));
      }
    });
  }
}
