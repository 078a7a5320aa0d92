/**
 * The topic catalog (docs/kafka.md#mapping): a topic is a queue of the same name; its advertised
 * width is max(materialised partitions, the width CreateTopics recorded, else
 * QUEEN_KAFKA_DEFAULT_PARTITIONS), clamped at 100000, never shrinking. Queues created for Kafka get
 * dedup off (records carry no transactionId) and retention off unless `retention.ms` says otherwise.
 * The topic record (width and configs of a topic created through Kafka) is kept durably in the KV
 * namespace {@link TOPIC_RECORDS}, so widths survive a restart (keys keep hashing to the same
 * partitions).
 */
import type { KvGetPrefixResult } from '../broker/coordination/kv.js';
import type { Services } from '../broker/services.js';
import { RawJson } from '../util/json.js';
import type { KafkaConfig } from '../config/kafka.js';
import { partitionIndex, visibleTopic } from './mapping.js';

export const MAX_WIDTH = 100_000;
/** KV namespace of the topic records (docs/kafka.md#mapping). */
export const TOPIC_RECORDS = 'queen.kafka.topics';

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

  /** Loads the topic records once (a read of the KV namespace, no commit). */
  private load(): Promise<void> {
    this.loaded ??= (async () => {
      let after: string | undefined;
      for (;;) {
        const answer = await this.services.kv.batch([{ op: 'getPrefix', ns: TOPIC_RECORDS, prefix: '', after, limit: 1000, keysOnly: false }]);
        if (!answer.ok) return;
        const page = answer.results[0] as KvGetPrefixResult;
        for (const row of page.rows) {
          const v = (row.value instanceof RawJson ? JSON.parse(row.value.text) : row.value) as TopicRecord;
          if (typeof v?.width === 'number') {
            this.widths.set(row.key, v.width);
            this.configs.set(row.key, new Map(Object.entries(v.configs ?? {})));
          }
        }
        if (!page.truncated || page.nextAfter === null) return;
        after = page.nextAfter;
      }
    })();
    return this.loaded;
  }

  /** The topic of queue `name`, or undefined when the queue does not exist or is not visible to Kafka. */
  async get(name: string): Promise<TopicView | undefined> {
    if (!visibleTopic(name)) return undefined;
    await this.load();
    const parts = await this.services.logs.partitions(name);
    if (!parts) return undefined;
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
   * Creates the queue for a topic (dedup off; retention per `retentionSeconds`, 0 = off) and records its width.
   * @throws QueenError from the broker's configure
   */
  async create(name: string, width: number, retentionSeconds = 0, configs: Map<string, string> = new Map()): Promise<TopicView> {
    await this.load();
    const record: TopicRecord = { width, configs: Object.fromEntries(configs) };
    await this.services.kv.batch([{ op: 'put', ns: TOPIC_RECORDS, key: name, value: record, expiry: null, required: false }]);
    this.widths.set(name, width);
    this.configs.set(name, configs);
    await this.services.broker.configure({
      queue: name, mode: 'merge',
      options: { dedupWindowSeconds: 0, retentionEnabled: retentionSeconds > 0, retentionSeconds },
    });
    return { name, width };
  }

  /** Deletes the queue of a topic; false when it did not exist. */
  async delete(name: string): Promise<boolean> {
    await this.load();
    if (this.widths.delete(name)) await this.services.kv.batch([{ op: 'delete', ns: TOPIC_RECORDS, key: name, required: false }]);
    this.configs.delete(name);
    return (await this.services.broker.deleteQueue(name)).existed;
  }
}
