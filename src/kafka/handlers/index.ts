/** API key → handler (docs/kafka.md#supported-apis). SASL APIs are served by the connection itself (sasl.ts). */
import { API } from '../protocol/apis.js';
import { createTopics, deleteGroups, deleteTopics, describeConfigs, describeGroups, initProducerId, listGroups } from './admin.js';
import { fetch, listOffsets } from './fetch.js';
import { heartbeat, joinGroup, leaveGroup, syncGroup } from './groups.js';
import { apiVersions, findCoordinator, metadata } from './metadata.js';
import { offsetCommit, offsetFetch } from './offsets.js';
import { produce } from './produce.js';
import type { Handler } from './types.js';

export const HANDLERS: ReadonlyMap<number, Handler> = new Map<number, Handler>([
  [API.ApiVersions, apiVersions],
  [API.Metadata, metadata],
  [API.Produce, produce],
  [API.Fetch, fetch],
  [API.ListOffsets, listOffsets],
  [API.FindCoordinator, findCoordinator],
  [API.JoinGroup, joinGroup],
  [API.SyncGroup, syncGroup],
  [API.Heartbeat, heartbeat],
  [API.LeaveGroup, leaveGroup],
  [API.OffsetCommit, offsetCommit],
  [API.OffsetFetch, offsetFetch],
  [API.CreateTopics, createTopics],
  [API.DeleteTopics, deleteTopics],
  [API.DescribeConfigs, describeConfigs],
  [API.ListGroups, listGroups],
  [API.DescribeGroups, describeGroups],
  [API.DeleteGroups, deleteGroups],
  [API.InitProducerId, initProducerId],
]);
