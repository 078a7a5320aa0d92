/**
 * The Kafka port's side tables for the default tenant (docs/kafka.md#storage; the sub-store is
 * src/storage/kafka-meta.ts): topic records, commit metadata and the group index. No wire format
 * here: the Kafka front door translates. Times come from the broker's clock.
 */
import { DEFAULT_TENANT, type QueueBackend } from '../../storage/contract.js';
import type { KafkaOffsetMeta, KafkaTopicRecord } from '../../storage/kafka-meta.js';
import type { Clock } from '../../util/clock.js';

export type { KafkaOffsetMeta, KafkaTopicRecord } from '../../storage/kafka-meta.js';

/** The side tables of the default tenant (see the module comment). */
export class KafkaSideTables {
  constructor(private readonly backend: QueueBackend, private readonly clock: Clock) {}

  /**
   * Records the width floor and configs of an existing queue created through Kafka.
   * @returns false when the queue does not exist (nothing written)
   */
  putTopic(topic: string, width: number, configs: Record<string, string>): Promise<boolean> {
    return this.backend.kafka.putTopic(DEFAULT_TENANT, topic, width, configs, this.clock.now());
  }

  /** Removes a topic record and the commit metadata on the topic; returns whether a record existed. */
  deleteTopic(topic: string): Promise<boolean> {
    return this.backend.kafka.deleteTopic(DEFAULT_TENANT, topic);
  }

  /** Topic records of live queues, by topic. */
  topics(): Promise<KafkaTopicRecord[]> {
    return this.backend.kafka.topics(DEFAULT_TENANT);
  }

  /** Stores commit metadata ('' removes it) in one transaction and indexes the group. */
  commitMeta(group: string, rows: KafkaOffsetMeta[]): Promise<void> {
    return this.backend.kafka.commitMeta(DEFAULT_TENANT, group, rows, this.clock.now());
  }

  /** The group's commit metadata. */
  offsetMeta(group: string): Promise<KafkaOffsetMeta[]> {
    return this.backend.kafka.offsetMeta(DEFAULT_TENANT, group);
  }

  /** Adds a group to the durable index (idempotent). */
  indexGroup(group: string): Promise<void> {
    return this.backend.kafka.indexGroup(DEFAULT_TENANT, group, this.clock.now());
  }

  /** Indexed group ids, ascending. */
  groups(): Promise<string[]> {
    return this.backend.kafka.groups(DEFAULT_TENANT);
  }

  /** Removes a group from the index with its commit metadata; returns whether it was indexed. */
  deleteGroup(group: string): Promise<boolean> {
    return this.backend.kafka.deleteGroup(DEFAULT_TENANT, group);
  }
}
