/** JoinGroup, SyncGroup, Heartbeat and LeaveGroup (docs/kafka.md#consumer-groups) on the in-memory coordinator. */
import type { HeartbeatRequestData, JoinGroupRequestData, LeaveGroupRequestData, SyncGroupRequestData } from '../protocol/groups.js';
import type { Handler } from './types.js';

export const joinGroup: Handler = async (ctx, conn, body, version) => ({
  throttle_time_ms: 0,
  ...(await ctx.groups.join(body as unknown as JoinGroupRequestData, version, conn.clientId ?? '', conn.clientHost)),
});

export const syncGroup: Handler = async (ctx, _conn, body) => ({ throttle_time_ms: 0, ...(await ctx.groups.sync(body as unknown as SyncGroupRequestData)) });

export const heartbeat: Handler = (ctx, _conn, body) => {
  const req = body as unknown as HeartbeatRequestData;
  return Promise.resolve({ throttle_time_ms: 0, error_code: ctx.groups.heartbeat(req.group_id, req.generation_id, req.member_id) });
};

export const leaveGroup: Handler = (ctx, _conn, body) => {
  const req = body as unknown as LeaveGroupRequestData;
  return Promise.resolve({ throttle_time_ms: 0, error_code: ctx.groups.leave(req.group_id, req.member_id) });
};
