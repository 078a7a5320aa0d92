/** FindCoordinator (key 10, v0–3; flexible from v3). */
import { f, struct } from './schema.js';

export const FindCoordinatorRequest = struct(f('key', 'string'), f('key_type', 'int8', 1));

export interface FindCoordinatorRequestData {
  key: string;
  key_type: number;
}

export const FindCoordinatorResponse = struct(
  f('throttle_time_ms', 'int32', 1),
  f('error_code', 'int16'),
  f('error_message', 'nstring', 1),
  f('node_id', 'int32'),
  f('host', 'string'),
  f('port', 'int32'),
);
