/**
 * The KV part of the storage contract (docs/http-api.md#kv): rows addressed by
 * `(namespace, key)`, each with a JSON value, a version and an optional expiry.
 *
 * Versions are fencing tokens: a key's version only grows, even across a delete or an expiry.
 * The store keeps one number, the *floor*: the highest version any removed row ever had. A key
 * written when it has no row gets `floor + 1`; a key overwritten gets `max(old, floor) + 1`. No
 * tombstones are kept and no version is ever handed out twice for the same key.
 *
 * Reads are callable anywhere; writes only inside {@link Store.run} (they join that unit of work
 * and its group commit). Every query is an index range with a limit; expiry has its own index,
 * so the sweep costs what is due.
 */

/** One KV row as stored. `value` is JSON text (keys and values stay in clear). */
export interface KvRow {
  ns: string;
  key: string;
  /** JSON text of the value (`null` is the text `"null"`). */
  value: string;
  version: number;
  /** epoch ms; null = forever. A row with `expiresAt <= now` is invisible. */
  expiresAt: number | null;
  /** epoch ms */
  updatedAt: number;
}

/** A keyset page query over one namespace, ascending by key. */
export interface KvScan {
  ns: string;
  /** Only keys starting with this text ('' = every key). */
  prefix: string;
  /** Only keys strictly after this one. */
  after?: string | undefined;
  limit: number;
  /** Rows with `expiresAt <= now` are left out. */
  now: number;
}

/** KV reads and writes; see the module comment. */
export interface KvStore {
  /** The row of a key, expired or not (writes need the old version either way). */
  getRow(ns: string, key: string): KvRow | undefined;
  /** Live rows of a namespace in key order (see {@link KvScan}). */
  scan(q: KvScan): KvRow[];
  /** Namespaces holding rows (expired rows not yet pruned included), ascending, after `after`. */
  namespaces(after: string, limit: number): { ns: string; keys: number }[];
  /** Earliest expiry among stored rows; undefined when none expires. */
  nextExpiry(): number | undefined;
  /** The version floor (highest version of any removed row; 0 initially). */
  floor(): number;

  // ---------------------------------------------------------------- writes (inside Store.run)

  /** Inserts or replaces a row. */
  putRow(row: KvRow): void;
  /** Removes a row and raises the floor to its version; returns whether a row was removed. */
  deleteRow(ns: string, key: string): boolean;
  /**
   * Removes up to `limit` rows whose expiry is at or before `now` (oldest expiry first) and
   * raises the floor past them; returns the rows removed.
   */
  pruneExpired(now: number, limit: number): number;
}
