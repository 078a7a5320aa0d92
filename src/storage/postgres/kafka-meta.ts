/**
 * The Kafka side tables on PostgreSQL (../kafka-meta.ts; migration 5 in schema.ts). A topic record
 * references its queue's id with ON DELETE CASCADE, and is read joined to `queen.queues`, so the
 * record of a deleted (or deleted and re-created) queue is never returned.
 */
import type { KafkaMetaSubStore, KafkaOffsetMeta, KafkaTopicRecord } from '../kafka-meta.js';
import { exec, type PgDb, type Tx } from './db.js';

const INDEX = `INSERT INTO queen.kafka_groups (tenant_id, group_id, created_at_ms) VALUES ($1, $2, $3)
               ON CONFLICT (tenant_id, group_id) DO NOTHING`;

/** {@link KafkaMetaSubStore} on PostgreSQL (see the module comment). */
export function pgKafkaMeta(db: PgDb): KafkaMetaSubStore {
  return {
    putTopic: (tenant, topic, width, configs, now) => db.tx(async (t: Tx) => (await exec(t, `
      INSERT INTO queen.kafka_topics (tenant_id, name, queue_id, width, configs, created_at_ms)
      SELECT tenant_id, name, id, $3, $4::jsonb, $5 FROM queen.queues WHERE tenant_id = $1 AND name = $2
      ON CONFLICT (tenant_id, name) DO UPDATE SET queue_id = EXCLUDED.queue_id, width = EXCLUDED.width,
        configs = EXCLUDED.configs, created_at_ms = EXCLUDED.created_at_ms`,
    [tenant, topic, width, JSON.stringify(configs), now])) > 0),
    deleteTopic: (tenant, topic) => db.tx(async (t) => {
      await exec(t, 'DELETE FROM queen.kafka_offsets_meta WHERE tenant_id = $1 AND topic = $2', [tenant, topic]);
      return (await exec(t, 'DELETE FROM queen.kafka_topics WHERE tenant_id = $1 AND name = $2', [tenant, topic])) > 0;
    }),
    topics: async (tenant) => (await db.rows(`
      SELECT t.name, t.queue_id, t.width, t.configs, t.created_at_ms FROM queen.kafka_topics t
        JOIN queen.queues q ON q.id = t.queue_id AND q.tenant_id = t.tenant_id AND q.name = t.name
       WHERE t.tenant_id = $1 ORDER BY t.name`, [tenant]))
      .map((r): KafkaTopicRecord => ({
        topic: r.name as string, queueId: r.queue_id as string, width: r.width as number,
        configs: r.configs as Record<string, string>, createdAt: Number(r.created_at_ms),
      })),
    commitMeta: (tenant, group, rows, now) => db.tx(async (t) => {
      await exec(t, INDEX, [tenant, group, now]);
      for (const r of rows) {
        if (r.metadata === '') {
          await exec(t, 'DELETE FROM queen.kafka_offsets_meta WHERE tenant_id = $1 AND group_id = $2 AND topic = $3 AND partition = $4', [tenant, group, r.topic, r.partition]);
        } else {
          await exec(t, `INSERT INTO queen.kafka_offsets_meta (tenant_id, group_id, topic, partition, metadata, updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6)
                         ON CONFLICT (tenant_id, group_id, topic, partition) DO UPDATE SET metadata = EXCLUDED.metadata, updated_at_ms = EXCLUDED.updated_at_ms`,
          [tenant, group, r.topic, r.partition, r.metadata, now]);
        }
      }
    }),
    offsetMeta: async (tenant, group) => (await db.rows(
      'SELECT topic, partition, metadata FROM queen.kafka_offsets_meta WHERE tenant_id = $1 AND group_id = $2 ORDER BY topic, partition', [tenant, group]))
      .map((r): KafkaOffsetMeta => ({ topic: r.topic as string, partition: r.partition as number, metadata: r.metadata as string })),
    indexGroup: (tenant, group, now) => db.tx(async (t) => { await exec(t, INDEX, [tenant, group, now]); }),
    groups: async (tenant) => (await db.rows('SELECT group_id FROM queen.kafka_groups WHERE tenant_id = $1 ORDER BY group_id', [tenant]))
      .map((r) => r.group_id as string),
    deleteGroup: (tenant, group) => db.tx(async (t) => {
      await exec(t, 'DELETE FROM queen.kafka_offsets_meta WHERE tenant_id = $1 AND group_id = $2', [tenant, group]);
      return (await exec(t, 'DELETE FROM queen.kafka_groups WHERE tenant_id = $1 AND group_id = $2', [tenant, group])) > 0;
    }),
  };
}
