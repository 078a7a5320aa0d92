/**
 * Timer rules (scheduled messages, docs/http-api.md#timers): what schedule, reschedule and cancel do
 * to the stored timers, and what firing one does. No HTTP, no clock of its own: every function
 * takes `now` and runs inside one unit of work, so a batch of operations, or a firing (delete the
 * timer + push its message), commits all or nothing.
 *
 * Payloads travel as base64 of the JSON bytes; they are stored through the broker's payload codec,
 * so a queue with `encryptionEnabled` keeps its timers' payloads encrypted at rest.
 */
import { QueenError } from '../../errors.js';
import type { StoreTx } from '../../storage/store.js';
import type { TimerRow } from '../../storage/timers.js';
import { newId } from '../../util/ids.js';
import { RawJson } from '../../util/json.js';
import { iso } from '../../util/time.js';
import type { Engine } from '../../storage/sqlite/engine.js';
import { applyPush, planPush, type PushResult } from '../messaging/push.js';

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
export function checkTimerOps(engine: Engine, ops: readonly TimerOp[], where = 'operations'): void {
  const maxPayload = engine.config.limits.maxPayloadBytes;
  ops.forEach((o, i) => {
    const at = `${where}[${i}]`;
    if (o.queue === '') throw new QueenError('invalid_request', `${at}.queue must not be empty`);
    if (o.timerKey === '') throw new QueenError('invalid_request', `${at}.timerKey must not be empty`);
    engine.checkName('queue', o.queue);
    engine.checkName('timerKey', o.timerKey);
    if (o.partition !== undefined) {
      if (o.partition === '') throw new QueenError('invalid_request', `${at}.partition must not be empty (omit it for Default)`);
      engine.checkName('partition', o.partition);
    }
    if (o.txn !== undefined) {
      if (o.txn === '') throw new QueenError('invalid_request', `${at}.txn must not be empty`);
      engine.checkName('txn', o.txn);
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
function encodeFor(engine: Engine, queue: string, json: string): { payload: string | Buffer; encrypted: boolean } {
  return engine.codec.encode(engine.queues.get(queue)?.options.encryptionEnabled ?? false, json);
}

/**
 * Applies checked operations in order inside `tx` (later operations see earlier ones).
 * A timer already due is being delivered: cancel, reschedule and schedule of its key answer
 * `too_late` and change nothing.
 * @param producerSub the scheduler's JWT `sub`, stamped on the delivered message
 * @returns one verdict per operation, and the earliest deliverAt written (to arm the firing timer)
 * @throws QueenError `encryption_unavailable` (the whole unit rolls back)
 */
export function applyTimerOps(engine: Engine, tx: StoreTx, ops: readonly TimerOp[], producerSub: string | null, now: number): { results: TimerResult[]; earliest: number | undefined } {
  void tx; // timers are written through the store's timer module, inside this unit of work
  const timers = engine.store.timers;
  const results: TimerResult[] = [];
  let earliest: number | undefined;
  ops.forEach((o, index) => {
    const base = { index, op: o.op, queue: o.queue, timerKey: o.timerKey };
    const existing = timers.getTimer(o.queue, o.timerKey);
    if (existing && existing.deliverAt <= now) {
      results.push({ ...base, ok: false, status: 'too_late', txn: existing.txn, messageId: existing.messageId, deliverAt: iso(existing.deliverAt) });
      return;
    }
    if (o.op === 'cancel' || o.op === 'reschedule') {
      if (!existing) {
        results.push({ ...base, ok: false, status: 'absent' });
        return;
      }
      if (o.op === 'cancel') {
        timers.deleteTimer(o.queue, o.timerKey);
        results.push({ ...base, ok: true, status: 'cancelled', txn: existing.txn, messageId: existing.messageId, deliverAt: iso(existing.deliverAt) });
        return;
      }
    }
    const deliverAt = now + Math.max(0, o.delayMs!);
    const stored = o.payloadJson !== undefined ? encodeFor(engine, o.queue, o.payloadJson) : { payload: existing!.payload, encrypted: existing!.encrypted };
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
    timers.putTimer(row);
    earliest = earliest === undefined ? deliverAt : Math.min(earliest, deliverAt);
    results.push({ ...base, ok: true, status: existing ? 'rescheduled' : 'scheduled', txn: row.txn, messageId: row.messageId, deliverAt: iso(deliverAt) });
  });
  return { results, earliest };
}

/**
 * Fires one timer if it is still there and due: deletes it and pushes its message in the same unit
 * of work (dedup on the timer's `txn` in the partition's window, like any push with a
 * transactionId). Parked consumers are woken after the commit (applyPush).
 * @returns the push result, or undefined when the timer was cancelled or rescheduled meanwhile
 * @throws PayloadIntegrityError when the stored payload cannot be opened; QueenError from the push
 */
export function fireTimer(engine: Engine, tx: StoreTx, queue: string, timerKey: string, now: number): PushResult | undefined {
  const timers = engine.store.timers;
  const t = timers.getTimer(queue, timerKey);
  if (!t || t.deliverAt > now) return undefined;
  const json = engine.codec.decode(t.payload, t.encrypted);
  timers.deleteTimer(queue, timerKey);
  const plan = planPush(engine, [{ queue, partition: t.partition, payload: new RawJson(json), transactionId: t.txn }], t.producerSub);
  // The message carries the id announced when the timer was scheduled.
  plan.items[0]!.messageId = t.messageId;
  return applyPush(engine, tx, plan, now)[0];
}

/** A stored timer in the wire shape (payload opened and base64-encoded). */
export function timerView(engine: Engine, t: TimerRow, now: number): TimerView {
  let payload: string | null;
  try {
    payload = Buffer.from(engine.codec.decode(t.payload, t.encrypted), 'utf8').toString('base64');
  } catch {
    payload = null;
  }
  return {
    queue: t.queue, timerKey: t.timerKey, partition: t.partition, deliverAt: iso(t.deliverAt), txn: t.txn, messageId: t.messageId,
    payload, payloadZstd: false, encrypted: false, encryptedAtRest: t.encrypted, producerSub: t.producerSub, attempts: t.attempts,
    lastError: t.lastError, claimed: t.deliverAt <= now, createdAt: iso(t.createdAt), updatedAt: iso(t.updatedAt),
  };
}
