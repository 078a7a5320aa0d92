/** Produce (key 0, v3–9; flexible from v9). */
import { arr, f, struct } from './schema.js';

export const ProduceRequest = struct(
  f('transactional_id', 'nstring', 3),
  f('acks', 'int16'),
  f('timeout_ms', 'int32'),
  f('topic_data', arr(struct(f('name', 'string'), f('partition_data', arr(struct(f('index', 'int32'), f('records', 'nbytes'))))))),
);

export interface ProduceRequestData {
  transactional_id: string | null;
  acks: number;
  timeout_ms: number;
  topic_data: { name: string; partition_data: { index: number; records: Buffer | null }[] }[];
}

export const ProduceResponse = struct(
  f('responses', arr(struct(
    f('name', 'string'),
    f('partition_responses', arr(struct(
      f('index', 'int32'),
      f('error_code', 'int16'),
      f('base_offset', 'int64'),
      f('log_append_time_ms', 'int64', 2),
      f('log_start_offset', 'int64', 5),
      f('record_errors', arr(struct(f('batch_index', 'int32'), f('batch_index_error_message', 'nstring'))), 8),
      f('error_message', 'nstring', 8),
    ))),
  ))),
  f('throttle_time_ms', 'int32', 1),
);

export interface ProducePartitionAnswer {
  index: number;
  error_code: number;
  base_offset: number;
  log_append_time_ms: number;
  log_start_offset: number;
  error_message: string | null;
}
