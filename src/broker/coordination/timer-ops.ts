/**
 * Timer rules (scheduled messages, docs/http-api.md#timers): what schedule, reschedule and cancel do
 * to the stored timers, and what firing one does. No HTTP, no clock of its own: every function
 * takes `now` and decides the ops of one unit of the operation contract (src/storage/contract.ts),
 * so a batch of operations, or a firing (delete the timer + push its message), commits all or nothing.
 *
 * Payloads travel as base64 of the JSON bytes; they are stored through the broker's payload codec,
 * so a queue with `encryptionEnabled` keeps its timers' payloads encrypted at rest.
 */
import { QueenError } from '../../errors.js';
import { type AppendResult, type QueueBackend, type UnitOp, type UnitOpResult } from '../../storage/contract.js';
import type { PayloadCodec } from '../../model/codec.js';
import type { TimerRow } from '../../storage/timers.js';
import { newId } from '../../util/ids.js';
import { RawJson } from '../../util/json.js';
import { iso } from '../../util/time.js';
import { planPush, pushAppends, pushResults, queueOptionsOf, type PushContext, type PushResult, type QueueOptionsByName } from '../messaging/push.js';

/** Longest delay a timer may be scheduled with: 90 days (docs/http-api.md#timers). */
export const TIMER_HORIZON_MS = 90 * 24 * 3600 * 1000;

/** One operation of `POST /api/v1/timers` (or of a transaction's `timers` rider), validated for shape. */
export interface TimerOp {
  op: 'schedule' | 'reschedule' | 'cancel';
  queue: string;
  timerKey: string;
  /** Default `Default`. */
  partition?: string | undefined;
  /** ms from now; required on schedule and reschedule, refused on cancel. */
  delayMs?: number | undefined;
  /** transactionId of the delivered message; required on schedule. */
  txn?: string | undefined;
  /** JSON text of the payload (decoded from the wire's base64); required on schedule. */
  payloadJson?: string | undefined;
}

/** Per-operation verdict; `ok:false` for `absent` and `too_late` (verdicts, not HTTP errors). */
export interface TimerResult {
  index: number;
  op: TimerOp['op'];
  ok: boolean;
  status: 'scheduled' | 'rescheduled' | 'cancelled' | 'absent' | 'too_late';
  queue: string;
  timerKey: string;
  txn?: string;
  messageId?: string;
  deliverAt?: string;
}

/** A timer in the peek/list wire shape of docs/http-api.md#timers. */
export interface TimerView {
  queue: string;
  timerKey: string;
  partition: string;
  deliverAt: string;
  txn: string;
  messageId: string;
  /** base64 of the JSON payload bytes; null when the stored payload cannot be opened. */
  payload: string | null;
  payloadZstd: false;
  /** Client-side encryption flag of the wire format (never set here: encryption is at rest). */
  encrypted: false;
  /** True when the stored payload is encrypted at rest (queue `encryptionEnabled`). */
  encryptedAtRest: boolean;
  producerSub: string | null;
  attempts: number;
  lastError: string | null;
  /** True once due: the broker is delivering it; cancel and reschedule answer `too_late`. */
  claimed: boolean;
  createdAt: string;
  updatedAt: string;
}

/**
 * Checks every operation's names, delay and payload before anything is written.
 * @throws QueenError `invalid_request`, `name_too_long`, `invalid_name`, `timer_horizon_exceeded`,
 *   `payload_too_large`
 */
