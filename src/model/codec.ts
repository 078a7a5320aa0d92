/**
 * How payloads are stored: JSON text in clear, or an encryption envelope for queues with
 * `encryptionEnabled` (src/crypto provides the encrypting codec). The wire always carries JSON.
 */
import { QueenError } from '../errors.js';

/** Payload bytes as stored: JSON text, or an encryption envelope when `encrypted`. */
export type StoredPayload = string | Buffer;

/** Thrown by {@link PayloadCodec.decode} when an envelope fails authentication (tampering, corruption, unknown key). */
export class PayloadIntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadIntegrityError';
  }
}

export interface PayloadCodec {
  /** True when a key is loaded and encrypted queues can be written. */
  readonly canEncrypt: boolean;
  /**
   * JSON text → stored form.
   * @throws QueenError `encryption_unavailable` when the queue wants encryption and no key is loaded.
   */
  encode(queueEncrypted: boolean, json: string): { payload: StoredPayload; encrypted: boolean };
  /**
   * Stored form → JSON text. Only payloads stored encrypted are decrypted (no envelope sniffing).
   * @throws PayloadIntegrityError when authentication fails or the key is unavailable.
   */
  decode(payload: StoredPayload, encrypted: boolean): string;
}

/** The codec of a broker without `QUEEN_ENCRYPTION_KEY`: stores JSON in clear, refuses encrypted queues. */
export const plainCodec: PayloadCodec = {
  canEncrypt: false,
  encode(queueEncrypted, json) {
    if (queueEncrypted) throw new QueenError('encryption_unavailable');
    return { payload: json, encrypted: false };
  },
  decode(payload, encrypted) {
    if (encrypted) throw new PayloadIntegrityError('payload is encrypted but no QUEEN_ENCRYPTION_KEY is loaded');
    return typeof payload === 'string' ? payload : payload.toString('utf8');
  },
};
