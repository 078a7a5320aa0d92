/** SaslHandshake (key 17, v0–1) and SaslAuthenticate (key 36, v0–1); neither flexible here. */
import { arr, f, struct } from './schema.js';

export const SaslHandshakeRequest = struct(f('mechanism', 'string'));
export const SaslHandshakeResponse = struct(f('error_code', 'int16'), f('mechanisms', arr('string')));

export const SaslAuthenticateRequest = struct(f('auth_bytes', 'bytes'));
export const SaslAuthenticateResponse = struct(
  f('error_code', 'int16'),
  f('error_message', 'nstring'),
  f('auth_bytes', 'bytes'),
  f('session_lifetime_ms', 'int64', 1),
);
