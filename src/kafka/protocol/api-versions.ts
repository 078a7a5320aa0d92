/** ApiVersions (key 18, v0–3; flexible from v3; the response header is always v0). */
import { arr, f, struct } from './schema.js';

export const ApiVersionsRequest = struct(f('client_software_name', 'string', 3), f('client_software_version', 'string', 3));

export const ApiVersionsResponse = struct(
  f('error_code', 'int16'),
  f('api_keys', arr(struct(f('api_key', 'int16'), f('min_version', 'int16'), f('max_version', 'int16')))),
  f('throttle_time_ms', 'int32', 1),
);

export interface ApiVersionsAnswer {
  error_code: number;
  api_keys: { api_key: number; min_version: number; max_version: number }[];
  throttle_time_ms: number;
}
