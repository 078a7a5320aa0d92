/**
 * Encryption at boot: configuration → key ring → data-directory key check → codec, in one call
 * from `main` after the store is open and before the listener binds.
 */
import type { PayloadCodec } from '../model/codec.js';
import type { EncryptionConfig } from '../config/encryption.js';
import type { Logger } from '../observability/logger.js';
import type { PartitionRow, Store, StoreReader, StoreSnapshot } from '../storage/store.js';
import { EncryptingCodec, createPayloadCodec } from './codec.js';
import { ENVELOPE_VERSION, HEADER_BYTES, envelopeKeyId } from './envelope.js';
import { checkDataDirectoryKeys } from './keycheck.js';
import { KeyRing } from './keyring.js';
import { addTimerKeyIds } from './timer-keys.js';

/** The boot line printed when a key is loaded (docs/security.md#boot-lines; byte for byte). */
export const BOOT_LINE = 'encryption service initialized (AES-256-GCM)';
/** The boot line printed without a key (docs/security.md#encryption-at-rest). */
export const DISABLED_LINE = 'encryption disabled: QUEEN_ENCRYPTION_KEY is not set';

const PAGE = 512;

/**
 * The key ids named by every encrypted payload stored in messages and dead letters. A full scan
 * through the store contract: boot runs it only when a recorded key is missing from the ring.
 */
export function scanKeyIds(reader: StoreReader, partitions: readonly Pick<PartitionRow, 'pk' | 'firstOffset'>[]): Set<string> {
  const ids = new Set<string>();
  const note = (payload: string | Buffer, encrypted: boolean) => {
    if (!encrypted) return;
    ids.add(envelopeKeyId(payload) ?? 'unreadable');
  };
  for (const p of partitions) {
    let from = p.firstOffset;
    for (;;) {
      const rows = reader.readMessages(p.pk, from, PAGE);
      for (const m of rows) note(m.payload, m.encrypted);
      if (rows.length < PAGE) break;
      from = rows[rows.length - 1]!.offset + 1;
    }
  }
  for (let offset = 0; ; offset += PAGE) {
    const rows = reader.listDlq({ limit: PAGE, offset });
    for (const d of rows) note(d.payload, d.encrypted);
    if (rows.length < PAGE) break;
  }
  ids.delete('unreadable'); // malformed envelopes need no key; pops report them one by one
  return ids;
}

export interface InitEncryptionOptions {
  config: EncryptionConfig;
  store: Store;
  /** The snapshot main already loaded (avoids a second load); loaded here when absent. */
  snapshot?: Pick<StoreSnapshot, 'settings' | 'partitions'>;
  log: Pick<Logger, 'info'>;
}

/**
 * Builds the payload codec for this boot and checks the data directory against the keys.
 * Records the current key's key-check value (never the key) before returning.
 * @throws ConfigError (fatal, before the listener binds) when stored payloads need a key that is
 *   neither `QUEEN_ENCRYPTION_KEY` nor listed in `QUEEN_ENCRYPTION_KEY_PREVIOUS`; the message
 *   names the key id.
 */
export async function initEncryption(opts: InitEncryptionOptions): Promise<PayloadCodec> {
  const { config, store, log } = opts;
  const ring = KeyRing.fromConfig(config);
  const snap = opts.snapshot ?? store.loadSnapshot();
  const result = checkDataDirectoryKeys({
    ring,
    settings: snap.settings,
    findKeyIdsInUse: () => addTimerKeyIds(store.timers, scanKeyIds(store, snap.partitions)),
  });
  if (result.record.length > 0) {
    await store.run((tx) => {
      for (const [k, v] of result.record) tx.setSetting(k, v);
    });
  }
  return codecAfterCheck(config, ring, result.retired, log);
}

/** What the key check reads and writes on a backend of the operation contract (src/storage/contract.ts). */
export interface KeyCheckStore {
  settings(): Promise<ReadonlyMap<string, string>>;
  /** Distinct first `bytes` bytes of every stored encrypted payload. */
  payloadHeads(bytes: number): Promise<Buffer[]>;
  setSetting(key: string, value: string): Promise<void>;
}

/** Thrown inside the synchronous check to ask for the asynchronous scan. */
class ScanNeeded extends Error {}

/**
 * {@link initEncryption} on a backend read through the operation contract (PostgreSQL): the same
 * key check (src/crypto/keycheck.ts) and key-check values recorded, the key ids in use read as the
 * distinct envelope headers of the stored encrypted payloads, only when a recorded key is missing.
 * @throws ConfigError as {@link initEncryption} does
 */
export async function initEncryptionOn(opts: { config: EncryptionConfig; store: KeyCheckStore; log: Pick<Logger, 'info'> }): Promise<PayloadCodec> {
  const { config, store, log } = opts;
  const ring = KeyRing.fromConfig(config);
  const settings = await store.settings();
  let inUse: Set<string> | undefined;
  const check = () => checkDataDirectoryKeys({
    ring, settings,
    findKeyIdsInUse: () => {
      if (!inUse) throw new ScanNeeded('key ids in use not read yet');
      return inUse;
    },
  });
  let result;
  try {
    result = check();
  } catch (e) {
    if (!(e instanceof ScanNeeded)) throw e;
    inUse = new Set<string>();
    for (const h of await store.payloadHeads(HEADER_BYTES)) if (h.length === HEADER_BYTES && h[0] === ENVELOPE_VERSION) inUse.add(h.toString('hex', 1));
    result = check();
  }
  for (const [k, v] of result.record) await store.setSetting(k, v);
  return codecAfterCheck(config, ring, result.retired, log);
}

/** Logs the retired key ids and the boot line, and returns the codec of this boot (`ring` absent: encryption off). */
function codecAfterCheck(config: EncryptionConfig, ring: KeyRing | null, retired: readonly string[], log: Pick<Logger, 'info'>): PayloadCodec {
  for (const id of retired) log.info({ keyId: id }, `encryption key id ${id} retired: no stored payload uses it`);
  if (!ring) {
    log.info(DISABLED_LINE);
    return createPayloadCodec(config);
  }
  log.info({ keyId: ring.current.id, previousKeyIds: ring.previous.map((k) => k.id) }, BOOT_LINE);
  return new EncryptingCodec(ring);
}
