/**
 * Reading partition logs by offset (docs/storage.md#operation-contract), beside the operation
 * contract (src/storage/contract.ts): what a log-structured front door (the Kafka port) needs
 * that pop does not give — messages from an offset without a lease, the first offset at a time,
 * the partitions of a queue with their bounds, and a group's positions over every queue. Every
 * call is async so a PostgreSQL backend can implement it with one statement each.
 */
import type { CursorKey, PartitionKey, QueueKey } from './contract.js';

/** A partition with its log bounds. */
export interface PartitionBounds {
  name: string;
  /** Exclusive end of the log (the next offset). */
  headOffset: number;
  /** Lowest offset still stored (retention moves it up). */
  firstOffset: number;
}

/** One message as read from the log: its JSON text, or null when the stored payload failed authentication. */
export interface LogEntry {
  offset: number;
  /** Broker append time, epoch ms. */
  createdAt: number;
  json: string | null;
}

/** A group's position on one partition (`committedOffset`: the first offset not consumed). */
export interface GroupPosition {
  queue: string;
  partition: string;
  committedOffset: number;
}

/** Offset-addressed reads (see the module comment). */
export interface LogReadStore {
  /** Queues of a tenant by name. */
  queueNames(tenant: string): Promise<string[]>;
  /** Partitions of a queue with their bounds; undefined when the queue does not exist. */
  partitions(queue: QueueKey): Promise<PartitionBounds[] | undefined>;
  /** Up to `limit` messages with offset ≥ `fromOffset`, ascending, stopping once `maxBytes` of JSON text is reached (the first is always returned). */
  read(key: PartitionKey, fromOffset: number, limit: number, maxBytes: number): Promise<LogEntry[]>;
  /** The first message whose append time is ≥ `timeMs`, or undefined. */
  firstAtOrAfter(key: PartitionKey, timeMs: number): Promise<{ offset: number; createdAt: number } | undefined>;
  /** Every stored position of consumer group `group`, over all queues of the tenant. */
  groupPositions(tenant: string, group: string): Promise<GroupPosition[]>;
  /** Names of consumer groups registered on any queue of the tenant. */
  groupNames(tenant: string): Promise<string[]>;
  /** Registers `group` on the queue with subscription `all` when it is not (no cursor written). */
  ensureGroup(key: CursorKey, now: number): Promise<void>;
  /** Removes the group's stored position on the partition (and a live lease there); the subscription decides again. */
  clearPosition(key: CursorKey, now: number): Promise<void>;
}
