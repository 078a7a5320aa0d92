/**
 * The KV store's rules (docs/http-api.md#kv): what each operation reads and writes, version
 * fencing, expectations, `required` preconditions and expiry. No HTTP, no SQL: rows come from
 * {@link KvStore}; input arrives already validated (http/routes/kv-input.ts).
 *
 * A batch is one unit of work: its operations apply in order (later ones see earlier writes) and
 * commit together. A lost `required` precondition throws {@link KvPreconditionLost}, which rolls
 * the unit back, so nothing of the call is written. Verdicts (`applied:false`, `found:false`) are
 * results, never errors. Expired rows are invisible at once; {@link KvSweeper} prunes them later.
 */
import { QueenError } from '../../errors.js';
import type { KvRow, KvStore } from '../../storage/kv.js';
import type { StoreTx } from '../../storage/store.js';
import { RawJson, stringifyClientJson } from '../../util/json.js';
import { isoOrNull } from '../../util/time.js';
import type { Broker } from '../broker.js';
import { KvSweeper } from '../jobs/kv-sweeper.js';

/** Expiry of a write: milliseconds from now, or null for `forever:true`. */
export type KvExpiry = number | null;

/** Writes that may carry `expect` and `required`. */
interface Guarded {
  /** 0 = must not exist; N > 0 = must be live at version N. */
  expect?: number | undefined;
  /** A lost precondition fails the whole call (nothing written). */
  required: boolean;
}

/** One validated KV operation. */
export type KvOp =
  | { op: 'get'; ns: string; key: string }
  | { op: 'getMany'; ns: string; keys: string[] }
  | { op: 'getPrefix'; ns: string; prefix: string; after?: string | undefined; limit: number; keysOnly: boolean }
  | ({ op: 'put' | 'putIfAbsent'; ns: string; key: string; value: unknown; expiry: KvExpiry } & Guarded)
  | ({ op: 'delete'; ns: string; key: string } & Guarded)
  | ({ op: 'incr'; ns: string; key: string; delta: number; min?: number | undefined; max?: number | undefined; expiry: KvExpiry } & Guarded)
  | ({ op: 'check'; ns: string; key: string } & Guarded);

/** Why a write or check did not apply. */
export type KvReason = 'exists' | 'absent' | 'version' | 'limit' | 'type';

/** One row as answered. */
export interface KvRowOut {
  key: string;
  value?: unknown;
  version: number;
  expiresAt: string | null;
  updatedAt: string;
}

/**
 * One result, index-aligned with the request's operations: a read (`get`, `getMany`, `getPrefix`),
 * a write or check that applied, or one that did not (`applied:false` with the reason and the
 * current row). Values are the stored JSON text, spliced verbatim into the answer.
 */
export type KvResult = KvGetResult | KvGetManyResult | KvGetPrefixResult | KvApplied | KvRefused;

/** `get`: the row, or `found:false` with empty fields. */
export type KvGetResult =
  | ({ index: number; op: 'get'; found: true } & KvRowOut)
  | { index: number; op: 'get'; found: false; key: string; value: null; version: 0; expiresAt: null; updatedAt: null };

/** `getMany`: the live rows found and the keys that were not. */
export interface KvGetManyResult {
  index: number;
  op: 'getMany';
  rows: KvRowOut[];
  missing: string[];
}

/** `getPrefix`: one keyset page; `nextAfter` is the next page's `after`, null on the last. */
export interface KvGetPrefixResult {
  index: number;
  op: 'getPrefix';
  rows: KvRowOut[];
  truncated: boolean;
  nextAfter: string | null;
}

/** A write or check that applied: the new (or checked) version; `expiresAt` ISO-8601 after a write. */
export interface KvApplied {
  index: number;
  op: 'put' | 'putIfAbsent' | 'delete' | 'incr' | 'check';
  applied: true;
  key: string;
  value: unknown;
  version: number;
  expiresAt?: string | null;
}

/** A write or check that did not apply: why, and the current row (`version` 0 and `value` null when absent). */
export interface KvRefused {
  index: number;
  op: 'put' | 'putIfAbsent' | 'delete' | 'incr' | 'check';
  applied: false;
  key: string;
  value: RawJson | null;
  version: number;
  reason: KvReason;
}

/** A call whose `required` precondition did not hold: nothing applied (still HTTP 200). */
export interface KvPreconditionFailure {
  ok: false;
  reason: 'kv_precondition';
  /** Index of the operation whose precondition failed. */
  failedIndex: number;
  kvReason: KvReason;
  /** Current version of the row (0 when absent). */
  version: number;
  /** Current value of the row (null when absent). */
  value: unknown;
}

/** A call's answer: `ok:true` with results, or the precondition failure (still HTTP 200). */
export type KvAnswer = { ok: true; results: KvResult[] } | KvPreconditionFailure;

