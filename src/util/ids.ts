/**
 * Identifier minting. Message ids and lease ids are UUIDv7 (time-ordered, docs/http-api.md#conventions);
 * queue and partition ids are random UUIDv4.
 */
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** A new UUIDv7 string (message ids, lease ids, DLQ row ids, trace ids). */
export function newId(): string {
  return uuidv7();
}

/** A new random UUIDv4 string (queue and partition ids). */
export function newRandomId(): string {
  return randomUUID();
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `s` is a UUID string of any version. */
export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_RE.test(s);
}
