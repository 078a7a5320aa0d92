/**
 * Transactions: acks and pushes that commit all or nothing (docs/http-api.md#transaction). Everything
 * is planned first; any rejected ack, any push duplicating a stored message, or a required lease
 * that is not live refuses the whole unit before a single write.
 */
import type { StoreTx } from '../../storage/store.js';
import { newId } from '../../util/ids.js';
import { applyAcks, planAcks, type AckInput } from './ack.js';
import type { Engine } from '../../storage/sqlite/engine.js';
import { applyPush, hasStoredDuplicate, planPush, probeStored, type PushItem } from './push.js';
import { applyKvOps, KvView, type KvOp } from '../coordination/kv.js';
import { applyTimerOps, type TimerOp, type TimerResult } from '../coordination/timer-ops.js';

export type TransactionOp =
  | { type: 'ack'; ack: AckInput }
  | { type: 'push'; items: PushItem[] };

export interface TransactionRequest {
  operations: TransactionOp[];
  requiredLeases: string[];
  producerSub: string | null;
  /**
   * The `kv` rider (docs/http-api.md#transaction-riders): KV operations applied in the same unit, before any ack or push is
   * applied; a lost `required` precondition throws KvPreconditionLost and rolls everything back.
   * `committed` runs once the unit is durable (re-arms the KV expiry sweep).
   */
  kv?: { ops: KvOp[]; committed?: (view: KvView) => void } | undefined;
  /** The `timers` rider (docs/http-api.md#transaction-riders): timer operations applied in the same unit, checked beforehand. */
  timers?: TimerOp[] | undefined;
}

export type TransactionResultItem =
  | { index: number; type: 'ack'; success: boolean; transactionId: string; error: string | null; dlq: boolean }
  | { index: number; type: 'push'; success: true; transactionId: string; messageId: string; queueName: string; partition: string; duplicate?: true }
  | { index: number; type: 'kv'; opIndex: number; [field: string]: unknown }
  | ({ index: number; type: 'timer'; opIndex: number } & Omit<TimerResult, 'index'>);

export type TransactionResult =
  | { transactionId: string; success: true; results: TransactionResultItem[] }
  | { transactionId: string; success: false; error: string; reason: 'duplicate' | 'ack_rejected'; results: [] };

/**
 * Resolves which lease an ack uses when the op names none: the current holder of
 * (partition, group) if the caller listed it, else the single `requiredLeases` entry.
 */
function resolveLease(engine: Engine, ack: AckInput, required: string[]): string | undefined {
  if (ack.leaseId) return ack.leaseId;
  if (required.length === 0) return undefined;
  const p = engine.partitionsById.get(ack.partitionId);
  const c = p?.queue.groups.get(ack.group)?.cursors.get(p.pk);
  if (c?.leaseId && required.includes(c.leaseId)) return c.leaseId;
  return required.length === 1 ? required[0] : undefined;
}

/** Runs one transaction inside `tx`. Business refusals are answered, not thrown. */
export function runTransaction(engine: Engine, tx: StoreTx, req: TransactionRequest, now: number): TransactionResult {
  const transactionId = newId();
  for (const lease of req.requiredLeases) {
    if (engine.liveLeases(lease, now).length === 0) {
      return { transactionId, success: false, reason: 'ack_rejected', error: `required lease ${lease} is not held (expired or unknown); transaction rolled back`, results: [] };
    }
  }
  const acks: AckInput[] = [];
  const items: PushItem[] = [];
  for (const op of req.operations) {
    if (op.type === 'ack') acks.push({ ...op.ack, leaseId: resolveLease(engine, op.ack, req.requiredLeases) });
    else items.push(...op.items);
  }
  const ackPlan = planAcks(engine, tx, acks, now);
  const rejected = ackPlan.outcomes.find((o) => !o.success);
  if (rejected) {
    return { transactionId, success: false, reason: 'ack_rejected', error: `ack of ${rejected.transactionId} rejected: ${rejected.error}; transaction rolled back`, results: [] };
  }
  const pushPlan = planPush(engine, items, req.producerSub);
  probeStored(engine, tx, pushPlan, now);
  const dup = hasStoredDuplicate(pushPlan);
  if (dup) {
    return { transactionId, success: false, reason: 'duplicate', error: `QDUP duplicate message ${dup.transactionId} in queue ${dup.queue} partition ${dup.partition}; transaction rolled back`, results: [] };
  }
  const kv = req.kv && req.kv.ops.length > 0 ? req.kv : undefined;
  const kvView = kv ? new KvView(engine.store.kv, now) : undefined;
  const kvResults = kv ? applyKvOps(kvView!, kv.ops) : []; // nothing in memory changed yet: a throw rolls back cleanly
  if (kv?.committed) tx.afterCommit(() => kv.committed!(kvView!));
  // Timer ops write only to the store and may still refuse (encryption_unavailable): run them
  // before anything touches the in-memory indexes, so a refusal rolls back cleanly.
  const timed = req.timers && req.timers.length > 0 ? applyTimerOps(engine, tx, req.timers, req.producerSub, now).results : [];
  applyAcks(engine, tx, ackPlan, now);
  const pushed = applyPush(engine, tx, pushPlan, now);

  const results: TransactionResultItem[] = [];
  let a = 0;
  let p = 0;
  for (const op of req.operations) {
    if (op.type === 'ack') {
      const o = ackPlan.outcomes[a++]!;
      results.push({ index: results.length, type: 'ack', success: o.success, transactionId: o.transactionId, error: o.error, dlq: o.dlq });
    } else {
      for (let k = 0; k < op.items.length; k++) {
        const r = pushed[p++]!;
        results.push({
          index: results.length, type: 'push', success: true, transactionId: r.transaction_id, messageId: r.message_id,
          queueName: r.queueName, partition: r.partition, ...(r.status === 'duplicate' ? { duplicate: true as const } : {}),
        });
      }
    }
  }
  for (const { index: opIndex, ...t } of timed) results.push({ ...t, index: results.length, type: 'timer', opIndex });
  for (const { index: opIndex, ...r } of kvResults) results.push({ ...r, index: results.length, type: 'kv', opIndex });
  return { transactionId, success: true, results };
}
