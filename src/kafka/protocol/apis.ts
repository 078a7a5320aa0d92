/**
 * The one table of advertised APIs and versions (docs/kafka.md#supported-apis): ApiVersions
 * answers it verbatim and dispatch gates on it. Each ceiling stops below a feature the broker does
 * not model (queen-mq/queen: protocols/queen-kafka/src/versions.rs states the same windows).
 */
import * as admin from './admin.js';
import { ApiVersionsRequest, ApiVersionsResponse } from './api-versions.js';
import { FetchRequest, FetchResponse } from './fetch.js';
import { FindCoordinatorRequest, FindCoordinatorResponse } from './find-coordinator.js';
import * as groups from './groups.js';
import { ListOffsetsRequest, ListOffsetsResponse } from './list-offsets.js';
import { MetadataRequest, MetadataResponse } from './metadata.js';
import { OffsetCommitRequest, OffsetCommitResponse } from './offset-commit.js';
import { OffsetFetchRequest, OffsetFetchResponse } from './offset-fetch.js';
import { ProduceRequest, ProduceResponse } from './produce.js';
import { SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse } from './sasl.js';
import type { Struct } from './schema.js';

/** One advertised API. `flexibleFrom`: first version with compact types and tagged fields. */
export interface ApiSpec {
  key: number;
  name: string;
  min: number;
  max: number;
  flexibleFrom: number;
  request: Struct;
  response: Struct;
}

export const API = {
  Produce: 0, Fetch: 1, ListOffsets: 2, Metadata: 3, OffsetCommit: 8, OffsetFetch: 9, FindCoordinator: 10,
  JoinGroup: 11, Heartbeat: 12, LeaveGroup: 13, SyncGroup: 14, DescribeGroups: 15, ListGroups: 16,
  SaslHandshake: 17, ApiVersions: 18, CreateTopics: 19, DeleteTopics: 20, InitProducerId: 22,
  DescribeConfigs: 32, SaslAuthenticate: 36, DeleteGroups: 42,
} as const;

const NONE = 1000;

/** Advertised APIs by key. */
export const APIS: ReadonlyMap<number, ApiSpec> = new Map(([
  [API.Produce, 'Produce', 3, 9, 9, ProduceRequest, ProduceResponse],
  [API.Fetch, 'Fetch', 4, 6, NONE, FetchRequest, FetchResponse],
  [API.ListOffsets, 'ListOffsets', 1, 5, NONE, ListOffsetsRequest, ListOffsetsResponse],
  [API.Metadata, 'Metadata', 0, 9, 9, MetadataRequest, MetadataResponse],
  [API.OffsetCommit, 'OffsetCommit', 2, 6, NONE, OffsetCommitRequest, OffsetCommitResponse],
  [API.OffsetFetch, 'OffsetFetch', 1, 7, 6, OffsetFetchRequest, OffsetFetchResponse],
  [API.FindCoordinator, 'FindCoordinator', 0, 3, 3, FindCoordinatorRequest, FindCoordinatorResponse],
  [API.JoinGroup, 'JoinGroup', 0, 4, NONE, groups.JoinGroupRequest, groups.JoinGroupResponse],
  [API.Heartbeat, 'Heartbeat', 0, 2, NONE, groups.HeartbeatRequest, groups.HeartbeatResponse],
  [API.LeaveGroup, 'LeaveGroup', 0, 2, NONE, groups.LeaveGroupRequest, groups.LeaveGroupResponse],
  [API.SyncGroup, 'SyncGroup', 0, 2, NONE, groups.SyncGroupRequest, groups.SyncGroupResponse],
  [API.DescribeGroups, 'DescribeGroups', 0, 3, NONE, admin.DescribeGroupsRequest, admin.DescribeGroupsResponse],
  [API.ListGroups, 'ListGroups', 0, 4, 3, admin.ListGroupsRequest, admin.ListGroupsResponse],
  [API.SaslHandshake, 'SaslHandshake', 0, 1, NONE, SaslHandshakeRequest, SaslHandshakeResponse],
  [API.ApiVersions, 'ApiVersions', 0, 3, 3, ApiVersionsRequest, ApiVersionsResponse],
  [API.CreateTopics, 'CreateTopics', 2, 6, 5, admin.CreateTopicsRequest, admin.CreateTopicsResponse],
  [API.DeleteTopics, 'DeleteTopics', 1, 5, 4, admin.DeleteTopicsRequest, admin.DeleteTopicsResponse],
  [API.InitProducerId, 'InitProducerId', 0, 4, 2, admin.InitProducerIdRequest, admin.InitProducerIdResponse],
  [API.DescribeConfigs, 'DescribeConfigs', 1, 4, 4, admin.DescribeConfigsRequest, admin.DescribeConfigsResponse],
  [API.SaslAuthenticate, 'SaslAuthenticate', 0, 1, NONE, SaslAuthenticateRequest, SaslAuthenticateResponse],
  [API.DeleteGroups, 'DeleteGroups', 0, 2, 2, admin.DeleteGroupsRequest, admin.DeleteGroupsResponse],
] as const).map(([key, name, min, max, flexibleFrom, request, response]) => [key, { key, name, min, max, flexibleFrom, request, response }]));
