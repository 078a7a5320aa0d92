/** OffsetFetch (key 9, v1–7; flexible from v6). */
import { arr, f, struct } from './schema.js';

export const OffsetFetchRequest = struct(
  f('group_id', 'string'),
  f('topics', arr(struct(f('name', 'string'), f('partition_indexes', arr('int32'))))),
  f('require_stable', 'bool', 7),
);

export interface OffsetFetchRequestData {
  group_id: string;
  /** null (v2+) = every partition the group has a position on. */
  topics: { name: string; partition_indexes: number[] }[] | null;
}

export const OffsetFetchResponse = struct(
  f('throttle_time_ms', 'int32', 3),
  f('topics', arr(struct(
    f('name', 'string'),
    f('partitions', arr(struct(
      f('partition_index', 'int32'),
      f('committed_offset', 'int64'),
      f('committed_leader_epoch', 'int32', 5),
      f('metadata', 'nstring'),
      f('error_code', 'int16'),
    ))),
  ))),
  f('error_code', 'int16', 2),
);
