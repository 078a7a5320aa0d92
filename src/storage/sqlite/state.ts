/**
 * The broker's in-memory indexes over the store: queues, partitions, consumer groups with their
 * cursors and ready sets. They are rebuilt from the store at boot and kept in step with every
 * committed unit of work; the store remains the durable truth.
 *
 * Ready set (docs/storage.md#in-memory-indexes): per (queue, group), the partitions that may have something to
 * deliver. Pops look only there, so a pop never scans all partitions.
 */
import { DEFAULT_TENANT } from '../contract.js';
import type { CursorRow, PartitionRow, QueueRow, SubscriptionRow } from '../store.js';

/** The reserved group of pops without `consumerGroup` (competing consumers on one cursor). */
export { QUEUE_MODE } from '../../model/subscription.js';

/** A partition in memory: its stored row, with the queue object in place of the queue's key. */
export interface PartitionState extends Omit<PartitionRow, 'queuePk'> {
  queue: QueueState;
}

/** A cursor in memory; `materialized` is false until the first claim writes its row. */
export interface CursorState extends CursorRow {
  materialized: boolean;
}

export interface GroupState {
  name: string;
  queue: QueueState;
  subscription: SubscriptionRow;
  /** Cursors touched so far, by partition pk (lazy: docs/storage.md#log-model). */
  cursors: Map<number, CursorState>;
  /** Partitions that may have something to deliver to this group, in FIFO order. */
  ready: Set<PartitionState>;
}

/** A queue in memory: its stored row, with its partitions by name and its groups by name. */
export interface QueueState extends QueueRow {
  partitions: Map<string, PartitionState>;
  groups: Map<string, GroupState>;
}

/**
 * The key of a queue in the engine's index: its name for the default tenant (the domain's lookups
 * by name stay as they are), tenant and name otherwise (names are unique per tenant).
 */
export function queueMapKey(tenant: string, name: string): string {
  return tenant === DEFAULT_TENANT ? name : `${tenant}\u0000${name}`;
}

export { namesFromQueue } from '../queue-names.js';

/** True when the cursor holds a lease that has not expired at `now` (ms). */
export function leaseLive(c: CursorRow, now: number): boolean {
  return c.leaseId !== null && c.leaseExpiresAt !== null && c.leaseExpiresAt > now;
}
