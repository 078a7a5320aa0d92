/**
 * The encrypting {@link PayloadCodec}: queues with `encryptionEnabled` get AES-256-GCM envelopes
 * (envelope.ts) under the ring's current key; other queues keep JSON text in clear. Only payloads
 * stored with `encrypted = true` are ever decrypted: no envelope sniffing (docs/security.md#encryption-at-rest).
 */
import { PayloadIntegrityError, plainCodec, type PayloadCodec, type StoredPayload } from '../model/codec.js';
import type { EncryptionConfig } from '../config/encryption.js';
import { open, seal } from './envelope.js';
import { KeyRing } from './keyring.js';

export { PayloadIntegrityError } from '../model/codec.js';

/** Payload codec that seals flagged queues' payloads with AES-256-GCM and opens them on read. */
export class EncryptingCodec implements PayloadCodec {
  readonly canEncrypt = true;
  /** Envelopes that failed to open since boot (tampering, corruption, missing key). */
  integrityFailures = 0;

  constructor(readonly ring: KeyRing) {}

  /** Seals for encrypted queues with the current key; passes JSON through for the others. */
  encode(queueEncrypted: boolean, json: string): { payload: StoredPayload; encrypted: boolean } {
    if (!queueEncrypted) return { payload: json, encrypted: false };
    return { payload: seal(this.ring.current, json), encrypted: true };
  }

  /**
   * Opens envelopes stored encrypted (with whichever ring key wrote them); returns clear payloads
   * as they are, even when they look like envelopes.
   * @throws PayloadIntegrityError when an envelope is malformed, names an unloaded key, or fails
   *   authentication.
   */
  decode(payload: StoredPayload, encrypted: boolean): string {
    if (!encrypted) return typeof payload === 'string' ? payload : payload.toString('utf8');
    try {
      return open(this.ring, payload);
    } catch (e) {
      if (e instanceof PayloadIntegrityError) this.integrityFailures++;
      throw e;
    }
  }
}

/** The codec for a configuration: encrypting with a key, {@link plainCodec} without one. */
export function createPayloadCodec(cfg: EncryptionConfig): PayloadCodec {
  const ring = KeyRing.fromConfig(cfg);
  return ring ? new EncryptingCodec(ring) : plainCodec;
}
