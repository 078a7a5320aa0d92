/**
 * Query-string readers with clear 400s (`invalid_request`) naming the parameter. Query values
 * arrive as strings; booleans accept only `true`/`false` as the typed pop parameters do.
 */
import { QueenError } from '../errors.js';
import { parseIso } from '../util/time.js';

export type Query = Record<string, string | string[] | undefined>;

function one(q: Query, name: string): string | undefined {
  const v = q[name];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

/** A string parameter, or undefined when absent. */
export function qString(q: Query, name: string): string | undefined {
  return one(q, name);
}

/**
 * An integer parameter in `[min, max]`, `fallback` when absent or empty.
 * @throws QueenError `invalid_request`
 */
export function qInt(q: Query, name: string, fallback: number, min: number, max: number): number {
  const v = one(q, name);
  if (v === undefined || v === '') return fallback;
  if (!/^-?\d+$/.test(v)) throw new QueenError('invalid_request', `${name} must be an integer, got ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < min || n > max) throw new QueenError('invalid_request', `${name} must be between ${min} and ${max}, got ${v}`);
  return n;
}

/** Optional integer (undefined when absent). @throws QueenError `invalid_request` */
export function qIntOpt(q: Query, name: string, min: number, max: number): number | undefined {
  const v = one(q, name);
  return v === undefined || v === '' ? undefined : qInt(q, name, 0, min, max);
}

/**
 * `true`/`false`, `fallback` when absent or empty.
 * @throws QueenError `invalid_request`
 */
export function qBool(q: Query, name: string, fallback: boolean): boolean {
  const v = one(q, name);
  if (v === undefined || v === '') return fallback;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new QueenError('invalid_request', `${name} must be true or false, got ${JSON.stringify(v)}`);
}

/**
 * An ISO-8601 time as epoch ms, undefined when absent.
 * @throws QueenError `invalid_request`
 */
export function qTime(q: Query, name: string): number | undefined {
  const v = one(q, name);
  if (v === undefined || v === '') return undefined;
  const t = parseIso(v);
  if (t === undefined) throw new QueenError('invalid_request', `${name} must be an ISO-8601 timestamp, got ${JSON.stringify(v)}`);
  return t;
}
