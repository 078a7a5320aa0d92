/** Metadata (key 3, v0–9; flexible from v9). */
import { arr, f, struct } from './schema.js';

export const MetadataRequest = struct(
  f('topics', arr(struct(f('name', 'string')))),
  f('allow_auto_topic_creation', 'bool', 4),
  f('include_cluster_authorized_operations', 'bool', 8, 10),
  f('include_topic_authorized_operations', 'bool', 8),
);

export interface MetadataRequestData {
  /** null = every topic (v1+); v0 sends an empty array for that. */
  topics: { name: string }[] | null;
  allow_auto_topic_creation: boolean;
}

export const MetadataResponse = struct(
  f('throttle_time_ms', 'int32', 3),
  f('brokers', arr(struct(f('node_id', 'int32'), f('host', 'string'), f('port', 'int32'), f('rack', 'nstring', 1)))),
  f('cluster_id', 'nstring', 2),
  f('controller_id', 'int32', 1),
  f('topics', arr(struct(
    f('error_code', 'int16'),
    f('name', 'string'),
    f('is_internal', 'bool', 1),
    f('partitions', arr(struct(
      f('error_code', 'int16'),
      f('partition_index', 'int32'),
      f('leader_id', 'int32'),
      f('leader_epoch', 'int32', 7),
      f('replica_nodes', arr('int32')),
      f('isr_nodes', arr('int32')),
      f('offline_replicas', arr('int32'), 5),
    ))),
    f('topic_authorized_operations', 'int32', 8),
  ))),
  f('cluster_authorized_operations', 'int32', 8, 10),
);
