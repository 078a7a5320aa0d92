/**
 * Transactions: acks and pushes that commit all or nothing (docs/http-api.md#transaction). Everything
 * is decided first, on committed state; any rejected ack, any push duplicating a stored message,
 * or a required lease that is not live refuses the whole transaction before a single write. The
 * decision runs as one unit of the operation contract (src/storage/contract.ts) that is refused,
 * and decided again, when what it was decided on changed meanwhile.
 */
import { DEFAULT_TENANT, type AckTarget, type AppendResult, type QueueBackend, type UnitOp, type UnitOpResult } from '../../storage/contract.js';
import { ackCommits, groupAcks, ownTargets, planAcks, type AckInput } from './ack.js';
import { planPush, pushAppends, pushResults, queueOptionsOf, type PushContext, type PushItem } from './push.js';
import { applyKvOps, type KvView, type KvOp } from '../coordination/kv.js';
import { decideTimerOps, type TimerOp, type TimerResult } from '../coordination/timer-ops.js';

export type TransactionOp =
  | { type: 'ack'; ack: AckInput }
  | { type: 'push'; items: PushItem[] };

export interface TransactionRequest {
  operations: TransactionOp[];
  requiredLeases: string[];
  producerSub: string | null;
  /** The tenant whose queues, KV rows and timers the transaction touches (default: the default tenant). */
  tenant?: string | undefined;
  /**
   * The `kv` rider (docs/http-api.md#transaction-riders): KV operations applied in the same unit, before any ack or push is
   * applied; a lost `required` precondition throws KvPreconditionLost and nothing is written.
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
  | { transactionId: string; success: false; error: string; reason: 'duplicate' | 'ack_rejected' | 'lease_not_held'; results: [] };

/**
 * Resolves which lease an ack uses when the op names none: the current holder of
 * (partition, group) if the caller listed it, else the single `requiredLeases` entry.
 */
function resolveLease(ack: AckInput, target: AckTarget | undefined, required: string[]): string | undefined {
  if (ack.leaseId) return ack.leaseId;
  if (required.length === 0) return undefined;
  const c = target?.cursor;
  if (c?.leaseId && required.includes(c.leaseId)) return c.leaseId;
  return required.length === 1 ? required[0] : undefined;
}

/** A decided transaction: the refusal to answer, or the unit to run and how to answer from its outcome. */
export type TransactionDecision =
  | { refusal: TransactionResult }
  | {
    refusal?: undefined;
    ops: UnitOp[];
    /** The KV rider's view (its expiries re-arm the sweep once the unit is durable). */
    kvView: KvView | undefined;
    /** The answer of a committed unit. */
    answer(results: readonly UnitOpResult[]): TransactionResult;
    /** The answer of a refused unit, or undefined when the transaction must be decided again (its reads went stale). */
    refused(failedIndex: number, failedItem: number | undefined): TransactionResult | undefined;
  };

/**
 * Decides one transaction on committed state, outside any unit (no writes): required leases,
 * the ack plan (on the contract's ack reads), the KV and timer riders; a push duplicating a
 * stored message is found by the unit's `refuseDuplicates` appends (the backend's dedup probe). The decision is one unit of the
 * operation contract whose ops carry what it was decided on (live leases, the cursor offsets, the
 * KV rows and timers read, `refuseDuplicates` appends), so it commits all or nothing, and only if
 * nothing it read changed. Business refusals are answered, not thrown.
 * @param transactionId the id this transaction answers with (the same across decisions)
 * @param kvView the view the KV rider reads and writes (fresh per decision)
 * @throws KvPreconditionLost (a required KV precondition), QueenError `encryption_unavailable` (timers)
 */
export async function decideTransaction(
  backend: QueueBackend, ctx: PushContext, req: TransactionRequest, transactionId: string, kvView: KvView, now: number,
): Promise<TransactionDecision> {
  for (const lease of req.requiredLeases) {
    if (!await backend.leaseHeld(lease, now)) {
      // With acks, a dead lease is why they are refused; without any, the lease alone is.
      const reason = req.operations.some((op) => op.type === 'ack') ? 'ack_rejected' : 'lease_not_held';
      return { refusal: { transactionId, success: false, reason, error: `required lease ${lease} is not held (expired or unknown); transaction rolled back`, results: [] } };
    }
  }
  const acks: AckInput[] = [];
  const items: PushItem[] = [];
  for (const op of req.operations) {
    if (op.type === 'ack') acks.push(op.ack);
    else items.push(...op.items);
  }
  const groups = groupAcks(acks);
  const targets = acks.length > 0 ? ownTargets(await backend.readAckTargets(groups.lookups), req.tenant ?? DEFAULT_TENANT) : [];
  groups.indexes.forEach((indexes, k) => {
    for (const i of indexes) acks[i] = { ...acks[i]!, leaseId: resolveLease(acks[i]!, targets[k], req.requiredLeases) };
  });
  const ackPlan = planAcks(acks, groups, targets, now);
  const rejected = ackPlan.outcomes.find((o) => !o.success);
  if (rejected) {
    return { refusal: { transactionId, success: false, reason: 'ack_rejected', error: `ack of ${rejected.transactionId} rejected: ${rejected.error}; transaction rolled back`, results: [] } };
  }
  const tenant = req.tenant ?? DEFAULT_TENANT;
  const pushPlan = planPush(ctx, await queueOptionsOf(backend, items, tenant), items, req.producerSub, tenant);
  const duplicate = (dup: { transactionId: string; queue: string; partition: string }): TransactionResult => ({
    transactionId, success: false, reason: 'duplicate', error: `QDUP duplicate message ${dup.transactionId} in queue ${dup.queue} partition ${dup.partition}; transaction rolled back`, results: [],
  });
  const kv = req.kv && req.kv.ops.length > 0 ? req.kv : undefined;
  const kvResults = kv ? await applyKvOps(kvView, kv.ops) : [];
  const timed = req.timers && req.timers.length > 0 ? await decideTimerOps(ctx, backend, req.timers, req.producerSub, now, tenant) : undefined;
  const appends = pushAppends(pushPlan, now);
  for (const a of appends.ops) a.request.refuseDuplicates = true;
  const leaseOps: UnitOp[] = req.requiredLeases.map((leaseId) => ({ op: 'leaseHeld', leaseId, now }));
  const kvOps = kv ? kvView.ops() : [];
  const commits: UnitOp[] = ackCommits(ackPlan, now).map((request) => ({ op: 'commit', request }));
  const ops: UnitOp[] = [...leaseOps, ...kvOps, ...(timed?.ops ?? []), ...commits, ...appends.ops];
  const appendsAt = ops.length - appends.ops.length;

  const answer = (unitResults: readonly UnitOpResult[]): TransactionResult => {
    const pushed = pushResults(pushPlan, appends, unitResults.slice(appendsAt) as AppendResult[]);
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
    for (const { index: opIndex, ...t } of timed?.results ?? []) results.push({ ...t, index: results.length, type: 'timer', opIndex });
    for (const { index: opIndex, ...r } of kvResults) results.push({ ...r, index: results.length, type: 'kv', opIndex });
    return { transactionId, success: true, results };
  };
  const refused = (failedIndex: number, failedItem: number | undefined): TransactionResult | undefined => {
    if (failedIndex < appendsAt || failedItem === undefined) return undefined;
    const append = appends.ops[failedIndex - appendsAt]!.request;
    return duplicate({ transactionId: append.items[failedItem]!.transactionId, queue: append.key.queue, partition: append.key.partition });
  };
  return { ops, kvView: kv ? kvView : undefined, answer, refused };
}
