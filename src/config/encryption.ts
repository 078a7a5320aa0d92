/**
 * Encryption-at-rest configuration: `QUEEN_ENCRYPTION_KEY` (the key new payloads are written
 * with) and `QUEEN_ENCRYPTION_KEY_PREVIOUS` (comma-separated keys that may still decrypt).
 *
 * Both take 64 hexadecimal characters (either case) = 32 bytes for AES-256. Anything else is a
 * fatal {@link ConfigError} before the listener binds (docs/configuration.md#encryption): the reference ignores
 * a malformed key and stores flagged queues in clear; we refuse to boot.
 *
 * Keys are held as `KeyObject`s, never as strings or Buffers, so that printing or serialising the
 * configuration cannot leak them (`util.inspect` shows only the size, `JSON.stringify` gives `{}`).
 * Error messages name the variable and the rule, never the value.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import { ConfigError, type Env } from './env.js';

/** Names of the encryption variables (docs/configuration.md#encryption). */
export const KEY_VAR = 'QUEEN_ENCRYPTION_KEY';
export const PREVIOUS_VAR = 'QUEEN_ENCRYPTION_KEY_PREVIOUS';

/** Validated encryption keys. */
export interface EncryptionConfig {
  /** The current key (writes and reads), or null when `QUEEN_ENCRYPTION_KEY` is unset or empty. */
  readonly key: KeyObject | null;
  /** Older keys that may still decrypt, in the order listed (empty when none). */
  readonly previous: readonly KeyObject[];
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/**
 * Parses one key. `label` names where it came from (the variable, or the variable and entry).
 * @throws ConfigError naming `label` and the expected format; the value is never echoed.
 */
export function parseKey(value: string, label: string): KeyObject {
  if (HEX64.test(value)) return createSecretKey(Buffer.from(value, 'hex'));
  if (value.length !== 64) {
    throw new ConfigError(`${label} must be 64 hex characters (32 bytes); got ${value.length} characters`);
  }
  throw new ConfigError(`${label} is not valid hex (expected 64 characters 0-9, a-f)`);
}

/**
 * Reads `QUEEN_ENCRYPTION_KEY` and `QUEEN_ENCRYPTION_KEY_PREVIOUS`.
 *
 * - Unset or empty current key: encryption is off (flagged queues then refuse pushes, docs/security.md#encryption-at-rest).
 * - Surrounding whitespace is ignored; empty entries in the previous list (`a,,b`, a trailing
 *   comma) are skipped.
 * - A previous list without a current key is refused: rotation needs a key to write with.
 *
 * @throws ConfigError naming the variable (and entry number) and the expected format.
 */
export function loadEncryptionConfig(env: Env = process.env): EncryptionConfig {
  const cur = (env[KEY_VAR] ?? '').trim();
  const prevRaw = (env[PREVIOUS_VAR] ?? '').trim();
  const entries = prevRaw === '' ? [] : prevRaw.split(',').map((s) => s.trim());
  const previous: KeyObject[] = [];
  entries.forEach((e, i) => {
    if (e !== '') previous.push(parseKey(e, entries.length > 1 ? `${PREVIOUS_VAR} entry ${i + 1}` : PREVIOUS_VAR));
  });
  if (cur === '') {
    if (previous.length > 0) {
      throw new ConfigError(`${PREVIOUS_VAR} is set but ${KEY_VAR} is not: set ${KEY_VAR} to the key new payloads are written with`);
    }
    return { key: null, previous: [] };
  }
  return { key: parseKey(cur, KEY_VAR), previous };
}