/** Thrown inside a unit of work when a `required` precondition is lost: rolls the unit back. */
export class KvPreconditionLost extends QueenError {
  constructor(readonly failedIndex: number, readonly kvReason: KvReason, readonly version: number, readonly value: unknown) {
    super('kv_precondition', undefined, { ok: false, reason: 'kv_precondition', failedIndex, kvReason, version, value });
  }

  /** The 200 answer body of the failed call. */
  answer(): KvPreconditionFailure {
    return { ok: false, reason: 'kv_precondition', failedIndex: this.failedIndex, kvReason: this.kvReason, version: this.version, value: this.value };
  }
}

/** A stored value as its exact JSON text (spliced verbatim into the answer, never re-parsed). */
function parseValue(text: string): RawJson {
  return new RawJson(text);
}

/** The stored value as a number `incr` may add to: a safe integer written plainly, else undefined. */
function counterValue(text: string): number | undefined {
  const n = Number(text);
  return Number.isSafeInteger(n) && String(n) === text ? n : undefined;
}

/** A row as answered (`value` left out for `keysOnly`). */
export function rowOut(r: KvRow, withValue = true): KvRowOut {
  const out: KvRowOut = { key: r.key, version: r.version, expiresAt: isoOrNull(r.expiresAt), updatedAt: new Date(r.updatedAt).toISOString() };
  if (withValue) out.value = parseValue(r.value);
  return out;
}

/** True for a write op (the batch then needs a unit of work). */
export function isWrite(op: KvOp): boolean {
  return op.op !== 'get' && op.op !== 'getMany' && op.op !== 'getPrefix';
}

/**
 * The rows one unit of work sees and writes, at one instant `now`. Locks build on it too.
 * Write methods are only valid inside a unit of work.
 */
export class KvView {
  /** Expiry instants written by this unit (the sweep is re-armed after commit). */
  readonly expiries: number[] = [];

  constructor(private readonly kv: KvStore, readonly now: number) {}

  /** The live row of a key (expired rows are absent). */
  live(ns: string, key: string): KvRow | undefined {
    const r = this.kv.getRow(ns, key);
    return r && (r.expiresAt === null || r.expiresAt > this.now) ? r : undefined;
  }

  /** Live rows of a namespace after `after`, in key order. */
  scan(ns: string, prefix: string, after: string | undefined, limit: number): KvRow[] {
    return this.kv.scan({ ns, prefix, after, limit, now: this.now });
  }

  /** Writes a row with the next version (fencing: above the key's old one and the floor). */
  write(ns: string, key: string, valueText: string, expiry: KvExpiry): KvRow {
    const old = this.kv.getRow(ns, key);
    const version = Math.max(old?.version ?? 0, this.kv.floor()) + 1;
    const row: KvRow = { ns, key, value: valueText, version, expiresAt: expiry === null ? null : this.now + expiry, updatedAt: this.now };
    this.kv.putRow(row);
    if (row.expiresAt !== null) this.expiries.push(row.expiresAt);
    return row;
  }

  /** Removes a row (live or expired). */
  remove(ns: string, key: string): boolean {
    return this.kv.deleteRow(ns, key);
  }
}

/** Verdict of an `expect` against the live row: undefined when it holds. */
function expectation(row: KvRow | undefined, expect: number | undefined): KvReason | undefined {
  if (expect === undefined) return undefined;
  if (expect === 0) return row ? 'exists' : undefined;
  if (!row) return 'absent';
  return row.version === expect ? undefined : 'version';
}

/**
 * Applies `ops` in order on `view`; results are index-aligned (`base` is added to each index,
 * for riders whose indexes continue another list).
 * @throws KvPreconditionLost when a `required` op does not apply (the caller's unit rolls back)
 */
export function applyKvOps(view: KvView, ops: readonly KvOp[], base = 0): KvResult[] {
  return ops.map((op, i) => {
    const r = applyOne(view, op, base + i);
    if ('applied' in r && !r.applied && 'required' in op && op.required) {
      throw new KvPreconditionLost(base + i, r.reason, r.version, r.value);
    }
    return r;
  });
}

function verdict(index: number, op: KvRefused['op'], key: string, row: KvRow | undefined, reason: KvReason): KvRefused {
  return { index, op, applied: false, key, value: row ? parseValue(row.value) : null, version: row?.version ?? 0, reason };
}

function written(index: number, op: KvApplied['op'], row: KvRow, value: unknown): KvApplied {
  return { index, op, applied: true, key: row.key, value, version: row.version, expiresAt: isoOrNull(row.expiresAt) };
}

