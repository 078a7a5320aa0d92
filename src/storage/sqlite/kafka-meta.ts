/**
 * The Kafka side tables on SQLite (../kafka-meta.ts; tables of migration 10 in schema.ts): writes are
 * units of the store's group commit (durable when they resolve), reads go to the connection.
 * A topic record is bound to the queue's public id and read joined to `queues`, so the record of a
 * deleted (or deleted and re-created) queue is never returned.
 */
import type { Database as Db, Statement } from 'better-sqlite3';
import type { KafkaMetaSubStore, KafkaOffsetMeta, KafkaTopicRecord } from '../kafka-meta.js';
import type { Row } from './rows.js';
import type { SqliteStore } from './store.js';

/** {@link KafkaMetaSubStore} over a {@link SqliteStore} (see the module comment). */
export class SqliteKafkaMeta implements KafkaMetaSubStore {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly store: SqliteStore) {}

  private prep(sql: string): Statement {
    let st = this.statements.get(sql);
    if (!st) this.statements.set(sql, (st = this.store.database.prepare(sql)));
    return st;
  }

  private atomic<T>(fn: (db: Db) => T): Promise<T> {
    return this.store.runOnDb(fn);
  }

  putTopic(tenant: string, topic: string, width: number, configs: Record<string, string>, now: number): Promise<boolean> {
    return this.atomic(() => this.prep(`INSERT INTO kafka_topics (tenant_id, name, queue_id, width, configs, created_at)
        SELECT tenant_id, name, id, ?, ?, ? FROM queues WHERE tenant_id = ? AND name = ?
        ON CONFLICT (tenant_id, name) DO UPDATE SET queue_id = excluded.queue_id, width = excluded.width, configs = excluded.configs, created_at = excluded.created_at`)
      .run(width, JSON.stringify(configs), now, tenant, topic).changes > 0);
  }

  deleteTopic(tenant: string, topic: string): Promise<boolean> {
    return this.atomic(() => {
      this.prep('DELETE FROM kafka_offsets_meta WHERE tenant_id = ? AND topic = ?').run(tenant, topic);
      return this.prep('DELETE FROM kafka_topics WHERE tenant_id = ? AND name = ?').run(tenant, topic).changes > 0;
    });
  }

  topics(tenant: string): Promise<KafkaTopicRecord[]> {
    const rows = this.prep(`SELECT t.name, t.queue_id, t.width, t.configs, t.created_at FROM kafka_topics t
        JOIN queues q ON q.tenant_id = t.tenant_id AND q.name = t.name AND q.id = t.queue_id
       WHERE t.tenant_id = ? ORDER BY t.name`).all(tenant) as Row[];
    return Promise.resolve(rows.map((r) => ({
      topic: r.name as string, queueId: r.queue_id as string, width: r.width as number,
      configs: JSON.parse(r.configs as string) as Record<string, string>, createdAt: r.created_at as number,
    })));
  }

  commitMeta(tenant: string, group: string, rows: KafkaOffsetMeta[], now: number): Promise<void> {
    return this.atomic(() => {
      this.indexOn(tenant, group, now);
      for (const r of rows) {
        if (r.metadata === '') this.prep('DELETE FROM kafka_offsets_meta WHERE tenant_id = ? AND group_id = ? AND topic = ? AND partition = ?').run(tenant, group, r.topic, r.partition);
        else {
          this.prep(`INSERT INTO kafka_offsets_meta (tenant_id, group_id, topic, partition, metadata, updated_at) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (tenant_id, group_id, topic, partition) DO UPDATE SET metadata = excluded.metadata, updated_at = excluded.updated_at`)
            .run(tenant, group, r.topic, r.partition, r.metadata, now);
        }
      }
    });
  }

  offsetMeta(tenant: string, group: string): Promise<KafkaOffsetMeta[]> {
    const rows = this.prep('SELECT topic, partition, metadata FROM kafka_offsets_meta WHERE tenant_id = ? AND group_id = ? ORDER BY topic, partition').all(tenant, group) as Row[];
    return Promise.resolve(rows.map((r) => ({ topic: r.topic as string, partition: r.partition as number, metadata: r.metadata as string })));
  }

  private indexOn(tenant: string, group: string, now: number): void {
    this.prep('INSERT INTO kafka_groups (tenant_id, group_id, created_at) VALUES (?, ?, ?) ON CONFLICT (tenant_id, group_id) DO NOTHING').run(tenant, group, now);
  }

  indexGroup(tenant: string, group: string, now: number): Promise<void> {
    return this.atomic(() => this.indexOn(tenant, group, now));
  }

  groups(tenant: string): Promise<string[]> {
    const rows = this.prep('SELECT group_id FROM kafka_groups WHERE tenant_id = ? ORDER BY group_id').all(tenant) as Row[];
    return Promise.resolve(rows.map((r) => r.group_id as string));
  }

  deleteGroup(tenant: string, group: string): Promise<boolean> {
    return this.atomic(() => {
      this.prep('DELETE FROM kafka_offsets_meta WHERE tenant_id = ? AND group_id = ?').run(tenant, group);
      return this.prep('DELETE FROM kafka_groups WHERE tenant_id = ? AND group_id = ?').run(tenant, group).changes > 0;
    });
  }
}
