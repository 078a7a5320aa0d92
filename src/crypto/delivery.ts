/**
 * Reading stored payloads back for a consumer, the message browser or the DLQ listing, with the
 * rule for payloads that fail authentication (docs/security.md#integrity-failures): they are never handed over as
 * data. The message keeps its place in the batch (the lease covers it like any other, so offsets,
 * acks and the retry budget work unchanged) and carries `data: null` plus an `error` object:
 *
 *   { "id": "…", "data": null, "error": { "code": "payload_integrity_failed",
 *                                          "error": "cannot decrypt message <id>" }, … }
 *
 * The consumer acks it `failed` (retry budget, then DLQ) or `completed` (skip it). Each failure
 * is counted and logged with queue, partition and message id (never payload or key bytes).
 */
import { PayloadIntegrityError, type PayloadCodec, type StoredPayload } from '../model/codec.js';
import type { Logger } from '../observability/logger.js';
import { RawJson } from '../util/json.js';

/** The per-message error of a payload that failed authentication. */
export interface PayloadIntegrityIssue {
  code: 'payload_integrity_failed';
  error: string;
}

/** A decoded payload: the stored JSON text (spliced verbatim into the answer), or null with the issue. */
export type Delivered = { data: RawJson; error?: undefined } | { data: null; error: PayloadIntegrityIssue };

/** Where the message lives, for the log line. */
export interface PayloadPlace {
  queue: string;
  partition: string;
  consumerGroup?: string;
}

/** Counts integrity failures (wired to a metric by the caller). */
export interface IntegrityCounter {
  payloadIntegrityFailures: number;
}

/**
 * Decodes a stored payload. Its JSON text is not parsed: it goes out exactly as stored.
 * @returns `{data}` or, when an encrypted payload fails authentication, `{data: null, error}`;
 *   the failure is logged at error level and counted.
 */
export function decodeForDelivery(
  codec: PayloadCodec,
  m: { id: string; payload: StoredPayload; encrypted: boolean },
  place: PayloadPlace,
  log: Pick<Logger, 'error'>,
  counter?: IntegrityCounter,
): Delivered {
  let json: string;
  try {
    json = codec.decode(m.payload, m.encrypted);
  } catch (e) {
    if (!(e instanceof PayloadIntegrityError)) throw e;
    if (counter) counter.payloadIntegrityFailures++;
    log.error(
      { queue: place.queue, partition: place.partition, consumerGroup: place.consumerGroup, messageId: m.id, reason: e.message },
      `cannot decrypt message ${m.id} in queue ${place.queue} partition ${place.partition}: ${e.message}`,
    );
    return { data: null, error: { code: 'payload_integrity_failed', error: `cannot decrypt message ${m.id}` } };
  }
  return { data: new RawJson(json) };
}
