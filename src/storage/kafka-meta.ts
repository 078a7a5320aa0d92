/**
 * The Kafka port's side tables (docs/kafka.md#storage), a sub-store of the operation contract
 * (contract.ts, `QueueBackend.kafka`): the only durable state the port keeps of its own.
 *
 * - `kafka_topics`: per queue created through Kafka, its width floor (partitions) and the configs
 *   CreateTopics recorded. A record belongs to the queue's public id: a record whose queue was
 *   deleted (or deleted and re-created under the same name) is never returned.
 * - `kafka_offsets_meta`: the `metadata` string of an OffsetCommit, per (group, topic, partition).
 * - `kafka_groups`: the durable index of Kafka group ids (ListGroups lists them `Empty` after a restart).
 *
 * Every key carries the tenant. Times are epoch ms passed in by the caller.
 */

/** A topic record as stored. */
export interface KafkaTopicRecord {
  /** The queue's name (= the topic's). */
  topic: string;
  /** Public id of the queue the record belongs to. */
  queueId: string;
  /** Width floor, partitions (1..100000). */
  width: number;
  /** Configs as CreateTopics recorded them (name → value). */
  configs: Record<string, string>;
  /** Epoch ms. */
  createdAt: number;
}

/** The metadata of one committed offset. */
export interface KafkaOffsetMeta {
  topic: string;
  /** Kafka partition index (the Queen partition named by it). */
  partition: number;
  /** The committed `metadata` string ('' is stored as no row). */
  metadata: string;
}

/** The Kafka side tables (see the module comment). */
export interface KafkaMetaSubStore {
  /**
   * Records (or replaces) the topic record of an existing queue.
   * @returns false, and nothing written, when the queue `topic` does not exist in `tenant`
   */
  putTopic(tenant: string, topic: string, width: number, configs: Record<string, string>, now: number): Promise<boolean>;
  /** Removes a topic record and the commit metadata of every group on the topic; returns whether a record existed. */
  deleteTopic(tenant: string, topic: string): Promise<boolean>;
  /** Topic records of live queues of `tenant`, by topic. */
  topics(tenant: string): Promise<KafkaTopicRecord[]>;
  /**
   * Stores the commit metadata of a group's partitions in one transaction ('' removes the row), and
   * indexes the group.
   */
  commitMeta(tenant: string, group: string, rows: KafkaOffsetMeta[], now: number): Promise<void>;
  /** The group's stored commit metadata, by topic then partition. */
  offsetMeta(tenant: string, group: string): Promise<KafkaOffsetMeta[]>;
  /** Adds `group` to the index (idempotent). */
  indexGroup(tenant: string, group: string, now: number): Promise<void>;
  /** Indexed group ids of `tenant`, ascending. */
  groups(tenant: string): Promise<string[]>;
  /** Removes a group from the index with its commit metadata; returns whether it was indexed. */
  deleteGroup(tenant: string, group: string): Promise<boolean>;
}
