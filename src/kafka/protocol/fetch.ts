/** Fetch (key 1, v4–6; no flexible version in that window). */
import { arr, f, struct } from './schema.js';

export const FetchRequest = struct(
  f('replica_id', 'int32'),
  f('max_wait_ms', 'int32'),
  f('min_bytes', 'int32'),
  f('max_bytes', 'int32', 3),
  f('isolation_level', 'int8', 4),
  f('topics', arr(struct(
    f('topic', 'string'),
    f('partitions', arr(struct(
      f('partition', 'int32'),
      f('fetch_offset', 'int64'),
      f('log_start_offset', 'int64', 5),
      f('partition_max_bytes', 'int32'),
    ))),
  ))),
);

export interface FetchRequestData {
  max_wait_ms: number;
  min_bytes: number;
  max_bytes: number;
  topics: { topic: string; partitions: { partition: number; fetch_offset: number; partition_max_bytes: number }[] }[];
}

export const FetchResponse = struct(
  f('throttle_time_ms', 'int32', 1),
  f('responses', arr(struct(
    f('topic', 'string'),
    f('partitions', arr(struct(
      f('partition_index', 'int32'),
      f('error_code', 'int16'),
      f('high_watermark', 'int64'),
      f('last_stable_offset', 'int64', 4),
      f('log_start_offset', 'int64', 5),
      f('aborted_transactions', arr(struct(f('producer_id', 'int64'), f('first_offset', 'int64'))), 4),
      f('records', 'nbytes'),
    ))),
  ))),
);

export interface FetchPartitionAnswer {
  partition_index: number;
  error_code: number;
  high_watermark: number;
  last_stable_offset: number;
  log_start_offset: number;
  aborted_transactions: [];
  records: Buffer;
}
