/** JoinGroup, SyncGroup, Heartbeat and LeaveGroup (docs/kafka.md#consumer-groups) on the in-memory coordinator. */
import { validGroupId } from '../groups/coordinator.js';
import type { HeartbeatRequestData, JoinGroupRequestData, LeaveGroupRequestData, SyncGroupRequestData } from '../protocol/groups.js';
import { ErrorCode } from '../errors.js';
import type { Body, Handler } from './types.js';

/** The group APIs need read-write access (docs/kafka.md#sasl-plain). */
const REFUSED: Body = { throttle_time_ms: 0, error_code: ErrorCode.GROUP_AUTHORIZATION_FAILED, generation_id: -1, protocol_name: '', leader: '', member_id: '', members: [], assignment: Buffer.alloc(0) };

export const joinGroup: Handler = async (ctx, conn, body, version) => {
  if (!conn.may('read-write')) return REFUSED;
  const req = body as unknown as JoinGroupRequestData;
  // The durable group index (docs/kafka.md#storage): ListGroups still lists the group after a restart.
  if (validGroupId(req.group_id)) await ctx.services.kafkaMeta.indexGroup(req.group_id).catch((e: unknown) => ctx.log.warn({ err: e, group: req.group_id }, 'kafka: group not indexed'));
  return { throttle_time_ms: 0, ...(await ctx.groups.join(req, version, conn.clientId ?? '', conn.clientHost)) };
};

export const syncGroup: Handler = async (ctx, conn, body) => !conn.may('read-write') ? REFUSED : ({ throttle_time_ms: 0, ...(await ctx.groups.sync(body as unknown as SyncGroupRequestData)) });

export const heartbeat: Handler = (ctx, conn, body) => {
  if (!conn.may('read-write')) return Promise.resolve(REFUSED);
  const req = body as unknown as HeartbeatRequestData;
  return Promise.resolve({ throttle_time_ms: 0, error_code: ctx.groups.heartbeat(req.group_id, req.generation_id, req.member_id) });
};

export const leaveGroup: Handler = (ctx, conn, body) => {
  if (!conn.may('read-write')) return Promise.resolve(REFUSED);
  const req = body as unknown as LeaveGroupRequestData;
  return Promise.resolve({ throttle_time_ms: 0, error_code: ctx.groups.leave(req.group_id, req.member_id) });
};
