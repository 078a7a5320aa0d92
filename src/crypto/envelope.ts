/**
 * The stored form of an encrypted payload: a versioned binary envelope (docs/storage.md#encryption-envelope).
 *
 *   offset  size  field
 *   0       1     version (0x01)
 *   1       4     key id: first 4 bytes of the writing key's key-check value (see keyring.ts)
 *   5       12    nonce: fresh random bytes per payload (the 96-bit GCM IV)
 *   17      n     ciphertext: AES-256-GCM of the UTF-8 JSON text (n = plaintext length)
 *   17+n    16    GCM authentication tag
 *
 * The 5 header bytes are the GCM additional authenticated data, so the version and the key id
 * cannot be altered without the tag check failing. The tag is checked on every open; a failure
 * throws and no plaintext is returned. Overhead: 33 bytes per payload.
 *
 * Not bound into the tag: where the envelope is stored (queue, message id). Someone able to
 * write the data directory can move a valid envelope to another encrypted message; they cannot
 * read or forge one.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { PayloadIntegrityError } from '../model/codec.js';
import { KEY_ID_BYTES, type KeyRing, type RingKey } from './keyring.js';
import { randomNonce } from './nonces.js';

/** Envelope layout: version byte, key id, 96-bit nonce, ciphertext, 128-bit tag (sizes in bytes). */
export const ENVELOPE_VERSION = 1;
export const HEADER_BYTES = 1 + KEY_ID_BYTES;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
/** Envelope bytes added to the plaintext's length. */
export const ENVELOPE_OVERHEAD = HEADER_BYTES + NONCE_BYTES + TAG_BYTES;

const ALG = 'aes-256-gcm';

/**
 * Encrypts `plaintext` (UTF-8 JSON text) under `key` with a fresh random nonce (nonces.ts).
 * @returns the envelope bytes.
 */
export function seal(key: RingKey, plaintext: string): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header[0] = ENVELOPE_VERSION;
  header.writeUInt32BE(key.idNum, 1);
  const nonce = randomNonce(NONCE_BYTES); // fresh CSPRNG bytes, never handed out before (nonces.ts)
  const cipher = createCipheriv(ALG, key.key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(header);
  const body = cipher.update(plaintext, 'utf8');
  const tail = cipher.final();
  return Buffer.concat([header, nonce, body, tail, cipher.getAuthTag()]);
}

/**
 * The key id (8 hex characters) an envelope names, or undefined when `stored` is not a
 * well-formed envelope of a known version. Reads the header only; authenticates nothing.
 */
export function envelopeKeyId(stored: string | Buffer): string | undefined {
  if (!Buffer.isBuffer(stored) || stored.length < ENVELOPE_OVERHEAD || stored[0] !== ENVELOPE_VERSION) return undefined;
  return stored.toString('hex', 1, HEADER_BYTES);
}

/**
 * Authenticates and decrypts an envelope with the ring key it names.
 * @returns the UTF-8 JSON text.
 * @throws PayloadIntegrityError when the envelope is malformed, names a key the ring lacks, or
 *   fails authentication (tampering, corruption). The message names the key id, never the key.
 */
export function open(ring: KeyRing, stored: string | Buffer): string {
  if (!Buffer.isBuffer(stored)) throw new PayloadIntegrityError('stored payload is flagged encrypted but is not an envelope');
  if (stored.length < ENVELOPE_OVERHEAD) throw new PayloadIntegrityError('envelope is truncated');
  if (stored[0] !== ENVELOPE_VERSION) throw new PayloadIntegrityError(`unknown envelope version ${stored[0]}`);
  const key = ring.byIdNum(stored.readUInt32BE(1));
  if (!key) throw new PayloadIntegrityError(`envelope was written under key id ${stored.toString('hex', 1, HEADER_BYTES)}, which is not loaded`);
  const tagAt = stored.length - TAG_BYTES;
  try {
    const decipher = createDecipheriv(ALG, key.key, stored.subarray(HEADER_BYTES, HEADER_BYTES + NONCE_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(stored.subarray(0, HEADER_BYTES));
    decipher.setAuthTag(stored.subarray(tagAt));
    const body = decipher.update(stored.subarray(HEADER_BYTES + NONCE_BYTES, tagAt));
    const tail = decipher.final(); // throws when the tag does not match
    return (tail.length === 0 ? body : Buffer.concat([body, tail])).toString('utf8');
  } catch {
    throw new PayloadIntegrityError(`envelope failed authentication (key id ${key.id})`);
  }
}
