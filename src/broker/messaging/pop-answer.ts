/**
 * The wire shape of a pop's answer (docs/http-api.md#pop) and how claimed partitions become one:
 * delivered messages, and the conflation echo (docs/http-api.md#conflation).
 */
import type { Logger } from 'pino';
import { decodeForDelivery, type PayloadIntegrityIssue } from '../../crypto/delivery.js';
import { iso } from '../../util/time.js';
import type { PayloadCodec } from '../../model/codec.js';
import type { ClaimedPartition, PopRequest } from './pop.js';
import { attemptOf } from '../../storage/contract.js';

/** One delivered message, in the wire shape of docs/http-api.md#pop. */
export interface PoppedMessage {
  id: string;
  transactionId: string;
  traceId: string | null;
  data: unknown;
  producerSub: string | null;
  createdAt: string;
  partitionId: string;
  partition: string;
  queue: string;
  leaseId: string;
  consumerGroup: string;
  offset: number;
  deliveryAttempt: number;
  /** Present when the stored payload failed authentication; `data` is then null (README "Encryption at rest"). */
  error?: PayloadIntegrityIssue;
}

/** A pop that delivered: the first claimed partition's address and lease, and every delivered message. */
export interface PopResponse {
  success: true;
  queue: string;
  partition: string;
  partitionId: string;
  leaseId: string;
  consumerGroup: string;
  messages: PoppedMessage[];
  partitionsClaimed: number;
  /** Echoed when the group conflates (docs/http-api.md#conflation); the JS client requires the echo. */
  conflation?: true;
  /** The request's conflation flag disagreed with the group's stored policy (which applied). */
  conflationConflict?: true;
}

/** The answer of a conflating pop with nothing to deliver: 200 with an empty list, never 204. */
export interface EmptyConflationResponse {
  success: true;
  queue: string;
  consumerGroup: string;
  messages: [];
  partitionsClaimed: 0;
  conflation: true;
  conflationConflict?: true;
  /** Pop maintenance is on. */
  paused?: true;
}

/**
 * Conflation echo (docs/http-api.md#conflation): the group's stored policy wins; a request that disagrees with it
 * is told so with `conflationConflict`.
 * @param stored the group's registered conflation on the named queue; undefined when not registered (or a discovery pop)
 */
export function conflationEcho(stored: boolean | undefined, req: PopRequest): { conflation?: true; conflationConflict?: true } {
  const asked = req.conflation === true;
  const effective = stored ?? asked;
  return { ...(effective ? { conflation: true as const } : {}), ...(stored !== undefined && stored !== asked ? { conflationConflict: true as const } : {}) };
}

/** The fields of an empty conflating answer (the caller adds `conflation` and any echo). */
export function emptyConflation(req: PopRequest): Omit<EmptyConflationResponse, 'conflation'> {
  return { success: true, queue: req.queue ?? '', consumerGroup: req.group, messages: [], partitionsClaimed: 0 };
}

/**
 * The answer to a pop that claimed `claimed` (non-empty): payloads decoded for delivery (a payload
 * that fails authentication is delivered with `data: null` and an `error`, and counted in
 * `counters.payloadIntegrityFailures`); the delivered messages are counted in `counters.popMessages`.
 */
export function renderPop(codec: PayloadCodec, log: Logger, counters: { popMessages: number; payloadIntegrityFailures: number }, req: PopRequest, claimed: ClaimedPartition[]): PopResponse {
  const messages: PoppedMessage[] = [];
  for (const c of claimed) {
    for (const r of c.rows) {
      const d = decodeForDelivery(codec, r, { queue: c.queue, partition: c.partition, consumerGroup: c.group }, log, counters);
      messages.push({
        id: r.id, transactionId: r.transactionId, traceId: r.traceId, data: d.data, producerSub: r.producerSub,
        createdAt: iso(r.createdAt), partitionId: c.partitionId, partition: c.partition, queue: c.queue,
        leaseId: c.leaseId, consumerGroup: c.group, offset: r.offset, deliveryAttempt: attemptOf(c.attempts, r.offset),
        ...(d.error ? { error: d.error } : {}),
      });
    }
  }
  counters.popMessages += messages.length;
  const first = claimed[0]!;
  return {
    success: true, queue: req.queue ?? '', partition: first.partition, partitionId: first.partitionId,
    leaseId: first.leaseId, consumerGroup: req.group, messages, partitionsClaimed: claimed.length,
  };
}
