/**
 * The `kv` rider of `POST /api/v1/transaction` (docs/http-api.md#transaction-riders): KV operations (no `getPrefix`)
 * applied in the transaction's unit of work; results are appended as `type:"kv"` with `opIndex`.
 * A lost `required` precondition rolls the whole transaction back and answers 200 with
 * `success:false, reason:"kv_precondition", ok:false, failedIndex, kvReason, version, value`.
 */
import { KvPreconditionLost, type Kv, type KvPreconditionFailure } from '../../broker/coordination/kv.js';
import type { TransactionRequest } from '../../broker/messaging/transaction.js';
import { isQueenError, QueenError } from '../../errors.js';
import { newId } from '../../util/ids.js';
import { kvLimits, parseKvRider } from './kv-input.js';

/**
 * Parses the rider (`undefined` when absent).
 * @throws QueenError with a `kv_*` code and the transaction failure fields (`success:false`, `reason:"bad_request"`, `detail`)
 */
export function kvRider(kv: Kv, raw: unknown, limits: { maxPushItems: number; maxPayloadBytes: number }): TransactionRequest['kv'] {
  if (raw === undefined || raw === null) return undefined;
  try {
    const ops = parseKvRider(raw, kvLimits(limits));
    return { ops, committed: (view) => kv.committed(view) };
  } catch (e) {
    if (!isQueenError(e)) throw e;
    throw new QueenError(e.code, e.message, { detail: e.extra?.reason ?? e.message, success: false, reason: 'bad_request', results: [] });
  }
}

/** The transaction's 200 answer when a `required` KV precondition was lost: nothing was applied. */
export interface KvPreconditionRefusal extends KvPreconditionFailure {
  transactionId: string;
  success: false;
  results: [];
  error: string;
}

/** Maps a lost precondition to the transaction's 200 failure answer; rethrows anything else. */
export function kvPreconditionAnswer(e: unknown): KvPreconditionRefusal {
  if (!(e instanceof KvPreconditionLost)) throw e;
  return {
    transactionId: newId(), success: false, results: [],
    error: `kv precondition at kv[${e.failedIndex}] lost (${e.kvReason}); transaction rolled back`,
    ...e.answer(),
  };
}
