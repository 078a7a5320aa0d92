/**
 * Boot-time key check (docs/security.md#key-check): the data directory records, per key id, the
 * key-check value of every key that was ever the current key (settings `encryption.kcv.<id>`).
 * At boot, a recorded key that is neither the current key nor a listed previous key means stored
 * payloads may be unreadable: the broker refuses to start and names the key id, instead of
 * failing every pop later.
 *
 * A recorded key whose payloads are all gone (consumed and removed by retention, queue deleted)
 * is retired rather than required, when the caller can tell (`findKeyIdsInUse`, a scan of the
 * stored envelopes, run only in that case). Pure logic; the store access lives in boot.ts.
 */
import { ConfigError } from '../config/env.js';
import { KEY_VAR, PREVIOUS_VAR } from '../config/encryption.js';
import { keyIdOfKcv, type KeyRing } from './keyring.js';

/** Settings key prefix; the full key is `encryption.kcv.<key id>`. */
export const KCV_SETTING_PREFIX = 'encryption.kcv.';
/** Value prefix marking a recorded key that no stored payload uses any more. */
export const RETIRED_PREFIX = 'retired:';

/** A key the data directory knows about. */
export interface RecordedKey {
  /** 8 hex characters */
  id: string;
  /** Key-check value, 64 hex characters. */
  kcv: string;
  /** True when no stored payload used it at the last check. */
  retired: boolean;
}

/** The keys recorded in a settings map (entries that do not parse are ignored). */
export function readRecordedKeys(settings: ReadonlyMap<string, string>): RecordedKey[] {
  const out: RecordedKey[] = [];
  for (const [k, v] of settings) {
    if (!k.startsWith(KCV_SETTING_PREFIX)) continue;
    const id = k.slice(KCV_SETTING_PREFIX.length);
    const retired = v.startsWith(RETIRED_PREFIX);
    const kcv = retired ? v.slice(RETIRED_PREFIX.length) : v;
    if (/^[0-9a-f]{8}$/.test(id) && /^[0-9a-f]{64}$/.test(kcv) && keyIdOfKcv(kcv) === id) out.push({ id, kcv, retired });
  }
  return out;
}

export interface KeyCheckInput {
  /** The configured keys, or null without `QUEEN_ENCRYPTION_KEY`. */
  ring: KeyRing | null;
  /** The store's settings (`StoreSnapshot.settings`). */
  settings: ReadonlyMap<string, string>;
  /**
   * The key ids named by the envelopes actually stored (messages and dead letters). Called at
   * most once, only when a recorded key is missing from the ring. Without it, every recorded
   * key that is not retired counts as still needed.
   */
  findKeyIdsInUse?: () => ReadonlySet<string>;
}

export interface KeyCheckResult {
  /** Settings to write before serving: the current key's KCV, retirement marks. */
  record: Array<[key: string, value: string]>;
  /** Recorded key ids found unused and retired by this check. */
  retired: string[];
}

function list(ids: readonly string[]): string {
  return ids.length === 1 ? `key id ${ids[0]}` : `key ids ${ids.join(', ')}`;
}

/**
 * Decides whether the broker may start with `ring` on this data directory.
 * @throws ConfigError naming the missing key id(s) when stored payloads need a key the ring lacks,
 *   or when a configured key has a recorded id but a different key-check value.
 */
export function checkDataDirectoryKeys(input: KeyCheckInput): KeyCheckResult {
  const { ring } = input;
  const recorded = readRecordedKeys(input.settings);
  const active = recorded.filter((r) => !r.retired);

  for (const r of active) {
    const rk = ring?.get(r.id);
    if (rk && rk.kcv !== r.kcv) {
      const which = rk === ring!.current ? KEY_VAR : PREVIOUS_VAR;
      throw new ConfigError(
        `${KEY_VAR} does not match the key this data directory was encrypted with: the key in ${which} has key id ${r.id} ` +
          `but not the key-check value recorded for that id`,
      );
    }
  }

  const missing = active.filter((r) => !ring?.get(r.id)).map((r) => r.id);
  let needed = missing;
  const retired: string[] = [];
  if (missing.length > 0 && input.findKeyIdsInUse) {
    const inUse = input.findKeyIdsInUse();
    needed = [...inUse].filter((id) => !ring?.get(id)).sort();
    for (const id of missing) if (!inUse.has(id)) retired.push(id);
  }

  if (needed.length > 0) {
    if (!ring) {
      throw new ConfigError(
        `this data directory holds encrypted payloads but ${KEY_VAR} is not set (payloads were written under ${list(needed)})`,
      );
    }
    throw new ConfigError(
      `${KEY_VAR} does not match the key this data directory was encrypted with: payloads were written under ${list(needed)}, ` +
        `which is neither ${KEY_VAR} (key id ${ring.current.id}) nor listed in ${PREVIOUS_VAR}; ` +
        `to rotate keys, set the new key in ${KEY_VAR} and list the old one in ${PREVIOUS_VAR}`,
    );
  }

  const record: Array<[string, string]> = [];
  const byId = new Map(recorded.map((r) => [r.id, r]));
  for (const id of retired) record.push([KCV_SETTING_PREFIX + id, RETIRED_PREFIX + byId.get(id)!.kcv]);
  if (ring) {
    const cur = byId.get(ring.current.id);
    if (!cur || cur.retired) record.push([KCV_SETTING_PREFIX + ring.current.id, ring.current.kcv]);
  }
  return { record, retired };
}
