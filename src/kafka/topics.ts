/**
 * The topic catalog (docs/kafka.md#mapping): a topic is a queue of the same name; its advertised
 * width is max(materialised partitions, the width CreateTopics recorded, else
 * QUEEN_KAFKA_DEFAULT_PARTITIONS), clamped at 100000, never shrinking. Queues created for Kafka get
 * dedup off (records carry no transactionId) and retention off unless `retention.ms` says otherwise.
 * The topic record (width and configs of a topic created through Kafka) is kept in the side table
 * `kafka_topics` (docs/kafka.md#storage), so widths survive a restart (keys keep hashing to the same
 * partitions). Records an earlier build kept in the KV namespace {@link LEGACY_TOPIC_RECORDS} are
 * moved into the table when the catalog first loads.
 */
import type { KvGetPrefixResult } from '../broker/coordination/kv.js';
import type { Services } from '../broker/services.js';
import { RawJson } from '../util/json.js';
import type { KafkaConfig } from '../config/kafka.js';
import { partitionIndex, visibleTopic } from './mapping.js';

export const MAX_WIDTH = 100_000;
/** KV namespace where earlier builds kept topic records; emptied into `kafka_topics` at load. */
export const LEGACY_TOPIC_RECORDS = 'queen.kafka.topics';

interface TopicRecord {
  width: number;
  configs: Record<string, string>;
}

/** A topic as Metadata shows it. */
export interface TopicView {
  name: string;
  width: number;
}

export class Topics {
  /** Widths recorded by CreateTopics (cached from the topic records). */
  private readonly widths = new Map<string, number>();
  /** Configs recorded by CreateTopics, reported by DescribeConfigs. */
  readonly configs = new Map<string, Map<string, string>>();

  private loaded: Promise<void> | undefined;

  constructor(private readonly services: Services, private readonly config: KafkaConfig) {}

  /**
   * Loads the topic records once: first moves legacy KV records into the table (a record whose
   * queue is gone is dropped), then reads the table.
   * @throws the store's error (the next call tries again)
   */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      await this.migrateLegacy();
      for (const r of await this.services.kafkaMeta.topics()) {
        this.widths.set(r.topic, r.width);
        this.configs.set(r.topic, new Map(Object.entries(r.configs)));
      }
    })().catch((e: unknown) => {
      this.loaded = undefined;
      throw e;
    });
    return this.loaded;
  }

  private async migrateLegacy(): Promise<void> {
    for (;;) {
      const answer = await this.services.kv.batch([{ op: 'getPrefix', ns: LEGACY_TOPIC_RECORDS, prefix: '', limit: 1000, keysOnly: false }]);
      if (!answer.ok) return;
      const page = answer.results[0] as KvGetPrefixResult;
      if (page.rows.length === 0) return;
      for (const row of page.rows) {
        const v = (row.value instanceof RawJson ? JSON.parse(row.value.text) : row.value) as Partial<TopicRecord> | null;
        if (typeof v?.width === 'number') await this.services.kafkaMeta.putTopic(row.key, v.width, v.configs ?? {});
        await this.services.kv.batch([{ op: 'delete', ns: LEGACY_TOPIC_RECORDS, key: row.key, required: false }]);
      }
    }
  }

  /** The topic of queue `name`, or undefined when the queue does not exist or is not visible to Kafka. */
  async get(name: string): Promise<TopicView | undefined> {
    if (!visibleTopic(name)) return undefined;
    await this.load();
    const parts = await this.services.logs.partitions(name);
    if (!parts) {
      // Deleted (natively, or by another path): its record no longer applies (kafka_topics is bound to the queue's id).
      this.widths.delete(name);
      this.configs.delete(name);
      return undefined;
    }
    let top = -1;
    for (const p of parts) {
      const i = partitionIndex(p.name);
      if (i !== undefined && i > top) top = i;
    }
    const floor = this.widths.get(name) ?? this.config.defaultPartitions;
    return { name, width: Math.min(MAX_WIDTH, Math.max(parts.length, top + 1, floor)) };
  }

  /** Every visible topic. */
  async all(): Promise<TopicView[]> {
    const out: TopicView[] = [];
    for (const name of await this.services.logs.queueNames()) {
      const t = await this.get(name);
      if (t) out.push(t);
    }
    return out;
  }

  /**
   * Creates the queue for a topic (dedup off; retention per `retentionSeconds`, 0 = off), then
   * records its width and configs (the record is bound to the queue's id, so it follows the queue).
   * @throws QueenError from the broker's configure; the store's error from the record write
   */
  async create(name: string, width: number, retentionSeconds = 0, configs: Map<string, string> = new Map()): Promise<TopicView> {
    await this.load();
    await this.services.broker.configure({
      queue: name, mode: 'merge',
      options: { dedupWindowSeconds: 0, retentionEnabled: retentionSeconds > 0, retentionSeconds },
    });
    await this.services.kafkaMeta.putTopic(name, width, Object.fromEntries(configs));
    this.widths.set(name, width);
    this.configs.set(name, configs);
    return { name, width };
  }

  /** Deletes the queue of a topic with its record and commit metadata; false when it did not exist. */
  async delete(name: string): Promise<boolean> {
    await this.load();
    this.widths.delete(name);
    this.configs.delete(name);
    await this.services.kafkaMeta.deleteTopic(name);
    return (await this.services.broker.deleteQueue(name)).existed;
  }
}
