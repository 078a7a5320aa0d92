/**
 * The classic group protocol: JoinGroup (key 11, v0–4), SyncGroup (14, v0–2), Heartbeat (12,
 * v0–2), LeaveGroup (13, v0–2). None is flexible in these windows.
 */
import { arr, f, struct } from './schema.js';

export const JoinGroupRequest = struct(
  f('group_id', 'string'),
  f('session_timeout_ms', 'int32'),
  f('rebalance_timeout_ms', 'int32', 1),
  f('member_id', 'string'),
  f('protocol_type', 'string'),
  f('protocols', arr(struct(f('name', 'string'), f('metadata', 'bytes')))),
);

export interface JoinGroupRequestData {
  group_id: string;
  session_timeout_ms: number;
  rebalance_timeout_ms: number;
  member_id: string;
  protocol_type: string;
  protocols: { name: string; metadata: Buffer }[];
}

export const JoinGroupResponse = struct(
  f('throttle_time_ms', 'int32', 2),
  f('error_code', 'int16'),
  f('generation_id', 'int32'),
  f('protocol_name', 'string'),
  f('leader', 'string'),
  f('member_id', 'string'),
  f('members', arr(struct(f('member_id', 'string'), f('metadata', 'bytes')))),
);

export interface JoinGroupAnswer {
  error_code: number;
  generation_id: number;
  protocol_name: string;
  leader: string;
  member_id: string;
  members: { member_id: string; metadata: Buffer }[];
}

export const SyncGroupRequest = struct(
  f('group_id', 'string'),
  f('generation_id', 'int32'),
  f('member_id', 'string'),
  f('assignments', arr(struct(f('member_id', 'string'), f('assignment', 'bytes')))),
);

export interface SyncGroupRequestData {
  group_id: string;
  generation_id: number;
  member_id: string;
  assignments: { member_id: string; assignment: Buffer }[];
}

export const SyncGroupResponse = struct(f('throttle_time_ms', 'int32', 1), f('error_code', 'int16'), f('assignment', 'bytes'));

export const HeartbeatRequest = struct(f('group_id', 'string'), f('generation_id', 'int32'), f('member_id', 'string'));

export interface HeartbeatRequestData {
  group_id: string;
  generation_id: number;
  member_id: string;
}

export const HeartbeatResponse = struct(f('throttle_time_ms', 'int32', 1), f('error_code', 'int16'));

export const LeaveGroupRequest = struct(f('group_id', 'string'), f('member_id', 'string'));

export interface LeaveGroupRequestData {
  group_id: string;
  member_id: string;
}

export const LeaveGroupResponse = struct(f('throttle_time_ms', 'int32', 1), f('error_code', 'int16'));
