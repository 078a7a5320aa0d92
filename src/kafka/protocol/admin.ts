/**
 * Topic and group administration: CreateTopics (key 19, v2–6, flexible from v5), DeleteTopics
 * (20, v1–5, flexible from v4), DescribeConfigs (32, v1–4, flexible from v4), ListGroups (16,
 * v0–4, flexible from v3), DescribeGroups (15, v0–3), DeleteGroups (42, v0–2, flexible from v2),
 * InitProducerId (22, v0–4, flexible from v2).
 */
import { arr, f, struct } from './schema.js';

export const CreateTopicsRequest = struct(
  f('topics', arr(struct(
    f('name', 'string'),
    f('num_partitions', 'int32'),
    f('replication_factor', 'int16'),
    f('assignments', arr(struct(f('partition_index', 'int32'), f('broker_ids', arr('int32'))))),
    f('configs', arr(struct(f('name', 'string'), f('value', 'nstring')))),
  ))),
  f('timeout_ms', 'int32'),
  f('validate_only', 'bool', 1),
);

export interface CreateTopicsRequestData {
  topics: { name: string; num_partitions: number; replication_factor: number; assignments: unknown[]; configs: { name: string; value: string | null }[] }[];
  validate_only: boolean;
}

export const CreateTopicsResponse = struct(
  f('throttle_time_ms', 'int32', 2),
  f('topics', arr(struct(
    f('name', 'string'),
    f('error_code', 'int16'),
    f('error_message', 'nstring', 1),
    f('num_partitions', 'int32', 5),
    f('replication_factor', 'int16', 5),
    f('configs', arr(struct(f('name', 'string'), f('value', 'nstring'), f('read_only', 'bool'), f('config_source', 'int8'), f('is_sensitive', 'bool'))), 5),
  ))),
);

export const DeleteTopicsRequest = struct(f('topic_names', arr('string')), f('timeout_ms', 'int32'));

export interface DeleteTopicsRequestData {
  topic_names: string[];
}

export const DeleteTopicsResponse = struct(
  f('throttle_time_ms', 'int32', 1),
  f('responses', arr(struct(f('name', 'string'), f('error_code', 'int16'), f('error_message', 'nstring', 5)))),
);

export const DescribeConfigsRequest = struct(
  f('resources', arr(struct(f('resource_type', 'int8'), f('resource_name', 'string'), f('configuration_keys', arr('string'))))),
  f('include_synonyms', 'bool', 1),
  f('include_documentation', 'bool', 3),
);

export interface DescribeConfigsRequestData {
  resources: { resource_type: number; resource_name: string; configuration_keys: string[] | null }[];
}

export const DescribeConfigsResponse = struct(
  f('throttle_time_ms', 'int32'),
  f('results', arr(struct(
    f('error_code', 'int16'),
    f('error_message', 'nstring'),
    f('resource_type', 'int8'),
    f('resource_name', 'string'),
    f('configs', arr(struct(
      f('name', 'string'),
      f('value', 'nstring'),
      f('read_only', 'bool'),
      f('config_source', 'int8', 1),
      f('is_sensitive', 'bool'),
      f('synonyms', arr(struct(f('name', 'string'), f('value', 'nstring'), f('source', 'int8'))), 1),
      f('config_type', 'int8', 3),
      f('documentation', 'nstring', 3),
    ))),
  ))),
);

export const ListGroupsRequest = struct(f('states_filter', arr('string'), 4));

export const ListGroupsResponse = struct(
  f('throttle_time_ms', 'int32', 1),
  f('error_code', 'int16'),
  f('groups', arr(struct(f('group_id', 'string'), f('protocol_type', 'string'), f('group_state', 'string', 4)))),
);

export const DescribeGroupsRequest = struct(f('groups', arr('string')), f('include_authorized_operations', 'bool', 3));

export const DescribeGroupsResponse = struct(
  f('throttle_time_ms', 'int32', 1),
  f('groups', arr(struct(
    f('error_code', 'int16'),
    f('group_id', 'string'),
    f('group_state', 'string'),
    f('protocol_type', 'string'),
    f('protocol_data', 'string'),
    f('members', arr(struct(
      f('member_id', 'string'),
      f('client_id', 'string'),
      f('client_host', 'string'),
      f('member_metadata', 'bytes'),
      f('member_assignment', 'bytes'),
    ))),
    f('authorized_operations', 'int32', 3),
  ))),
);

export const DeleteGroupsRequest = struct(f('groups_names', arr('string')));

export const DeleteGroupsResponse = struct(
  f('throttle_time_ms', 'int32'),
  f('results', arr(struct(f('group_id', 'string'), f('error_code', 'int16')))),
);

export const InitProducerIdRequest = struct(
  f('transactional_id', 'nstring'),
  f('transaction_timeout_ms', 'int32'),
  f('producer_id', 'int64', 3),
  f('producer_epoch', 'int16', 3),
);

export interface InitProducerIdRequestData {
  transactional_id: string | null;
  producer_id: number;
  producer_epoch: number;
}

export const InitProducerIdResponse = struct(
  f('throttle_time_ms', 'int32'),
  f('error_code', 'int16'),
  f('producer_id', 'int64'),
  f('producer_epoch', 'int16'),
);
