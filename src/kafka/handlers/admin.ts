/**
 * CreateTopics, DeleteTopics, DescribeConfigs, ListGroups, DescribeGroups, DeleteGroups and
 * InitProducerId (docs/kafka.md#administration).
 */
import { deleteGroup } from '../../broker/admin/consumer-groups.js';
import { isQueenError } from '../../errors.js';
import { DEFAULT_TENANT } from '../../model/tenancy.js';
import { ErrorCode } from '../errors.js';
import { legalTopic, visibleTopic } from '../mapping.js';
import { validGroupId } from '../groups/coordinator.js';
import type { CreateTopicsRequestData, DeleteTopicsRequestData, DescribeConfigsRequestData, InitProducerIdRequestData } from '../protocol/admin.js';
import { MAX_WIDTH } from '../topics.js';
import type { Body, Handler } from './types.js';

/** Topics one CreateTopics or DeleteTopics request may name. */
const MAX_TOPICS_PER_REQUEST = 100;
/** Config keys accepted, recorded and reported, not enforced. */
const RECORDED_KEYS = new Set(['segment.bytes', 'segment.ms', 'retention.bytes', 'max.message.bytes', 'min.compaction.lag.ms', 'max.compaction.lag.ms', 'delete.retention.ms', 'min.cleanable.dirty.ratio']);

/** Checks topic configs (docs/kafka.md#administration); returns retention seconds (0 = off) or an error message. */
function checkConfigs(configs: { name: string; value: string | null }[]): { retentionSeconds: number; recorded: Map<string, string> } | string {
  const recorded = new Map<string, string>();
  let retentionMs = -1;
  let policy = 'delete';
  for (const c of configs) {
    const v = c.value ?? '';
    if (c.name === 'retention.ms') {
      if (!/^-?\d+$/.test(v)) return 'retention.ms is not an integer';
      retentionMs = Number(v);
      if ((retentionMs >= 0 && retentionMs < 1000) || retentionMs < -1) return 'retention.ms must be -1 or at least 1000';
    } else if (c.name === 'cleanup.policy') {
      if (!['delete', 'compact', 'compact,delete', 'delete,compact'].includes(v)) return `cleanup.policy=${v} is not supported`;
      policy = v;
    } else if (c.name === 'min.insync.replicas') {
      if (v !== '1') return 'min.insync.replicas must be 1';
    } else if (c.name === 'message.timestamp.type') {
      if (v !== 'CreateTime') return 'message.timestamp.type must be CreateTime';
    } else if (!RECORDED_KEYS.has(c.name)) {
      return `config ${c.name} is not supported`;
    }
    recorded.set(c.name, v);
  }
  const retentionSeconds = policy === 'compact' || retentionMs < 0 ? 0 : Math.floor(retentionMs / 1000);
  return { retentionSeconds, recorded };
}

export const createTopics: Handler = async (ctx, conn, body, version) => {
  const req = body as unknown as CreateTopicsRequestData;
  const counts = new Map<string, number>();
  for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
  const topics: Body[] = [];
  for (const [i, t] of req.topics.entries()) {
    const out = { name: t.name, error_code: 0, error_message: null as string | null, num_partitions: -1, replication_factor: -1, configs: [] as Body[] };
    topics.push(out);
    const width = t.num_partitions <= 0 ? ctx.config.defaultPartitions : t.num_partitions;
    const checked = checkConfigs(t.configs);
    if (!conn.may('read-write')) out.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED;
    else if (i >= MAX_TOPICS_PER_REQUEST) out.error_code = version >= 6 ? 89 : ErrorCode.REQUEST_TIMED_OUT;
    else if (!legalTopic(t.name) || t.name.startsWith('__')) out.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION;
    else if (counts.get(t.name)! > 1) out.error_code = ErrorCode.INVALID_REQUEST;
    else if (width > MAX_WIDTH) out.error_code = ErrorCode.INVALID_PARTITIONS;
    else if (t.assignments.length > 0) out.error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT;
    else if (typeof checked === 'string') {
      out.error_code = ErrorCode.INVALID_CONFIG;
      out.error_message = checked;
    } else if (await ctx.topics.get(t.name)) out.error_code = ErrorCode.TOPIC_ALREADY_EXISTS;
    if (out.error_code !== 0 || typeof checked === 'string') continue;
    out.num_partitions = width;
    out.replication_factor = 1;
    out.configs = [...checked.recorded].map(([name, value]) => ({ name, value, read_only: false, config_source: 1, is_sensitive: false }));
    if (req.validate_only) continue;
    try {
      await ctx.topics.create(t.name, width, checked.retentionSeconds, checked.recorded);
    } catch (e) {
      out.error_code = isQueenError(e) ? ErrorCode.INVALID_REQUEST : ErrorCode.UNKNOWN_SERVER_ERROR;
      out.error_message = (e as Error).message;
    }
  }
  return { throttle_time_ms: 0, topics };
};

