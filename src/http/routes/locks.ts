/**
 * `POST /api/v1/locks` (docs/http-api.md#locks): `{"operations":[…]}` or a bare array of
 * `acquire {name, ttlSeconds, owner?, limit?}`, `renew {name, token, ttlSeconds, owner?, slot?}`,
 * `release {name, token, slot?}`, `get {name}`. Verdicts answer 200; malformed input is
 * 400 `{"error":"locks_bad_request","code":"locks_bad_request","reason":…}`.
 */
import type { FastifyInstance } from 'fastify';
import { MAX_LOCK_SLOTS, runLocks, type LockOp } from '../../broker/coordination/locks.js';
import { QueenError } from '../../errors.js';
import { controlNumber } from '../../util/json.js';
import { checkNameText } from '../../util/names.js';
import type { RouteContext } from '../app.js';
import { KV_MAX_TTL_SECONDS } from './kv-input.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

type Obj = Record<string, unknown>;

/** Longest lock name in UTF-8 bytes (the permit key `<name>#<slot>` stays within 512). */
const MAX_LOCK_NAME_BYTES = 500;
const MAX_OWNER_BYTES = 256;

function bad(reason: string): QueenError {
  return new QueenError('locks_bad_request', undefined, { reason });
}

function int(o: Obj, k: string, where: string, min: number, max: number, required: boolean): number | undefined {
  const v = controlNumber(o[k]);
  if (v === undefined || v === null) {
    if (required) throw bad(`${where}.${k} is required`);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw bad(`${where}.${k} must be an integer between ${min} and ${max}`);
  return v;
}

function token(o: Obj, where: string): number {
  const v = typeof o.token === 'string' && /^[1-9][0-9]{0,15}$/.test(o.token) ? Number(o.token) : o.token;
  return int({ token: v }, 'token', where, 1, Number.MAX_SAFE_INTEGER, true)!;
}

function owner(o: Obj, where: string): string | null {
  const v = o.owner;
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || Buffer.byteLength(v, 'utf8') > MAX_OWNER_BYTES) throw bad(`${where}.owner must be a string of at most ${MAX_OWNER_BYTES} bytes`);
  checkNameText(`${where}.owner`, v);
  return v;
}

function parseOp(raw: unknown, where: string): LockOp {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad(`${where} must be an object`);
  const o = raw as Obj;
  const name = o.name;
  if (typeof name !== 'string' || name === '' || Buffer.byteLength(name, 'utf8') > MAX_LOCK_NAME_BYTES) {
    throw bad(`${where}.name must be a non-empty string of at most ${MAX_LOCK_NAME_BYTES} bytes`);
  }
  checkNameText(`${where}.name`, name);
  const ttl = () => int(o, 'ttlSeconds', where, 1, KV_MAX_TTL_SECONDS, true)! * 1000;
  const slot = () => int(o, 'slot', where, 0, MAX_LOCK_SLOTS - 1, false);
  switch (o.op) {
    case 'acquire':
      return { op: 'acquire', name, ttlMs: ttl(), owner: owner(o, where), limit: int(o, 'limit', where, 1, MAX_LOCK_SLOTS, false) ?? 1 };
    case 'renew':
      return { op: 'renew', name, token: token(o, where), ttlMs: ttl(), owner: owner(o, where), slot: slot() };
    case 'release':
      return { op: 'release', name, token: token(o, where), slot: slot() };
    case 'get':
      return { op: 'get', name };
    default:
      throw bad(`${where}.op must be acquire, renew, release or get; got ${JSON.stringify(o.op)}`);
  }
}

/** Fastify plugin registering the routes this module describes. */
export async function lockRoutes(app: FastifyInstance, { services, config }: RouteContext): Promise<void> {
  app.post<Replies<'POST /api/v1/locks'>>('/api/v1/locks', async (req) => {
    const body = req.body;
    const list = Array.isArray(body) ? body : body && typeof body === 'object' ? (body as Obj).operations : undefined;
    if (!Array.isArray(list) || list.length === 0) throw bad('body must be {"operations":[…]} or a non-empty array of operations');
    if (list.length > config.limits.maxPushItems) throw bad(`${list.length} operations; the limit is ${config.limits.maxPushItems}`);
    const ops = list.map((r: unknown, i: number) => parseOp(r, `operations[${i}]`));
    return { results: wire(await runLocks(services.kv, ops, req.tenant)) };
  });
}
