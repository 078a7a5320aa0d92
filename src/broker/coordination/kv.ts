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
import { DEFAULT_TENANT, type KvSubStore, type UnitOp } from '../../storage/contract.js';
import type { KvRow } from '../../storage/kv.js';
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

/** A KV operation that writes or checks one row. */
export type KvWriteOp = Exclude<KvOp, { op: 'get' | 'getMany' | 'getPrefix' }>;

/** True for a write op (the batch then needs a unit of work). */
export function isWrite(op: KvOp): op is KvWriteOp {
  return op.op !== 'get' && op.op !== 'getMany' && op.op !== 'getPrefix';
}

/** Key of a (namespace, key) pair in the view's maps. */
function slot(ns: string, key: string): string {
  return `${ns}\u0000${key}`;
}

/**
 * The rows one call sees and writes, at one instant `now`, over the operation contract's KV
 * sub-store (src/storage/contract.ts): reads come from the committed rows (each key read once and
 * remembered) with this call's own writes on top; writes are collected as the unit's ops. Every
 * committed row a decision was made on is expected unchanged (`kvExpect`), and a written version
 * must still be above the key's and the floor (`kvPut` fencing), so a unit decided on rows that
 * changed meanwhile is refused and the call decides again (docs/storage.md#operation-contract).
 * Locks build on it too.
 */
export class KvView {
  /** Expiry instants written by this call (the sweep is re-armed after commit). */
  readonly expiries: number[] = [];
  /**
   * Committed rows as first seen (null: no row); `used` once a decision read it (a key read, not a
   * scan), and only those are expected unchanged.
   */
  private readonly read = new Map<string, { ns: string; key: string; row: KvRow | null; used: boolean }>();
  /** This call's writes on top of them (null: removed). */
  private readonly own = new Map<string, KvRow | null>();
  private readonly writes: UnitOp[] = [];
  private floorSeen: number | undefined;

  /** @param tenant whose rows; @param now the call's instant, epoch ms */
  constructor(private readonly kv: KvSubStore, private readonly tenant: string, readonly now: number) {}

  /** The stored row of a key, expired or not (this call's writes included). */
  private async raw(ns: string, key: string): Promise<KvRow | undefined> {
    const k = slot(ns, key);
    const mine = this.own.get(k);
    if (mine !== undefined) return mine ?? undefined;
    let seen = this.read.get(k);
    if (!seen) {
      seen = { ns, key, row: (await this.kv.get(this.tenant, ns, key)) ?? null, used: true };
      this.read.set(k, seen);
    }
    seen.used = true;
    return seen.row ?? undefined;
  }

  private async floor(): Promise<number> {
    this.floorSeen ??= await this.kv.floor();
    return this.floorSeen;
  }

  /** The live row of a key (expired rows are absent). */
  async live(ns: string, key: string): Promise<KvRow | undefined> {
    const r = await this.raw(ns, key);
    return r && (r.expiresAt === null || r.expiresAt > this.now) ? r : undefined;
  }

