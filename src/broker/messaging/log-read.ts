/**
 * Offset-addressed access to partition logs for front doors that speak a log protocol (the Kafka
 * port, docs/kafka.md#mapping): read from an offset without leases, log bounds, the first offset
 * at a time, and a consumer group's position read and set directly. Setting a position behaves
 * like a seek: it releases a live lease of that group on the partition and keeps the retry
 * counter. No wire format here: callers translate.
 */
import { DEFAULT_TENANT, type QueueBackend } from '../../storage/contract.js';
import type { GroupPosition, LogEntry, LogReadStore, PartitionBounds } from '../../storage/log-read.js';
import type { Clock } from '../../util/clock.js';

export type { GroupPosition, LogEntry, PartitionBounds } from '../../storage/log-read.js';

/** Partition logs of the default tenant by offset (see the module comment). */
export class PartitionLogs {
  constructor(private readonly backend: QueueBackend, private readonly reads: LogReadStore, private readonly clock: Clock) {}

  private key(queue: string, partition: string) {
    return { tenant: DEFAULT_TENANT, queue, partition };
  }

  /** Queue names. */
  queueNames(): Promise<string[]> {
    return this.reads.queueNames(DEFAULT_TENANT);
  }

  /** Partitions of `queue` with their bounds; undefined when the queue does not exist. */
  partitions(queue: string): Promise<PartitionBounds[] | undefined> {
    return this.reads.partitions({ tenant: DEFAULT_TENANT, queue });
  }

  /** Bounds of one partition: head 0 / first 0 when it was never written. */
  async bounds(queue: string, partition: string): Promise<{ headOffset: number; firstOffset: number }> {
    const v = await this.backend.readPartition(this.key(queue, partition));
    return v ? { headOffset: v.headOffset, firstOffset: v.firstOffset } : { headOffset: 0, firstOffset: 0 };
  }

  /**
   * Messages from `fromOffset` on, ascending, at most `limit` and about `maxBytes` of JSON text
   * (the first message always whole). Takes no lease and moves no cursor.
   */
  read(queue: string, partition: string, fromOffset: number, limit: number, maxBytes: number): Promise<LogEntry[]> {
    return this.reads.read(this.key(queue, partition), fromOffset, limit, maxBytes);
  }

  /** The first message appended at or after `timeMs` (epoch ms), or undefined (never an earlier one). */
  firstAtOrAfter(queue: string, partition: string, timeMs: number): Promise<{ offset: number; createdAt: number } | undefined> {
    return this.reads.firstAtOrAfter(this.key(queue, partition), timeMs);
  }

  /** The group's stored position (first offset not consumed) on the partition, or undefined. */
  async position(queue: string, partition: string, group: string): Promise<number | undefined> {
    const c = await this.backend.readCursor({ ...this.key(queue, partition), group });
    return c?.committedOffset;
  }

  /** Every stored position of `group` over all queues. */
  positions(group: string): Promise<GroupPosition[]> {
    return this.reads.groupPositions(DEFAULT_TENANT, group);
  }

  /** Consumer groups registered on any queue. */
  groupNames(): Promise<string[]> {
    return this.reads.groupNames(DEFAULT_TENANT);
  }

  /**
   * Sets `group`'s position on a partition to `offset` (the first offset not consumed), clamped to
   * the partition's head; creates the partition and registers the group when missing. Releases a
   * live lease of the group there; the retry counter is kept.
   * @returns the offset stored, and whether it was clamped
   */
  async setPosition(queue: string, partition: string, group: string, offset: number): Promise<{ offset: number; clamped: boolean }> {
    const now = this.clock.now();
    const key = this.key(queue, partition);
    let part = await this.backend.readPartition(key);
    if (!part) {
      await this.backend.append({ key, items: [], dedupWindowMs: 0, now });
      part = await this.backend.readPartition(key);
    }
    const head = part?.headOffset ?? 0;
    const to = Math.min(offset, head);
    await this.reads.ensureGroup({ ...key, group }, now);
    const current = await this.backend.readCursor({ ...key, group });
    const r = await this.backend.commitCursor({
      key: { ...key, group }, leaseId: null, committedOffset: to, retryCount: current?.retryCount ?? 0, release: true, now,
    });
    if (!r.applied) throw new Error(`position of ${group} on ${queue}/${partition} was not stored`);
    return { offset: to, clamped: to !== offset };
  }

  /** Removes `group`'s stored position on the partition (its next reader starts where its subscription says). */
  clearPosition(queue: string, partition: string, group: string): Promise<void> {
    return this.reads.clearPosition({ ...this.key(queue, partition), group }, this.clock.now());
  }

  /** Calls `listener` with the queue name after messages were appended to it (a hint, after commit). */
  onAppended(listener: (queue: string) => void): void {
    this.backend.onPartitionsReady((q) => listener(q.queue));
  }
}