function applyOne(view: KvView, op: KvOp, index: number): KvResult {
  switch (op.op) {
    case 'get': {
      const r = view.live(op.ns, op.key);
      return r
        ? { index, op: op.op, found: true, ...rowOut(r) }
        : { index, op: op.op, found: false, key: op.key, value: null, version: 0, expiresAt: null, updatedAt: null };
    }
    case 'getMany': {
      const rows: KvRowOut[] = [];
      const missing: string[] = [];
      for (const k of op.keys) {
        const r = view.live(op.ns, k);
        if (r) rows.push(rowOut(r));
        else missing.push(k);
      }
      return { index, op: op.op, rows, missing };
    }
    case 'getPrefix': {
      const got = view.scan(op.ns, op.prefix, op.after, op.limit + 1);
      const truncated = got.length > op.limit;
      const page = truncated ? got.slice(0, op.limit) : got;
      return {
        index, op: op.op, rows: page.map((r) => rowOut(r, !op.keysOnly)), truncated,
        nextAfter: truncated ? page[page.length - 1]!.key : null,
      };
    }
    case 'put':
    case 'putIfAbsent': {
      const cur = view.live(op.ns, op.key);
      const lost = expectation(cur, op.op === 'putIfAbsent' ? 0 : op.expect);
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      return written(index, op.op, view.write(op.ns, op.key, stringifyClientJson(op.value), op.expiry), op.value);
    }
    case 'delete': {
      const cur = view.live(op.ns, op.key);
      const lost = cur ? expectation(cur, op.expect) : 'absent';
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      view.remove(op.ns, op.key);
      return { index, op: op.op, applied: true, key: op.key, value: null, version: cur!.version };
    }
    case 'incr': {
      const cur = view.live(op.ns, op.key);
      const lost = expectation(cur, op.expect);
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      const old = cur ? counterValue(cur.value) : 0;
      if (old === undefined) return verdict(index, op.op, op.key, cur, 'type');
      const next = old + op.delta;
      if (!Number.isSafeInteger(next) || (op.max !== undefined && next > op.max) || (op.min !== undefined && next < op.min)) {
        return verdict(index, op.op, op.key, cur, 'limit');
      }
      return written(index, op.op, view.write(op.ns, op.key, JSON.stringify(next), op.expiry), next);
    }
    case 'check': {
      const cur = view.live(op.ns, op.key);
      const lost = expectation(cur, op.expect);
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      return { index, op: op.op, applied: true, key: op.key, value: cur ? parseValue(cur.value) : null, version: cur?.version ?? 0 };
    }
  }
}

/** Namespaces listed by {@link Kv.namespaces} at most. */
export const MAX_KV_NAMESPACES = 1000;

/**
 * The KV service of one broker: batches, console reads, and the expiry sweep it keeps armed.
 * Built once by `Services` (src/broker/services.ts), which starts and stops the sweep. Expiry is
 * judged at the broker's clock.
 */
export class Kv {
  readonly sweeper: KvSweeper;

  constructor(readonly broker: Broker) {
    this.sweeper = new KvSweeper(broker);
  }

  /** Arms the expiry sweep for the earliest stored expiry. */
  start(): void {
    this.sweeper.start();
  }

  /** The broker's current instant, epoch ms. */
  private now(): number {
    return this.broker.engine.clock.now();
  }

  /** A view for work inside a unit (`tx` only proves the caller holds one); `now` in epoch ms. */
  view(_tx: StoreTx, now = this.now()): KvView {
    return new KvView(this.broker.store.kv, now);
  }

  /** A read-only view of committed rows at the broker's clock (reads outside a unit of work). */
  reader(): KvView {
    return new KvView(this.broker.store.kv, this.now());
  }

  /** Namespaces with their key counts, by name, at most `limit` (default {@link MAX_KV_NAMESPACES}). */
  namespaces(limit = MAX_KV_NAMESPACES): { ns: string; keys: number }[] {
    return this.broker.store.kv.namespaces('', limit);
  }

  /** Re-arms the sweep for what `view` wrote (call once its unit is durable). */
  committed(view: KvView): void {
    for (const t of view.expiries) this.sweeper.due(t);
  }

  /**
   * Runs one batch: reads only → answered from committed state without a commit; otherwise one
   * unit of work. @throws QueenError `shutting_down`, `storage_error`
   */
  async batch(ops: readonly KvOp[]): Promise<KvAnswer> {
    if (!ops.some(isWrite)) {
      return { ok: true, results: applyKvOps(this.reader(), ops) };
    }
    let view: KvView | undefined;
    try {
      const results = await this.broker.run((tx) => {
        view = this.view(tx);
        return applyKvOps(view, ops);
      });
      this.committed(view!);
      return { ok: true, results };
    } catch (e) {
      if (e instanceof KvPreconditionLost) return e.answer();
      throw e;
    }
  }

  /** Stops the sweep (the broker is closing). */
  stop(): void {
    this.sweeper.stop();
  }
}
