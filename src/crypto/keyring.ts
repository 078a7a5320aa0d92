/**
 * The key ring: the current key (writes and reads) and the previous keys (reads only), each
 * known by a short key id. Nothing here ever exposes key material: keys stay `KeyObject`s, and
 * what identifies a key outside this process is its key-check value (KCV) and the key id, both
 * derived with HMAC-SHA-256 and useless for recovering the key.
 *
 *   kcv    = hex(HMAC-SHA-256(key, "queen-ts key check v1"))   64 hex chars, stored in settings
 *   key id = first 4 bytes of that HMAC (8 hex chars)          written into every envelope
 *
 * Two different keys sharing a key id (chance 2^-32 per pair) are refused at boot; the full KCV
 * tells them apart.
 */
import { createHmac, type KeyObject } from 'node:crypto';
import { ConfigError } from '../config/env.js';
import { KEY_VAR, PREVIOUS_VAR, type EncryptionConfig } from '../config/encryption.js';

/** Bytes of the key id inside an envelope. */
export const KEY_ID_BYTES = 4;

const KCV_LABEL = 'queen-ts key check v1';

/** One key of the ring. */
export interface RingKey {
  /** Short key id, 8 lowercase hex characters. */
  readonly id: string;
  /** The key id as the 32-bit number stored in envelopes. */
  readonly idNum: number;
  /** Key-check value, 64 lowercase hex characters. */
  readonly kcv: string;
  /** The AES-256 key. Never log, never serialise. */
  readonly key: KeyObject;
}

/** The key-check value of `key` (hex HMAC-SHA-256 over a fixed label). */
export function keyCheckValue(key: KeyObject): string {
  return createHmac('sha256', key).update(KCV_LABEL).digest('hex');
}

/** The short key id that a key-check value starts with. */
export function keyIdOfKcv(kcv: string): string {
  return kcv.slice(0, KEY_ID_BYTES * 2);
}

function ringKey(key: KeyObject): RingKey {
  const kcv = keyCheckValue(key);
  const id = keyIdOfKcv(kcv);
  return { id, idNum: Number.parseInt(id, 16), kcv, key };
}

/** The current key and the keys that may still decrypt. */
export class KeyRing {
  /** Writes use this key. */
  readonly current: RingKey;
  /** Read-only keys, in the order configured, without the current key and without duplicates. */
  readonly previous: readonly RingKey[];
  private readonly byId = new Map<number, RingKey>();

  /**
   * @throws ConfigError when two different keys share a key id.
   */
  constructor(current: KeyObject, previous: readonly KeyObject[] = []) {
    this.current = ringKey(current);
    this.byId.set(this.current.idNum, this.current);
    const prev: RingKey[] = [];
    for (const k of previous) {
      const rk = ringKey(k);
      const seen = this.byId.get(rk.idNum);
      if (seen) {
        if (seen.kcv === rk.kcv) continue; // same key listed twice, or current listed as previous
        throw new ConfigError(
          `two different keys in ${KEY_VAR} / ${PREVIOUS_VAR} share key id ${rk.id}; generate a new key (openssl rand -hex 32)`,
        );
      }
      this.byId.set(rk.idNum, rk);
      prev.push(rk);
    }
    this.previous = prev;
  }

  /** The ring of a configuration, or null when no key is configured. */
  static fromConfig(cfg: EncryptionConfig): KeyRing | null {
    return cfg.key ? new KeyRing(cfg.key, cfg.previous) : null;
  }

  /** The key with this numeric key id, if the ring holds it. */
  byIdNum(idNum: number): RingKey | undefined {
    return this.byId.get(idNum);
  }

  /** The key with this hex key id, if the ring holds it. */
  get(id: string): RingKey | undefined {
    return /^[0-9a-f]{8}$/.test(id) ? this.byId.get(Number.parseInt(id, 16)) : undefined;
  }

  /** Every key, current first. */
  all(): RingKey[] {
    return [this.current, ...this.previous];
  }
}
