/**
 * OffsetCommit v2–6 and OffsetFetch v1–7 (docs/kafka.md#consumer-groups): a Kafka committed offset
 * N (the next offset to read) is the Queen group's position N on partition `"n"` of the queue, so
 * the group's lag shows in /api/v1/consumer-groups. A commit above the high watermark is clamped
 * to it (logged); −1 removes the position (the next reader falls back to its `auto.offset.reset`).
 * The commit `metadata` string is kept in the side table `kafka_offsets_meta` (docs/kafka.md#storage),
 * written for every stored partition of a request in one transaction, which also indexes the group.
 */
import { ErrorCode } from '../errors.js';
import { partitionIndex, visibleTopic } from '../mapping.js';
import { validGroupId } from '../groups/coordinator.js';
import type { OffsetCommitRequestData } from '../protocol/offset-commit.js';
import type { OffsetFetchRequestData } from '../protocol/offset-fetch.js';
import type { Handler } from './types.js';

/** Longest commit metadata, bytes. */
const MAX_METADATA_BYTES = 4096;

export const offsetCommit: Handler = async (ctx, conn, body) => {
  const req = body as unknown as OffsetCommitRequestData;
  const groupCode = !conn.may('read-write') ? ErrorCode.GROUP_AUTHORIZATION_FAILED
    : !validGroupId(req.group_id) ? ErrorCode.INVALID_GROUP_ID : ctx.groups.commitAllowed(req.group_id, req.generation_id, req.member_id);
  const topics = [];
  const meta: { topic: string; partition: number; metadata: string }[] = [];
  for (const t of req.topics) {
    const partitions = [];
    const topic = groupCode === 0 && visibleTopic(t.name) ? await ctx.topics.get(t.name) : undefined;
    for (const p of t.partitions) {
      let error_code: number = groupCode;
      if (error_code === 0) {
        if (!topic || p.partition_index < 0 || p.partition_index >= topic.width) error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        else if (p.committed_offset < -1) error_code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
        else if (p.committed_metadata !== null && Buffer.byteLength(p.committed_metadata) > MAX_METADATA_BYTES) error_code = ErrorCode.OFFSET_METADATA_TOO_LARGE;
        else {
          try {
            const r = p.committed_offset === -1
              ? (await ctx.services.logs.clearPosition(t.name, String(p.partition_index), req.group_id), { clamped: false, offset: -1 })
              : await ctx.services.logs.setPosition(t.name, String(p.partition_index), req.group_id, p.committed_offset);
            meta.push({ topic: t.name, partition: p.partition_index, metadata: p.committed_offset === -1 ? '' : p.committed_metadata ?? '' });
            if (r.clamped) ctx.log.warn({ group: req.group_id, topic: t.name, partition: p.partition_index, asked: p.committed_offset, stored: r.offset }, 'kafka: commit above the high watermark clamped');
          } catch (e) {
            ctx.log.error({ err: e, group: req.group_id, topic: t.name }, 'kafka: offset commit failed');
            error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE;
          }
        }
      }
      partitions.push({ partition_index: p.partition_index, error_code });
    }
    topics.push({ name: t.name, partitions });
  }
  if (groupCode === 0) {
    try {
      await ctx.services.kafkaMeta.commitMeta(req.group_id, meta);
    } catch (e) {
      ctx.log.error({ err: e, group: req.group_id }, 'kafka: commit metadata not stored');
      for (const t of topics) for (const p of t.partitions) if (p.error_code === 0) p.error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }
  return { throttle_time_ms: 0, topics };
};

export const offsetFetch: Handler = async (ctx, conn, body, version) => {
  const req = body as unknown as OffsetFetchRequestData;
  const groupCode = !conn.may('read-only') ? ErrorCode.GROUP_AUTHORIZATION_FAILED : validGroupId(req.group_id) ? 0 : ErrorCode.INVALID_GROUP_ID;
  const topics: { name: string; partitions: { partition_index: number; committed_offset: number; committed_leader_epoch: number; metadata: string; error_code: number }[] }[] = [];
  const metadata = new Map<string, string>();
  if (groupCode === 0) for (const m of await ctx.services.kafkaMeta.offsetMeta(req.group_id)) metadata.set(`${m.partition}\u0000${m.topic}`, m.metadata);
  const row = (partition_index: number, committed_offset: number, topic: string) => ({
    partition_index, committed_offset, committed_leader_epoch: -1,
    metadata: committed_offset >= 0 ? metadata.get(`${partition_index}\u0000${topic}`) ?? '' : '', error_code: version < 2 ? groupCode : 0,
  });
  if (groupCode === 0 && req.topics === null) {
    const byTopic = new Map<string, ReturnType<typeof row>[]>();
    for (const pos of await ctx.services.logs.positions(req.group_id)) {
      const i = partitionIndex(pos.partition);
      if (i === undefined || !visibleTopic(pos.queue)) continue;
      let list = byTopic.get(pos.queue);
      if (!list) byTopic.set(pos.queue, (list = []));
      list.push(row(i, pos.committedOffset, pos.queue));
    }
    for (const [name, partitions] of byTopic) topics.push({ name, partitions });
  } else {
    for (const t of req.topics ?? []) {
      const partitions = [];
      for (const i of t.partition_indexes) {
        let offset = -1;
        if (groupCode === 0 && visibleTopic(t.name)) offset = (await ctx.services.logs.position(t.name, String(i), req.group_id)) ?? -1;
        partitions.push(row(i, offset, t.name));
      }
      topics.push({ name: t.name, partitions });
    }
  }
  return { throttle_time_ms: 0, topics, error_code: groupCode };
};