  /** Live rows of a namespace after `after`, in key order (committed rows with this call's writes on top). */
  async scan(ns: string, prefix: string, after: string | undefined, limit: number): Promise<KvRow[]> {
    const inRange = (key: string) => key.startsWith(prefix) && (after === undefined || key > after);
    const mine = [...this.own.entries()].filter(([k]) => k.startsWith(`${ns}\u0000`) && inRange(k.slice(ns.length + 1)));
    const committed = await this.kv.scan(this.tenant, { ns, prefix, after, limit: limit + mine.length, now: this.now });
    // A later key read sees the row this scan decided on (lock renewals check the scanned token).
    for (const r of committed) if (!this.read.has(slot(ns, r.key))) this.read.set(slot(ns, r.key), { ns, key: r.key, row: r, used: false });
    const byKey = new Map(committed.map((r) => [r.key, this.read.get(slot(ns, r.key))?.row ?? r]));
    for (const [k, r] of mine) {
      const key = k.slice(ns.length + 1);
      if (r && (r.expiresAt === null || r.expiresAt > this.now)) byKey.set(key, r);
      else byKey.delete(key);
    }
    return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, limit);
  }

  /** Writes a row with the next version (fencing: above the key's old one and the floor). */
  async write(ns: string, key: string, valueText: string, expiry: KvExpiry): Promise<KvRow> {
    const old = await this.raw(ns, key);
    const version = Math.max(old?.version ?? 0, await this.floor()) + 1;
    const row: KvRow = { ns, key, value: valueText, version, expiresAt: expiry === null ? null : this.now + expiry, updatedAt: this.now };
    this.own.set(slot(ns, key), row);
    this.writes.push({ op: 'kvPut', tenant: this.tenant, row });
    if (row.expiresAt !== null) this.expiries.push(row.expiresAt);
    return row;
  }

  /** Removes a row (live or expired); the floor rises to its version. */
  async remove(ns: string, key: string): Promise<boolean> {
    const old = await this.raw(ns, key);
    if (!old) return false;
    this.floorSeen = Math.max(await this.floor(), old.version);
    this.own.set(slot(ns, key), null);
    this.writes.push({ op: 'kvDelete', tenant: this.tenant, ns, key });
    return true;
  }

  /** True when this call wrote something. */
  get wrote(): boolean {
    return this.writes.length > 0;
  }

  /** The unit's ops: the committed rows read, expected unchanged, then the writes in call order. */
  ops(): UnitOp[] {
    const expect: UnitOp[] = [...this.read.values()].filter((r) => r.used).map((r) => ({ op: 'kvExpect', tenant: this.tenant, ns: r.ns, key: r.key, version: r.row?.version ?? null }));
    return [...expect, ...this.writes];
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
export async function applyKvOps(view: KvView, ops: readonly KvOp[], base = 0): Promise<KvResult[]> {
  const out: KvResult[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    const r = await applyOne(view, op, base + i);
    if ('applied' in r && !r.applied && 'required' in op && op.required) {
      throw new KvPreconditionLost(base + i, r.reason, r.version, r.value);
    }
    out.push(r);
  }
  return out;
}

function verdict(index: number, op: KvRefused['op'], key: string, row: KvRow | undefined, reason: KvReason): KvRefused {
  return { index, op, applied: false, key, value: row ? parseValue(row.value) : null, version: row?.version ?? 0, reason };
}

function written(index: number, op: KvApplied['op'], row: KvRow, value: unknown): KvApplied {
  return { index, op, applied: true, key: row.key, value, version: row.version, expiresAt: isoOrNull(row.expiresAt) };
}

async function applyOne(view: KvView, op: KvOp, index: number): Promise<KvResult> {
  switch (op.op) {
    case 'get': {
      const r = await view.live(op.ns, op.key);
      return r
        ? { index, op: op.op, found: true, ...rowOut(r) }
        : { index, op: op.op, found: false, key: op.key, value: null, version: 0, expiresAt: null, updatedAt: null };
    }
    case 'getMany': {
      const rows: KvRowOut[] = [];
      const missing: string[] = [];
      for (const k of op.keys) {
        const r = await view.live(op.ns, k);
        if (r) rows.push(rowOut(r));
        else missing.push(k);
      }
      return { index, op: op.op, rows, missing };
    }
    case 'getPrefix': {
      const got = await view.scan(op.ns, op.prefix, op.after, op.limit + 1);
      const truncated = got.length > op.limit;
      const page = truncated ? got.slice(0, op.limit) : got;
      return {
        index, op: op.op, rows: page.map((r) => rowOut(r, !op.keysOnly)), truncated,
        nextAfter: truncated ? page[page.length - 1]!.key : null,
      };
    }
    case 'put':
    case 'putIfAbsent': {
      const cur = await view.live(op.ns, op.key);
      const lost = expectation(cur, op.op === 'putIfAbsent' ? 0 : op.expect);
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      return written(index, op.op, await view.write(op.ns, op.key, stringifyClientJson(op.value), op.expiry), op.value);
    }
    case 'delete': {
      const cur = await view.live(op.ns, op.key);
      const lost = cur ? expectation(cur, op.expect) : 'absent';
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      await view.remove(op.ns, op.key);
      return { index, op: op.op, applied: true, key: op.key, value: null, version: cur!.version };
    }
    case 'incr': {
      const cur = await view.live(op.ns, op.key);
      const lost = expectation(cur, op.expect);
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      const old = cur ? counterValue(cur.value) : 0;
      if (old === undefined) return verdict(index, op.op, op.key, cur, 'type');
      const next = old + op.delta;
      if (!Number.isSafeInteger(next) || (op.max !== undefined && next > op.max) || (op.min !== undefined && next < op.min)) {
        return verdict(index, op.op, op.key, cur, 'limit');
      }
      return written(index, op.op, await view.write(op.ns, op.key, JSON.stringify(next), op.expiry), next);
    }
    case 'check': {
      const cur = await view.live(op.ns, op.key);
      const lost = expectation(cur, op.expect);
      if (lost) return verdict(index, op.op, op.key, cur, lost);
      return { index, op: op.op, applied: true, key: op.key, value: cur ? parseValue(cur.value) : null, version: cur?.version ?? 0 };
    }
  }
}

/**
 * Decisions a KV call is made on at most (a refused unit means its rows changed meanwhile). Writes
 * to one key queue behind each other in this process ({@link kvWriteKeys}), so only writers this
 * process does not order (other nodes, the expiry sweep) can use them up.
 */
export const KV_UNIT_ATTEMPTS = 8;

/**
 * The keys of the rows `ops` write or check, in `tenant`: what a call holds in the broker's
 * {@link import('../broker.js').Broker.kvWrites} while it decides and commits, so that writes to
 * one row apply one after the other instead of racing to the commit and deciding again.
 */
export function kvWriteKeys(tenant: string, ops: readonly KvOp[]): string[] {
  const keys: string[] = [];
  for (const op of ops) if (isWrite(op)) keys.push(kvWriteKey(tenant, op.ns, op.key));
  return keys;
}

/** One row's key in {@link kvWriteKeys} (names never hold NUL). */
export function kvWriteKey(tenant: string, ns: string, key: string): string {
  return `${tenant}\u0000${ns}\u0000${key}`;
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
    this.sweeper.start().catch((e: unknown) => this.broker.log.error({ err: e }, 'kv expiry sweep could not be armed'));
  }

  /** The broker's current instant, epoch ms. */
  private now(): number {
    return this.broker.clock.now();
  }

  /** A fresh view of `tenant`'s rows for one decision at the broker's clock (`now` in epoch ms). */
  view(now = this.now(), tenant: string = DEFAULT_TENANT): KvView {
    return new KvView(this.broker.backend.kv, tenant, now);
  }

  /** A read-only view of `tenant`'s committed rows at the broker's clock. */
  reader(tenant: string = DEFAULT_TENANT): KvView {
    return this.view(this.now(), tenant);
  }

  /** `tenant`'s namespaces with their key counts, by name, at most `limit` (default {@link MAX_KV_NAMESPACES}). */
  namespaces(limit = MAX_KV_NAMESPACES, tenant: string = DEFAULT_TENANT): Promise<{ ns: string; keys: number }[]> {
    return this.broker.backend.kv.namespaces(tenant, '', limit);
  }

  /** Re-arms the sweep for what `view` wrote (call once its unit is durable). */
  committed(view: KvView): void {
    for (const t of view.expiries) this.sweeper.due(t);
  }

  /**
   * Decides with `decide` on a fresh view and commits its writes as one unit of the operation
   * contract, deciding again when the rows it read changed before the unit ran; holds `keys`
   * ({@link kvWriteKeys}) in the broker's `kvWrites` meanwhile.
   * @returns what `decide` returned for the committed view
   * @throws QueenError `write_contention` when the rows kept changing ({@link KV_UNIT_ATTEMPTS} decisions);
   *   whatever `decide` throws (KvPreconditionLost: nothing is written)
   */
  decided<T>(decide: (view: KvView) => Promise<T>, tenant: string = DEFAULT_TENANT, keys: readonly string[] = []): Promise<T> {
    return this.broker.kvWrites.run(keys, async () => {
      for (let attempt = 1; ; attempt++) {
        const view = this.view(this.now(), tenant);
        const out = await decide(view);
        if (!view.wrote) return out;
        const unit = await this.broker.backend.unit(view.ops());
        if (unit.committed) {
          this.committed(view);
          return out;
        }
        if (attempt >= KV_UNIT_ATTEMPTS) throw new QueenError('write_contention', `KV rows kept changing under the call (${KV_UNIT_ATTEMPTS} decisions); nothing was written: retry`);
      }
    });
  }

  /**
   * Runs one batch: reads only → answered from committed state without a commit; otherwise one
   * unit of work on `tenant`'s rows. @throws QueenError `shutting_down`, `storage_error`, `write_contention`
   */
  async batch(ops: readonly KvOp[], tenant: string = DEFAULT_TENANT): Promise<KvAnswer> {
    if (!ops.some(isWrite)) {
      return { ok: true, results: await applyKvOps(this.reader(tenant), ops) };
    }
    try {
      return { ok: true, results: await this.decided((view) => applyKvOps(view, ops), tenant, kvWriteKeys(tenant, ops)) };
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
