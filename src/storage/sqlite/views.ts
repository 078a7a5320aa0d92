/**
 * The operator-view reads of the contract (src/storage/contract.ts `ViewsSubStore`) on the SQLite
 * backend: the model is the engine's in-memory indexes themselves (the accelerator this single
 * writer keeps in step with every commit; docs/storage.md#in-memory-indexes), point reads go to the
 * store. The views only read what they are handed.
 */
import type { PartitionKey, ViewGroup, ViewModel, ViewPartition, ViewQueue, ViewsSubStore } from '../contract.js';
import type { ListedMessage, MessagePageQuery } from '../ops.js';
import type { MessageRow } from '../store.js';
import type { Engine } from './engine.js';
import type { SqliteStore } from './store.js';

/** The tenant's part of the engine's indexes as a {@link ViewModel} (no copy). */
class EngineViewModel implements ViewModel {
  constructor(private readonly engine: Engine, private readonly store: SqliteStore, private readonly tenant: string) {}

  queue(name: string): ViewQueue | undefined {
    return this.engine.queue(this.tenant, name);
  }

  queues(): Iterable<ViewQueue> {
    return this.engine.tenantQueues(this.tenant);
  }

  partitionById(id: string): ViewPartition | undefined {
    const p = this.engine.partitionsById.get(id);
    return p && p.queue.tenant === this.tenant ? p : undefined;
  }

  partitionByPk(pk: number): ViewPartition | undefined {
    const p = this.engine.partitionsByPk.get(pk);
    return p && p.queue.tenant === this.tenant ? p : undefined;
  }

  /** One O(log n) store probe (binary search over offsets). */
  subscriptionStart(g: ViewGroup, p: ViewPartition): number {
    const from = g.subscription.fromTime;
    if (g.subscription.mode === 'all' || from === null) return p.firstOffset;
    if (p.lastMessageAt === null || p.lastMessageAt <= from) return p.headOffset;
    return this.store.firstOffsetAfter(p.pk, p.firstOffset, from) ?? p.headOffset;
  }
}

/** {@link ViewsSubStore} over the engine and its store. */
export class SqliteViews implements ViewsSubStore {
  constructor(private readonly engine: Engine, private readonly store: SqliteStore) {}

  model(tenant: string): Promise<ViewModel> {
    return Promise.resolve(new EngineViewModel(this.engine, this.store, tenant));
  }

  private owns(tenant: string, partitionPk: number): boolean {
    return this.engine.partitionsByPk.get(partitionPk)?.queue.tenant === tenant;
  }

  createdAtFrom(tenant: string, partitionPk: number, offset: number): Promise<number | undefined> {
    return Promise.resolve(this.owns(tenant, partitionPk) ? this.store.ops.createdAtFrom(partitionPk, offset) : undefined);
  }

  listMessages(tenant: string, q: MessagePageQuery): Promise<ListedMessage[]> {
    if (this.engine.queuesByPk.get(q.queuePk)?.tenant !== tenant) return Promise.resolve([]);
    return Promise.resolve(this.store.ops.listMessages(q));
  }

  findMessage(tenant: string, partitionId: string, transactionId: string, since: number): Promise<MessageRow | undefined> {
    const p = this.engine.partitionsById.get(partitionId);
    return Promise.resolve(p && p.queue.tenant === tenant ? this.store.findByTransactionId(p.pk, transactionId, since) : undefined);
  }

  locate(tenant: string, partitionId: string): Promise<PartitionKey | undefined> {
    const p = this.engine.partitionsById.get(partitionId);
    return Promise.resolve(p && p.queue.tenant === tenant ? { tenant, queue: p.queue.name, partition: p.name } : undefined);
  }

  dlqDepth(tenant: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [pk, n] of this.store.ops.dlqDepthByQueue()) {
      const q = this.engine.queuesByPk.get(pk);
      if (q && q.tenant === tenant) out.set(q.name, n);
    }
    return Promise.resolve(out);
  }

  payloadHeads(bytes: number): Promise<Buffer[]> {
    return Promise.resolve(this.store.payloadHeads(bytes));
  }

  settings(): Promise<Map<string, string>> {
    return Promise.resolve(this.store.loadSettings());
  }
}
