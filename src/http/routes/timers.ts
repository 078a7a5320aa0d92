/**
 * Timer routes (docs/http-api.md#timers): `POST /api/v1/timers` (schedule / reschedule / cancel in
 * one all-or-nothing batch), `GET /api/v1/timers/:queue` (keyset listing by key, `after`),
 * `GET /api/v1/timers/:queue/*timerKey` (peek) and `DELETE /api/v1/timers/:queue/*timerKey`
 * (cancel). Verdicts (`absent`, `too_late`) are 200 answers with `ok:false`. Every route acts on the
 * request's tenant's timers (docs/proxy.md#tenancy).
 */
import type { FastifyInstance } from 'fastify';
import type { TimerOp } from '../../broker/coordination/timer-ops.js';
import type { Config } from '../../config/index.js';
import type { Timers } from '../../broker/coordination/timers.js';
import { QueenError } from '../../errors.js';
import { controlNumber, scanJsonText } from '../../util/json.js';
import type { RouteContext } from '../app.js';
import { producerSubOf } from '../identity.js';
import { qInt, qString, type Query } from '../query.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

const OPS: readonly TimerOp['op'][] = ['schedule', 'reschedule', 'cancel'];
/** Fields the broker owns: a request naming one is refused rather than silently ignored. */
const SERVER_OWNED = ['producerSub', 'messageId', 'tenant', 'deliverAt'] as const;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

function bad(message: string): QueenError {
  return new QueenError('invalid_request', message);
}

/** The limits a timer operation is checked against (`QUEEN_MAX_PAYLOAD_BYTES`, `QUEEN_MAX_JSON_DEPTH`). */
export type TimerLimits = Pick<Config['limits'], 'maxPayloadBytes' | 'maxJsonDepth'>;

/**
 * Decodes the wire payload: base64 (standard or URL-safe) of UTF-8 JSON bytes → JSON text, held to
 * the body limits of every other payload (size, then nesting depth: the decoded text is a message
 * that a pop answers).
 * @throws QueenError `invalid_request`, `payload_too_large`, `json_too_deep`
 */
function decodePayload(v: unknown, at: string, limits: TimerLimits): string {
  const maxBytes = limits.maxPayloadBytes;
  if (typeof v !== 'string') throw bad(`${at}.payload must be a base64 string of the JSON payload bytes`);
  if (Math.floor((v.length * 3) / 4) > maxBytes + 3) {
    throw new QueenError('payload_too_large', `${at}.payload exceeds ${maxBytes} bytes (QUEEN_MAX_PAYLOAD_BYTES)`);
  }
  if (!BASE64.test(v) && !BASE64URL.test(v)) throw bad(`${at}.payload is not valid base64`);
  const bytes = Buffer.from(v, BASE64.test(v) ? 'base64' : 'base64url');
  if (bytes.length > maxBytes) throw new QueenError('payload_too_large', `${at}.payload exceeds ${maxBytes} bytes (QUEEN_MAX_PAYLOAD_BYTES)`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw bad(`${at}.payload must be base64 of JSON bytes (the decoded bytes are not UTF-8)`);
  }
  if (scanJsonText(text, limits.maxJsonDepth).tooDeep) {
    throw new QueenError('json_too_deep', `${at}.payload: JSON nested deeper than ${limits.maxJsonDepth} levels (QUEEN_MAX_JSON_DEPTH)`);
  }
  try {
    JSON.parse(text);
  } catch {
    throw bad(`${at}.payload must be base64 of JSON bytes (the decoded bytes are not JSON)`);
  }
  return text;
}

/**
 * One wire operation → {@link TimerOp}, refusing what this broker does not do.
 * @throws QueenError `invalid_request`, `timer_unsupported`, `payload_too_large`, `json_too_deep`
 */
