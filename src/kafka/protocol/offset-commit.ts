/** OffsetCommit (key 8, v2–6; no flexible version in that window). */
import { arr, f, struct } from './schema.js';

export const OffsetCommitRequest = struct(
  f('group_id', 'string'),
  f('generation_id', 'int32', 1),
  f('member_id', 'string', 1),
  f('retention_time_ms', 'int64', 2, 4),
  f('topics', arr(struct(
    f('name', 'string'),
    f('partitions', arr(struct(
      f('partition_index', 'int32'),
      f('committed_offset', 'int64'),
      f('committed_leader_epoch', 'int32', 6),
      f('commit_timestamp', 'int64', 1, 1),
      f('committed_metadata', 'nstring'),
    ))),
  ))),
);

export interface OffsetCommitRequestData {
  group_id: string;
  generation_id: number;
  member_id: string;
  topics: { name: string; partitions: { partition_index: number; committed_offset: number; committed_metadata: string | null }[] }[];
}

export const OffsetCommitResponse = struct(
  f('throttle_time_ms', 'int32', 3),
  f('topics', arr(struct(f('name', 'string'), f('partitions', arr(struct(f('partition_index', 'int32'), f('error_code', 'int16'))))))),
);
