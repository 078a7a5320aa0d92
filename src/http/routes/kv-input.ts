/**
 * Validation of KV operations (docs/http-api.md#kv) into {@link KvOp}s. Shared by `POST
 * /api/v1/kv`, the path routes, and the `kv` rider of `POST /api/v1/transaction`. Every refusal
 * is a 400 `{"error":"kv_bad_request","code":<specific code>,"reason":<what and where>}`; an
 * oversized value is 413 `payload_too_large`.
 */
import type { KvExpiry, KvOp } from '../../broker/coordination/kv.js';
import { QueenError, type ErrorCode } from '../../errors.js';
import { controlNumber, stringifyClientJson } from '../../util/json.js';
import { checkNameText } from '../../util/names.js';

type Obj = Record<string, unknown>;

/** Namespace rule. */
export const KV_NS_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Longest key, in UTF-8 bytes. */
export const KV_MAX_KEY_BYTES = 512;
/** Keys per `getMany`; rows per `getPrefix` page (default 100). */
export const KV_MAX_KEYS = 1000;
export const KV_DEFAULT_PAGE = 100;
/** Longest `ttlSeconds`: ten years. */
export const KV_MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;

const OPS = ['get', 'getMany', 'getPrefix', 'put', 'putIfAbsent', 'delete', 'incr', 'check'] as const;

/** A 400 with `code` and a `reason` naming the field. */
export function kvBad(code: ErrorCode, reason: string): QueenError {
  return new QueenError(code, undefined, { reason });
}

/** Limits the parser enforces. */
export interface KvInputLimits {
  maxOps: number;
  maxValueBytes: number;
}

/** Validates a namespace. @throws QueenError `invalid_name` (NUL, lone surrogate), `kv_bad_namespace` */
export function kvNamespace(v: unknown, where: string): string {
  if (typeof v === 'string') checkNameText(`${where}.ns`, v);
  if (typeof v !== 'string' || !KV_NS_RE.test(v)) {
    throw kvBad('kv_bad_namespace', `${where}.ns must match ^[a-z0-9][a-z0-9._-]{0,63}$`);
  }
  return v;
}

/** Validates a key. @throws QueenError `kv_bad_key`, `invalid_name` (NUL, lone surrogate) */
export function kvKey(v: unknown, where: string): string {
  if (typeof v !== 'string' || v === '') throw kvBad('kv_bad_key', `${where} must be a non-empty string`);
  checkNameText(where, v);
  if (Buffer.byteLength(v, 'utf8') > KV_MAX_KEY_BYTES) throw kvBad('kv_bad_key', `${where} is longer than ${KV_MAX_KEY_BYTES} bytes`);
  return v;
}

function int(o: Obj, k: string, where: string, code: ErrorCode, min = Number.MIN_SAFE_INTEGER): number | undefined {
  const v = controlNumber(o[k]);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw kvBad(code, `${where}.${k} must be an integer ≥ ${min}`);
  return v;
}

/** `ttlSeconds` (integer > 0) xor `forever:true`. @throws QueenError `kv_expiry_not_specified`, `kv_bad_ttl` */
export function kvExpiry(o: Obj, where: string): KvExpiry {
  const ttl = controlNumber(o.ttlSeconds);
  const hasTtl = ttl !== undefined && ttl !== null;
  const forever = o.forever === true;
  if (o.forever !== undefined && o.forever !== null && typeof o.forever !== 'boolean') throw kvBad('kv_bad_ttl', `${where}.forever must be true`);
  if (hasTtl && forever) throw kvBad('kv_bad_ttl', `${where}: ttlSeconds and forever:true are exclusive`);
  if (forever) return null;
  if (!hasTtl) throw kvBad('kv_expiry_not_specified', `${where} needs ttlSeconds (integer > 0) or forever:true`);
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl <= 0 || ttl > KV_MAX_TTL_SECONDS) {
    throw kvBad('kv_bad_ttl', `${where}.ttlSeconds must be an integer between 1 and ${KV_MAX_TTL_SECONDS}`);
  }
  return ttl * 1000;
}

function expect(o: Obj, where: string): number | undefined {
  return int(o, 'expect', where, 'kv_bad_expect', 0);
}

function required(o: Obj, where: string): boolean {
  const v = o.required;
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw kvBad('kv_bad_request', `${where}.required must be a boolean`);
  return v;
}

function value(o: Obj, where: string, limits: KvInputLimits): unknown {
  if (!('value' in o) || o.value === undefined) throw kvBad('kv_value_required', `${where}.value is required (null is a legal value)`);
  const bytes = Buffer.byteLength(stringifyClientJson(o.value), 'utf8');
  if (bytes > limits.maxValueBytes) {
    throw new QueenError('payload_too_large', `${where}.value is ${bytes} bytes; the limit is ${limits.maxValueBytes} (QUEEN_MAX_PAYLOAD_BYTES)`);
  }
  return o.value;
}

/**
 * Validates one operation object.
 * @throws QueenError with a `kv_*` code (400) or `payload_too_large` (413)
 */