export function toTimerOp(raw: unknown, at: string, limits: TimerLimits): TimerOp {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad(`${at} must be an object`);
  const o = { ...(raw as Record<string, unknown>) };
  if (o.delayMs !== undefined) o.delayMs = controlNumber(o.delayMs);
  for (const f of SERVER_OWNED) if (f in o) throw bad(`${at}.${f} is set by the broker and must not be sent`);
  if (!OPS.includes(o.op as TimerOp['op'])) throw bad(`${at}.op must be one of ${OPS.join(', ')}, got ${JSON.stringify(o.op)}`);
  const op = o.op as TimerOp['op'];
  for (const f of ['queue', 'timerKey'] as const) {
    if (typeof o[f] !== 'string') throw bad(`${at}.${f} must be a string`);
  }
  for (const f of ['partition', 'txn'] as const) {
    if (o[f] !== undefined && typeof o[f] !== 'string') throw bad(`${at}.${f} must be a string`);
  }
  if (o.delayMs !== undefined && (typeof o.delayMs !== 'number' || !Number.isFinite(o.delayMs))) throw bad(`${at}.delayMs must be a finite number of ms`);
  if (o.payloadZstd !== undefined && o.payloadZstd !== false) {
    throw new QueenError('timer_unsupported', `${at}.payloadZstd: zstd-compressed timer payloads are not supported; send plain base64 JSON`);
  }
  if (o.encrypted !== undefined && o.encrypted !== false) {
    throw new QueenError('timer_unsupported', `${at}.encrypted: client-encrypted timer payloads are not supported; the broker encrypts at rest for queues with encryptionEnabled`);
  }
  if (op === 'cancel' && o.payload !== undefined) throw bad(`${at}.payload is not accepted on cancel`);
  return {
    op,
    queue: o.queue as string,
    timerKey: o.timerKey as string,
    partition: o.partition as string | undefined,
    delayMs: o.delayMs as number | undefined,
    txn: o.txn as string | undefined,
    payloadJson: o.payload === undefined ? undefined : decodePayload(o.payload, at, limits),
  };
}

/**
 * The `timers` rider of `POST /api/v1/transaction` (docs/http-api.md#transaction-riders): parsed and checked before the
 * transaction runs; undefined when absent.
 * @throws QueenError with the transaction failure body (`success:false`, `reason`, `results:[]`)
 */
export function parseTimerRider(timers: Timers, raw: unknown, limits: Pick<Config['limits'], 'maxPushItems'> & TimerLimits): TimerOp[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  try {
    if (!Array.isArray(raw)) throw bad('timers must be an array of timer operations');
    if (raw.length > limits.maxPushItems) {
      throw new QueenError('batch_too_large', `timers has ${raw.length} entries; the limit is ${limits.maxPushItems} (QUEEN_MAX_PUSH_ITEMS)`);
    }
    const ops = raw.map((r, i) => toTimerOp(r, `timers[${i}]`, limits));
    timers.check(ops, 'timers');
    return ops;
  } catch (e) {
    if (!(e instanceof QueenError)) throw e;
    const reason = e.code === 'timer_horizon_exceeded' || e.code === 'payload_too_large' ? e.code : 'bad_request';
    throw new QueenError(e.code, e.message, { success: false, reason, results: [] });
  }
}

/** Fastify plugin registering the routes this module describes. */
export async function timerRoutes(app: FastifyInstance, { services, config }: RouteContext): Promise<void> {
  const timers = services.timers;
  const max = config.limits.maxPushItems;

  app.post<Replies<'POST /api/v1/timers'>>('/api/v1/timers', async (req) => {
    const body = req.body as unknown;
    const raw = Array.isArray(body) ? body : (body as { operations?: unknown } | undefined)?.operations;
    if (!Array.isArray(raw)) throw new QueenError('operations_required');
    if (raw.length > max) throw new QueenError('batch_too_large', `operations has ${raw.length} entries; the limit is ${max} (QUEEN_MAX_PUSH_ITEMS)`);
    const ops = raw.map((r, i) => toTimerOp(r, `operations[${i}]`, config.limits));
    return { results: wire(await timers.apply(ops, producerSubOf(req), req.tenant)) };
  });

  app.get<{ Params: { queue: string }; Querystring: Query } & Replies<'GET /api/v1/timers/:queue'>>('/api/v1/timers/:queue', async (req) => {
    const after = qString(req.query, 'after');
    return wire(await timers.list(req.params.queue, after === undefined || after === '' ? undefined : after, qInt(req.query, 'limit', 100, 1, 1000), req.tenant));
  });

  app.get<{ Params: { queue: string; '*': string } } & Replies<'GET /api/v1/timers/:queue/*'>>('/api/v1/timers/:queue/*', async (req) => {
    const { queue, '*': timerKey } = req.params;
    const t = await timers.peek(queue, timerKey, req.tenant);
    return t ? { found: true, ...t } : { found: false, queue, timerKey };
  });

  app.delete<{ Params: { queue: string; '*': string } } & Replies<'DELETE /api/v1/timers/:queue/*'>>('/api/v1/timers/:queue/*', async (req) => {
    const { queue, '*': timerKey } = req.params;
    const [r] = await timers.apply([{ op: 'cancel', queue, timerKey }], producerSubOf(req), req.tenant);
    return wire(r);
  });
}