export function checkTimerOps(ctx: PushContext, ops: readonly TimerOp[], where = 'operations'): void {
  const maxPayload = ctx.maxPayloadBytes;
  ops.forEach((o, i) => {
    const at = `${where}[${i}]`;
    if (o.queue === '') throw new QueenError('invalid_request', `${at}.queue must not be empty`);
    if (o.timerKey === '') throw new QueenError('invalid_request', `${at}.timerKey must not be empty`);
    ctx.checkName('queue', o.queue);
    ctx.checkName('timerKey', o.timerKey);
    if (o.partition !== undefined) {
      if (o.partition === '') throw new QueenError('invalid_request', `${at}.partition must not be empty (omit it for Default)`);
      ctx.checkName('partition', o.partition);
    }
    if (o.txn !== undefined) {
      if (o.txn === '') throw new QueenError('invalid_request', `${at}.txn must not be empty`);
      ctx.checkName('txn', o.txn);
    }
    if (o.op === 'cancel') {
      if (o.delayMs !== undefined) throw new QueenError('invalid_request', `${at}.delayMs is not accepted on cancel`);
    } else {
      if (o.delayMs === undefined) throw new QueenError('invalid_request', `${at}.delayMs is required on ${o.op}`);
      if (!Number.isSafeInteger(o.delayMs)) throw new QueenError('invalid_request', `${at}.delayMs must be an integer number of milliseconds`);
      if (o.delayMs > TIMER_HORIZON_MS) {
        throw new QueenError('timer_horizon_exceeded', `${at}.delayMs ${o.delayMs} exceeds the ${TIMER_HORIZON_MS} ms (90 days) horizon`);
      }
    }
    if (o.op === 'schedule') {
      if (o.txn === undefined) throw new QueenError('invalid_request', `${at}.txn is required on schedule`);
      if (o.payloadJson === undefined) throw new QueenError('invalid_request', `${at}.payload is required on schedule`);
    }
    if (o.payloadJson !== undefined && o.payloadJson.length > maxPayload / 3 && Buffer.byteLength(o.payloadJson, 'utf8') > maxPayload) {
      throw new QueenError('payload_too_large', `${at}.payload exceeds ${maxPayload} bytes (QUEEN_MAX_PAYLOAD_BYTES)`);
    }
  });
}

/** The stored form of a payload for `queue` (encrypted when the queue says so). @throws QueenError `encryption_unavailable` */
function encodeFor(ctx: PushContext, options: QueueOptionsByName, queue: string, json: string): { payload: string | Buffer; encrypted: boolean } {
  return ctx.codec.encode(options.get(queue)?.encryptionEnabled ?? false, json);
}

/**
 * Decides checked operations in order (later operations see earlier ones) on the timers read
 * through the operation contract, as one unit's ops: each timer read is expected unchanged
 * (`timerExpect`), so a unit decided on a timer that changed meanwhile is refused and decided again.
 * A timer already due is being delivered: cancel, reschedule and schedule of its key answer
 * `too_late` and change nothing.
 * @param producerSub the scheduler's JWT `sub`, stamped on the delivered message
 * @param tenant the tenant whose timers (and queues) the operations name
 * @returns one verdict per operation, the unit's ops, and the earliest deliverAt written (to arm the firing timer)
 * @throws QueenError `encryption_unavailable` (nothing is written)
 */