export const deleteTopics: Handler = async (ctx, conn, body) => {
  const req = body as unknown as DeleteTopicsRequestData;
  const responses = [];
  for (const [i, name] of req.topic_names.entries()) {
    let error_code = 0;
    if (!conn.may('admin')) error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED;
    else if (i >= MAX_TOPICS_PER_REQUEST) error_code = ErrorCode.REQUEST_TIMED_OUT;
    else if (!visibleTopic(name) || !(await ctx.topics.delete(name))) error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    responses.push({ name, error_code, error_message: null });
  }
  return { throttle_time_ms: 0, responses };
};

export const describeConfigs: Handler = async (ctx, _conn, body) => {
  const req = body as unknown as DescribeConfigsRequestData;
  const results = [];
  const entry = (name: string, value: string | null, readOnly: boolean, source: number) => ({ name, value, read_only: readOnly, config_source: source, is_sensitive: false, synonyms: [], config_type: 0, documentation: null });
  for (const r of req.resources) {
    const res = { error_code: 0, error_message: null as string | null, resource_type: r.resource_type, resource_name: r.resource_name, configs: [] as Body[] };
    results.push(res);
    if (r.resource_type === 2) {
      const topic = visibleTopic(r.resource_name) ? await ctx.topics.get(r.resource_name) : undefined;
      if (!topic) {
        res.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        continue;
      }
      const recorded = ctx.topics.configs.get(r.resource_name) ?? new Map<string, string>();
      const all = [entry('cleanup.policy', recorded.get('cleanup.policy') ?? 'delete', false, recorded.has('cleanup.policy') ? 1 : 5),
        entry('min.insync.replicas', '1', true, 5), entry('retention.ms', recorded.get('retention.ms') ?? '-1', false, recorded.has('retention.ms') ? 1 : 5)];
      for (const [k, v] of recorded) if (!['cleanup.policy', 'retention.ms', 'min.insync.replicas'].includes(k)) all.push(entry(k, v, false, 1));
      res.configs = r.configuration_keys === null ? all : all.filter((c) => r.configuration_keys!.includes(c.name));
    } else if (r.resource_type === 4 && (r.resource_name === '' || r.resource_name === '0')) {
      res.configs = [entry('num.partitions', String(ctx.config.defaultPartitions), true, 5), entry('auto.create.topics.enable', 'true', true, 5), entry('default.replication.factor', '1', true, 5)];
    } else {
      res.error_code = ErrorCode.INVALID_REQUEST;
      res.error_message = 'unknown resource';
    }
  }
  return { throttle_time_ms: 0, results };
};

export const listGroups: Handler = async (ctx, _conn, body) => {
  const filter = (body.states_filter as string[] | null) ?? [];
  const live = ctx.groups.list();
  const seen = new Set(live.map((g) => g.group_id));
  const groups: { group_id: string; protocol_type: string; group_state: string }[] = [...live];
  const durable = new Set([...await ctx.services.kafkaMeta.groups(), ...await ctx.services.logs.groupNames()]);
  for (const name of [...durable].sort()) if (!seen.has(name) && validGroupId(name)) groups.push({ group_id: name, protocol_type: 'consumer', group_state: 'Empty' });
  return { throttle_time_ms: 0, error_code: 0, groups: filter.length === 0 ? groups : groups.filter((g) => filter.includes(g.group_state)) };
};

export const describeGroups: Handler = (ctx, _conn, body) => Promise.resolve({
  throttle_time_ms: 0,
  groups: (body.groups as string[]).map((id) => ({ error_code: validGroupId(id) ? 0 : ErrorCode.INVALID_GROUP_ID, ...ctx.groups.describe(id), authorized_operations: -2147483648 })),
});

export const deleteGroups: Handler = async (ctx, conn, body) => {
  const results = [];
  const known = new Set([...await ctx.services.kafkaMeta.groups(), ...await ctx.services.logs.groupNames()]);
  for (const id of body.groups_names as string[]) {
    let error_code = 0;
    if (!conn.may('read-write')) error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED;
    else if (!validGroupId(id)) error_code = ErrorCode.INVALID_GROUP_ID;
    else if (ctx.groups.size(id) > 0) error_code = ErrorCode.NON_EMPTY_GROUP;
    else if (!known.has(id)) error_code = ErrorCode.GROUP_ID_NOT_FOUND;
    else {
      await deleteGroup(ctx.services.broker, DEFAULT_TENANT, id, undefined, true, () => undefined); // Kafka clients act for the default tenant (docs/kafka.md)
      await ctx.services.kafkaMeta.deleteGroup(id);
      ctx.groups.forget(id);
    }
    results.push({ group_id: id, error_code });
  }
  return { throttle_time_ms: 0, results };
};

export const initProducerId: Handler = (ctx, _conn, body) => {
  const req = body as unknown as InitProducerIdRequestData;
  if (req.transactional_id !== null) return Promise.resolve({ throttle_time_ms: 0, error_code: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id: -1, producer_epoch: -1 });
  if (req.producer_id >= 0) {
    ctx.producers.reset(req.producer_id);
    return Promise.resolve({ throttle_time_ms: 0, error_code: 0, producer_id: req.producer_id, producer_epoch: Math.min(32767, req.producer_epoch + 1) });
  }
  return Promise.resolve({ throttle_time_ms: 0, error_code: 0, producer_id: ctx.producers.mint(), producer_epoch: 0 });
};