export function parseKvOp(raw: unknown, where: string, limits: KvInputLimits): KvOp {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw kvBad('kv_bad_request', `${where} must be an object`);
  const o = raw as Obj;
  const name = o.op;
  if (typeof name !== 'string' || !(OPS as readonly string[]).includes(name)) {
    throw kvBad('kv_unknown_op', `${where}.op must be one of ${OPS.join(', ')}; got ${JSON.stringify(name)}`);
  }
  const op = name as KvOp['op'];
  const ns = kvNamespace(o.ns, where);
  switch (op) {
    case 'getMany': {
      if (!Array.isArray(o.keys) || o.keys.length === 0) throw kvBad('kv_bad_key', `${where}.keys must be a non-empty array`);
      if (o.keys.length > KV_MAX_KEYS) throw kvBad('kv_bad_key', `${where}.keys has more than ${KV_MAX_KEYS} keys`);
      return { op, ns, keys: o.keys.map((k: unknown, i: number) => kvKey(k, `${where}.keys[${i}]`)) };
    }
    case 'getPrefix': {
      if (typeof o.prefix !== 'string' || o.prefix === '') throw kvBad('kv_prefix_required', `${where}.prefix must be a non-empty string`);
      return { op, ns, ...page(o, where), prefix: kvPrefix(o.prefix, where) };
    }
    default:
      break;
  }
  const key = kvKey(o.key, `${where}.key`);
  switch (op) {
    case 'get':
      return { op, ns, key };
    case 'put':
    case 'putIfAbsent': {
      const e = expect(o, where);
      if (op === 'putIfAbsent' && e !== undefined && e !== 0) throw kvBad('kv_bad_expect', `${where}: putIfAbsent implies expect:0`);
      return { op, ns, key, value: value(o, where, limits), expiry: kvExpiry(o, where), expect: e, required: required(o, where) };
    }
    case 'delete': {
      const e = expect(o, where);
      if (e === 0) throw kvBad('kv_bad_expect', `${where}: delete with expect:0 can never apply`);
      return { op, ns, key, expect: e, required: required(o, where) };
    }
    case 'incr': {
      const delta = int(o, 'delta', where, 'kv_bad_incr') ?? 1;
      const min = int(o, 'min', where, 'kv_bad_incr');
      const max = int(o, 'max', where, 'kv_bad_incr');
      if (min !== undefined && max !== undefined && min > max) throw kvBad('kv_bad_incr', `${where}: min is above max`);
      return { op, ns, key, delta, min, max, expiry: kvExpiry(o, where), expect: expect(o, where), required: required(o, where) };
    }
    case 'check': {
      const e = expect(o, where);
      if (e === undefined) throw kvBad('kv_bad_expect', `${where}: check needs expect (0 = must not exist, N = at version N)`);
      return { op, ns, key, expect: e, required: required(o, where) };
    }
    default:
      throw kvBad('kv_unknown_op', `${where}.op ${name} is not allowed here`);
  }
}

function kvPrefix(p: string, where: string): string {
  checkNameText(`${where}.prefix`, p);
  if (Buffer.byteLength(p, 'utf8') > KV_MAX_KEY_BYTES) throw kvBad('kv_bad_key', `${where}.prefix is longer than ${KV_MAX_KEY_BYTES} bytes`);
  return p;
}

/** `after`, `limit` (default 100, clamped to 1000), `keysOnly` of a listing. */
export function page(o: Obj, where: string): { after?: string; limit: number; keysOnly: boolean } {
  const out: { after?: string; limit: number; keysOnly: boolean } = { limit: KV_DEFAULT_PAGE, keysOnly: false };
  if (o.after !== undefined && o.after !== null && o.after !== '') {
    if (typeof o.after !== 'string') throw kvBad('kv_bad_request', `${where}.after must be a string (the previous page's nextAfter)`);
    checkNameText(`${where}.after`, o.after);
    out.after = o.after;
  }
  const limit = int(o, 'limit', where, 'kv_bad_limit', 1);
  if (limit !== undefined) out.limit = Math.min(limit, KV_MAX_KEYS);
  if (o.keysOnly !== undefined && o.keysOnly !== null) {
    if (typeof o.keysOnly !== 'boolean') throw kvBad('kv_bad_request', `${where}.keysOnly must be a boolean`);
    out.keysOnly = o.keysOnly;
  }
  return out;
}

/**
 * The operations of a batch body: `{"operations":[…]}` or a bare array.
 * @throws QueenError (see {@link parseKvOp}); `kv_too_many_operations` past `limits.maxOps`
 */
export function parseKvBatch(body: unknown, limits: KvInputLimits): KvOp[] {
  const list = Array.isArray(body) ? body : body && typeof body === 'object' ? (body as Obj).operations : undefined;
  if (!Array.isArray(list)) throw kvBad('kv_bad_request', 'body must be {"operations":[…]} or an array of operations');
  if (list.length === 0) throw kvBad('kv_bad_request', 'operations must not be empty');
  if (list.length > limits.maxOps) throw kvBad('kv_too_many_operations', `${list.length} operations; the limit is ${limits.maxOps}`);
  return list.map((raw: unknown, i: number) => parseKvOp(raw, `operations[${i}]`, limits));
}

/** The `kv` rider of a transaction: like a batch, but `getPrefix` is refused (docs/http-api.md#transaction-riders). */
export function parseKvRider(raw: unknown, limits: KvInputLimits): KvOp[] {
  if (!Array.isArray(raw)) throw kvBad('kv_bad_request', 'kv must be an array of operations');
  if (raw.length > limits.maxOps) throw kvBad('kv_too_many_operations', `${raw.length} kv operations; the limit is ${limits.maxOps}`);
  return raw.map((r: unknown, i: number) => {
    const op = parseKvOp(r, `kv[${i}]`, limits);
    if (op.op === 'getPrefix') throw kvBad('kv_unknown_op', `kv[${i}]: getPrefix is not allowed in a transaction`);
    return op;
  });
}

/** The parser limits from the broker configuration. */
export function kvLimits(c: { maxPushItems: number; maxPayloadBytes: number }): KvInputLimits {
  return { maxOps: c.maxPushItems, maxValueBytes: c.maxPayloadBytes };
}