export async function decideTimerOps(
  ctx: PushContext, backend: QueueBackend, ops: readonly TimerOp[], producerSub: string | null, now: number, tenant: string,
): Promise<{ results: TimerResult[]; ops: UnitOp[]; earliest: number | undefined }> {
  const timers = backend.timers;
  const options = await queueOptionsOf(backend, ops.filter((o) => o.payloadJson !== undefined), tenant);
  const results: TimerResult[] = [];
  const expects: UnitOp[] = [];
  const writes: UnitOp[] = [];
  const seen = new Map<string, TimerRow | null>();
  const current = async (queue: string, timerKey: string): Promise<TimerRow | undefined> => {
    const k = `${queue}\u0000${timerKey}`;
    if (!seen.has(k)) {
      const t = (await timers.get(tenant, queue, timerKey)) ?? null;
      seen.set(k, t);
      expects.push({
        op: 'timerExpect', tenant, queue, timerKey,
        expect: t ? { deliverAt: t.deliverAt, messageId: t.messageId, attempts: t.attempts, updatedAt: t.updatedAt } : null,
      });
    }
    return seen.get(k) ?? undefined;
  };
  let earliest: number | undefined;
  for (let index = 0; index < ops.length; index++) {
    const o = ops[index]!;
    const base = { index, op: o.op, queue: o.queue, timerKey: o.timerKey };
    const existing = await current(o.queue, o.timerKey);
    if (existing && existing.deliverAt <= now) {
      results.push({ ...base, ok: false, status: 'too_late', txn: existing.txn, messageId: existing.messageId, deliverAt: iso(existing.deliverAt) });
      continue;
    }
    if (o.op === 'cancel' || o.op === 'reschedule') {
      if (!existing) {
        results.push({ ...base, ok: false, status: 'absent' });
        continue;
      }
      if (o.op === 'cancel') {
        writes.push({ op: 'timerDelete', tenant, queue: o.queue, timerKey: o.timerKey });
        seen.set(`${o.queue}\u0000${o.timerKey}`, null);
        results.push({ ...base, ok: true, status: 'cancelled', txn: existing.txn, messageId: existing.messageId, deliverAt: iso(existing.deliverAt) });
        continue;
      }
    }
    const deliverAt = now + Math.max(0, o.delayMs!);
    const stored = o.payloadJson !== undefined ? encodeFor(ctx, options, o.queue, o.payloadJson) : { payload: existing!.payload, encrypted: existing!.encrypted };
    const row: TimerRow = {
      queue: o.queue,
      timerKey: o.timerKey,
      partition: o.partition ?? existing?.partition ?? 'Default',
      deliverAt,
      txn: o.txn ?? existing!.txn,
      messageId: o.op === 'reschedule' ? existing!.messageId : newId(),
      payload: stored.payload,
      encrypted: stored.encrypted,
      producerSub: o.op === 'reschedule' && o.payloadJson === undefined ? existing!.producerSub : producerSub,
      attempts: 0,
      lastError: null,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    writes.push({ op: 'timerPut', tenant, row });
    seen.set(`${o.queue}\u0000${o.timerKey}`, row);
    earliest = earliest === undefined ? deliverAt : Math.min(earliest, deliverAt);
    results.push({ ...base, ok: true, status: existing ? 'rescheduled' : 'scheduled', txn: row.txn, messageId: row.messageId, deliverAt: iso(deliverAt) });
  }
  return { results, ops: [...expects, ...writes], earliest };
}

/**
 * The unit that fires one timer, if it is still there and due: the timer expected as read, its
 * deletion and its message's append, all or nothing (dedup on the timer's `txn` in the
 * partition's window, like any push with a transactionId). Parked consumers are woken after the
 * commit (the append's wake-up hint). The message goes into `tenant`'s queue, the timer's own.
 * @returns the unit's ops and how to answer from its results, or undefined when the timer was
 *   cancelled or rescheduled meanwhile
 * @throws PayloadIntegrityError when the stored payload cannot be opened; QueenError from the push plan
 */
export async function timerFiring(
  ctx: PushContext, backend: QueueBackend, tenant: string, queue: string, timerKey: string, now: number,
): Promise<{ ops: UnitOp[]; answer: (results: readonly UnitOpResult[]) => PushResult } | undefined> {
  const t = await backend.timers.get(tenant, queue, timerKey);
  if (!t || t.deliverAt > now) return undefined;
  const json = ctx.codec.decode(t.payload, t.encrypted);
  const items = [{ queue, partition: t.partition, payload: new RawJson(json), transactionId: t.txn }];
  const plan = planPush(ctx, await queueOptionsOf(backend, items, tenant), items, t.producerSub, tenant);
  // The message carries the id announced when the timer was scheduled.
  plan.items[0]!.messageId = t.messageId;
  const appends = pushAppends(plan, now);
  const head: UnitOp[] = [
    { op: 'timerExpect', tenant, queue, timerKey, expect: { deliverAt: t.deliverAt, messageId: t.messageId, attempts: t.attempts, updatedAt: t.updatedAt } },
    { op: 'timerDelete', tenant, queue, timerKey },
  ];
  return {
    ops: [...head, ...appends.ops],
    answer: (results) => pushResults(plan, appends, results.slice(head.length) as AppendResult[])[0]!,
  };
}

/** A stored timer in the wire shape (payload opened and base64-encoded). */
export function timerView(codec: PayloadCodec, t: TimerRow, now: number): TimerView {
  let payload: string | null;
  try {
    payload = Buffer.from(codec.decode(t.payload, t.encrypted), 'utf8').toString('base64');
  } catch {
    payload = null;
  }
  return {
    queue: t.queue, timerKey: t.timerKey, partition: t.partition, deliverAt: iso(t.deliverAt), txn: t.txn, messageId: t.messageId,
    payload, payloadZstd: false, encrypted: false, encryptedAtRest: t.encrypted, producerSub: t.producerSub, attempts: t.attempts,
    lastError: t.lastError, claimed: t.deliverAt <= now, createdAt: iso(t.createdAt), updatedAt: iso(t.updatedAt),
  };
}
