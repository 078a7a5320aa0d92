/**
 * What the broker reports as work happens, for the bookkeeping that must not scan the store
 * (per-queue activity buckets, dead-letter depth, retention candidates, Prometheus). Observers run
 * after the unit of work is durable, synchronously, and must be cheap: O(items of the request).
 */
import type { AckInput, AckOutcome } from './ack.js';
import type { ClaimedPartition, PopRequest } from './pop.js';
import type { PushItem, PushResult } from './push.js';
import type { TransactionRequest, TransactionResult } from './transaction.js';

export interface BrokerObserver {
  /** A push committed (results in request order) into `tenant`'s queues. */
  pushed?(results: readonly PushResult[], now: number, tenant: string): void;
  /** A pop claimed messages (`claimed` non-empty) or answered empty (`claimed` empty). */
  popped?(req: PopRequest, claimed: readonly ClaimedPartition[], now: number): void;
  /** Acknowledgements committed; `outcomes[i]` answers `inputs[i]`. */
  acked?(inputs: readonly AckInput[], outcomes: readonly AckOutcome[], now: number): void;
  /** A transaction ran (committed when `result.success`). */
  transacted?(req: TransactionRequest, result: TransactionResult, now: number): void;
  /** A queue of `tenant` and everything under it was deleted. */
  queueDeleted?(queue: string, tenant: string): void;
}

/**
 * Diverts a push (push maintenance): returns the answer to send instead of writing, or undefined
 * to let the push through.
 */
export type PushGate = (items: PushItem[], producerSub: string | null) => Promise<PushResult[]> | undefined;
