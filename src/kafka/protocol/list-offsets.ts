/** ListOffsets (key 2, v1–5; no flexible version in that window). */
import { arr, f, struct } from './schema.js';

export const ListOffsetsRequest = struct(
  f('replica_id', 'int32'),
  f('isolation_level', 'int8', 2),
  f('topics', arr(struct(
    f('name', 'string'),
    f('partitions', arr(struct(f('partition_index', 'int32'), f('current_leader_epoch', 'int32', 4), f('timestamp', 'int64')))),
  ))),
);

export interface ListOffsetsRequestData {
  topics: { name: string; partitions: { partition_index: number; timestamp: number }[] }[];
}

export const ListOffsetsResponse = struct(
  f('throttle_time_ms', 'int32', 2),
  f('topics', arr(struct(
    f('name', 'string'),
    f('partitions', arr(struct(
      f('partition_index', 'int32'),
      f('error_code', 'int16'),
      f('timestamp', 'int64'),
      f('offset', 'int64'),
      f('leader_epoch', 'int32', 4),
    ))),
  ))),
);
