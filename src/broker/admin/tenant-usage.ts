/**
 * What a tenant holds in the broker, as the embedded proxy's quotas and purge read and remove it
 * (docs/proxy.md#quotas-and-limits, docs/proxy.md#control-plane; public reference
 * `server/src/quota.rs`): partitions per queue, whether one partition exists, the bytes of its
 * stored payloads, and the removal of its KV rows, lock permits and timers. Every read goes through
 * the storage contract (src/storage/contract.ts); callers cache and sample them.
 */
import type { QueueBackend } from '../../storage/contract.js';

/** The tenant reads and the coordination purge of one broker. */
export class TenantUsage {
  constructor(private readonly backend: QueueBackend) {}

  /** Partitions per queue of `tenant` (queue name → count). One indexed read per queue; no message is read. */
  partitionCounts(tenant: string): Promise<Map<string, number>> {
    return this.backend.admin.partitionCounts(tenant);
  }

  /** True when partition `partition` of queue `queue` of `tenant` exists (a point read). */
  async partitionExists(tenant: string, queue: string, partition: string): Promise<boolean> {
    return (await this.backend.readPartition({ tenant, queue, partition })) !== undefined;
  }

  /** Bytes of stored payloads of `tenant`'s live messages (a scan of its messages: sample it). */
  retainedBytes(tenant: string): Promise<number> {
    return this.backend.admin.retainedBytes(tenant);
  }

  /**
   * Removes every KV row (lock permits included) and every timer of `tenant`.
   * @returns rows removed: `kv` (KV entries and lock permits), `timers`
   */
  async purgeCoordination(tenant: string): Promise<{ kv: number; timers: number }> {
    const kv = await this.backend.kv.purgeTenant(tenant);
    const timers = await this.backend.timers.purgeTenant(tenant);
    return { kv, timers };
  }
}
