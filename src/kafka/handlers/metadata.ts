/**
 * ApiVersions, Metadata and FindCoordinator (docs/kafka.md#supported-apis): the port presents a
 * one-broker cluster, node 0 at the advertised address, cluster id `queen`.
 */
import { isQueenError } from '../../errors.js';
import { ErrorCode } from '../errors.js';
import { legalTopic } from '../mapping.js';
import { APIS } from '../protocol/apis.js';
import type { FindCoordinatorRequestData } from '../protocol/find-coordinator.js';
import type { MetadataRequestData } from '../protocol/metadata.js';
import type { TopicView } from '../topics.js';
import type { Body, Handler } from './types.js';

/** Topic creations one Metadata request may cause. */
const MAX_AUTO_CREATE = 100;
/** Named topics one Metadata request may look at; each distinct name past it is answered INVALID_REQUEST. */
const MAX_NAMED = 10_000;
/**
 * Partitions one Metadata answer lists at most (docs/kafka.md#supported-apis): whole topics, in
 * request order; a topic that would take the answer past this is answered LEADER_NOT_AVAILABLE with
 * no partitions (retriable: asked for alone, or with fewer others, it is served). Two topics of the
 * widest width fit.
 */
export const MAX_METADATA_PARTITIONS = 200_000;
const OMITTED_OPERATIONS = -2147483648;

export const apiVersions: Handler = () => Promise.resolve({
  error_code: 0,
  api_keys: [...APIS.values()].map((a) => ({ api_key: a.key, min_version: a.min, max_version: a.max })),
  throttle_time_ms: 0,
});

function fullTopic(t: TopicView): Body {
  const partitions: Body[] = [];
  for (let i = 0; i < t.width; i++) {
    partitions.push({ error_code: 0, partition_index: i, leader_id: 0, leader_epoch: -1, replica_nodes: [0], isr_nodes: [0], offline_replicas: [] });
  }
  return { error_code: 0, name: t.name, is_internal: false, partitions, topic_authorized_operations: OMITTED_OPERATIONS };
}

function errorTopic(name: string, code: number): Body {
  return { error_code: code, name, is_internal: false, partitions: [], topic_authorized_operations: OMITTED_OPERATIONS };
}

export const metadata: Handler = async (ctx, conn, body, version) => {
  const req = body as unknown as MetadataRequestData;
  const { host, port } = ctx.config.advertised;
  const topics: Body[] = [];
  const all = req.topics === null || (version === 0 && req.topics.length === 0);
  // Each distinct name once, in first-seen order (Kafka reads the list as a set).
  const distinct = all ? [] : [...new Set(req.topics!.map((t) => t.name))];
  const named = distinct.slice(0, MAX_NAMED);
  let listed = 0;
  const topicBody = (t: TopicView): Body => {
    if (listed + t.width > MAX_METADATA_PARTITIONS) return errorTopic(t.name, ErrorCode.LEADER_NOT_AVAILABLE);
    listed += t.width;
    return fullTopic(t);
  };
  if (!conn.may('read-only')) {
    for (const name of named) topics.push(errorTopic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED));
  } else if (all) {
    for (const t of await ctx.topics.all()) topics.push(topicBody(t));
  } else {
    let created = 0;
    const allowCreate = (version < 4 || req.allow_auto_topic_creation) && conn.may('read-write');
    for (const name of named) {
      if (!legalTopic(name)) {
        topics.push(errorTopic(name, ErrorCode.INVALID_TOPIC_EXCEPTION));
        continue;
      }
      if (name.startsWith('__')) {
        topics.push(errorTopic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
        continue;
      }
      const t = await ctx.topics.get(name);
      if (t) {
        topics.push(topicBody(t));
      } else if (!allowCreate) {
        topics.push(errorTopic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION));
      } else if (created >= MAX_AUTO_CREATE) {
        topics.push(errorTopic(name, ErrorCode.LEADER_NOT_AVAILABLE));
      } else {
        created++;
        try {
          topics.push(topicBody(await ctx.topics.create(name, ctx.config.defaultPartitions)));
        } catch (e) {
          if (!isQueenError(e)) ctx.log.error({ err: e, topic: name }, 'kafka: topic auto-creation failed');
          topics.push(errorTopic(name, ErrorCode.LEADER_NOT_AVAILABLE));
        }
      }
    }
  }
  // Names past MAX_NAMED are not looked at; each is answered INVALID_REQUEST instead of left out.
  for (let i = MAX_NAMED; i < distinct.length; i++) topics.push(errorTopic(distinct[i]!, ErrorCode.INVALID_REQUEST));
  return {
    throttle_time_ms: 0,
    brokers: [{ node_id: 0, host, port, rack: null }],
    cluster_id: 'queen',
    controller_id: 0,
    topics,
    cluster_authorized_operations: OMITTED_OPERATIONS,
  };
};

export const findCoordinator: Handler = (ctx, _conn, body) => {
  const req = body as unknown as FindCoordinatorRequestData;
  const { host, port } = ctx.config.advertised;
  const answer = (error_code: number, error_message: string | null): Body => ({
    throttle_time_ms: 0, error_code, error_message, node_id: error_code === 0 ? 0 : -1, host: error_code === 0 ? host : '', port: error_code === 0 ? port : -1,
  });
  if (req.key_type === 1) return Promise.resolve(answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'transactions are not supported by this broker'));
  if (req.key_type !== 0) return Promise.resolve(answer(ErrorCode.INVALID_REQUEST, `key type ${req.key_type} is not supported`));
  if (req.key.length === 0 || req.key.length > 255) return Promise.resolve(answer(ErrorCode.INVALID_GROUP_ID, 'group id must be 1..255 characters'));
  return Promise.resolve(answer(0, null));
};
