/**
 * The mapping between Kafka and Queen (docs/kafka.md#mapping): topic names, partition names, and
 * records ↔ message payloads. A Kafka record is stored as one Queen message whose JSON payload is
 * the envelope `{"h":[{"k","v"}],"k","t","v"}` (keys in that order, base64 bytes); a stored payload
 * that is not an envelope is served as key null, value = its JSON text.
 */
import type { KafkaRecord, RecordHeader } from './protocol/records.js';

/** A legal Kafka topic name that is not internal (`__` prefix): 1–249 of `[A-Za-z0-9._-]`, not `.` or `..`. */
export function legalTopic(name: string): boolean {
  return name.length >= 1 && name.length <= 249 && /^[A-Za-z0-9._-]+$/.test(name) && name !== '.' && name !== '..';
}

/** A topic clients may see or use: legal and not internal. */
export function visibleTopic(name: string): boolean {
  return legalTopic(name) && !name.startsWith('__');
}

/** Kafka partition index of a Queen partition name (`"0"`, `"307"`), or undefined for other names. */
export function partitionIndex(name: string): number | undefined {
  if (!/^(0|[1-9]\d{0,8})$/.test(name)) return undefined;
  return Number(name);
}

/** The stored envelope of a Kafka record. */
export interface Envelope {
  h?: { k: string; v: string | null }[];
  k: string | null;
  t?: number;
  v: string | null;
}

/**
 * A record → its envelope as JSON text (key order h, k, t, v; `h` omitted without headers, `t`
 * when −1; no whitespace). Written directly, not through an object and `JSON.stringify`: the
 * produce path runs it once per record. Base64 needs no escaping; header names go through
 * `JSON.stringify`.
 */
export function envelopeText(rec: { key: Buffer | null; value: Buffer | null; timestamp: number; headers: readonly RecordHeader[] }): string {
  let out = '{';
  if (rec.headers.length > 0) {
    out += '"h":[';
    for (let i = 0; i < rec.headers.length; i++) {
      const h = rec.headers[i]!;
      out += `${i > 0 ? ',' : ''}{"k":${JSON.stringify(h.key)},"v":${h.value === null ? 'null' : `"${h.value.toString('base64')}"`}}`;
    }
    out += '],';
  }
  out += rec.key === null ? '"k":null' : `"k":"${rec.key.toString('base64')}"`;
  if (rec.timestamp !== -1) out += `,"t":${rec.timestamp}`;
  out += rec.value === null ? ',"v":null}' : `,"v":"${rec.value.toString('base64')}"}`;
  return out;
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function b64(v: unknown): Buffer | null | undefined {
  if (v === null) return null;
  if (typeof v !== 'string' || !B64.test(v)) return undefined;
  return Buffer.from(v, 'base64');
}

/**
 * A stored message → a record at `offset`. An envelope is recognised only when it is a JSON
 * object whose keys are a subset of h,k,t,v including k and v, each of the right type.
 */
export function fromPayload(json: string | null, offset: number, createdAt: number): KafkaRecord {
  const native: KafkaRecord = { offset, timestamp: createdAt, key: null, value: json === null ? null : Buffer.from(json, 'utf8'), headers: [] };
  if (json === null || json.charCodeAt(0) !== 0x7b) return native;
  let o: unknown;
  try {
    o = JSON.parse(json);
  } catch {
    return native;
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return native;
  const env = o as Record<string, unknown>;
  const keys = Object.keys(env);
  if (!('k' in env) || !('v' in env) || keys.some((k) => !['h', 'k', 't', 'v'].includes(k))) return native;
  const key = b64(env.k);
  const value = b64(env.v);
  if (key === undefined || value === undefined) return native;
  let timestamp = createdAt;
  if ('t' in env) {
    if (typeof env.t !== 'number') return native;
    // A time that did not fit in 2^53 (stored by an earlier build) falls back to the append time;
    // the record is still served as its key, value and headers, never as the envelope's text.
    if (Number.isSafeInteger(env.t)) timestamp = env.t;
  }
  const headers: RecordHeader[] = [];
  if ('h' in env) {
    if (!Array.isArray(env.h)) return native;
    for (const h of env.h as unknown[]) {
      if (typeof h !== 'object' || h === null) return native;
      const hk = (h as Record<string, unknown>).k;
      const hv = b64((h as Record<string, unknown>).v);
      if (typeof hk !== 'string' || hv === undefined) return native;
      headers.push({ key: hk, value: hv });
    }
  }
  return { offset, timestamp, key, value, headers };
}
