/**
 * The topic catalog (docs/kafka.md#mapping): a topic is a queue of the same name; its advertised
 * width is max(materialised partitions, the width CreateTopics recorded, else
 * QUEEN_KAFKA_DEFAULT_PARTITIONS), clamped at 100000, never shrinking. Queues created for Kafka get
 * dedup off (records carry no transactionId) and retention off unless `retention.ms` says otherwise.
 */
import type { Services } from '../broker/services.js';
import type { KafkaConfig } from '../config/kafka.js';
import { partitionIndex, visibleTopic } from './mapping.js';

export const MAX_WIDTH = 100_000;

/** A topic as Metadata shows it. */
export interface TopicView {
  name: string;
  width: number;
}

export class Topics {
  /** Widths recorded by CreateTopics (in memory; the default applies after a restart). */
  private readonly widths = new Map<string, number>();
  /** Configs recorded by CreateTopics, reported by DescribeConfigs. */
  readonly configs = new Map<string, Map<string, string>>();

  constructor(private readonly services: Services, private readonly config: KafkaConfig) {}

  /** The topic of queue `name`, or undefined when the queue does not exist or is not visible to Kafka. */
  async get(name: string): Promise<TopicView | undefined> {
    if (!visibleTopic(name)) return undefined;
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
  async create(name: string, width: number, retentionSeconds = 0, configs?: Map<string, string>): Promise<TopicView> {
    this.widths.set(name, width);
    if (configs) this.configs.set(name, configs);
    await this.services.broker.configure({
      queue: name, mode: 'merge',
      options: { dedupWindowSeconds: 0, retentionEnabled: retentionSeconds > 0, retentionSeconds },
    });
    return { name, width };
  }

  /** Deletes the queue of a topic; false when it did not exist. */
  async delete(name: string): Promise<boolean> {
    this.widths.delete(name);
    this.configs.delete(name);
    return (await this.services.broker.deleteQueue(name)).existed;
  }
}
