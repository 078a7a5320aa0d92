/**
 * Locks and semaphores (docs/http-api.md#locks) as KV rows: each permit is the row
 * `queen-locks/<name>#<slot>` whose value is `{owner, since, renewedAt}` and whose expiry is the
 * lease. The permit's token is the row's version, so it is a fencing token: it only grows, a
 * renew hands out a new one, and a `guard` (a required KV `check` on that version) put in a
 * transaction makes the transaction fail once the permit was lost.
 *
 * A call's operations apply in order and commit as one unit of the operation contract (decided
 * again when the permits it read changed meanwhile, see {@link Kv.decided}). Verdicts are results, never errors.
 */
import type { KvRow } from '../../storage/kv.js';
import { isoOrNull } from '../../util/time.js';
import { DEFAULT_TENANT } from '../../storage/contract.js';
import { kvWriteKey, type Kv, type KvView } from './kv.js';

/** The KV namespace holding lock permits. */
export const LOCKS_NS = 'queen-locks';
/** Most slots a semaphore may have. */
export const MAX_LOCK_SLOTS = 1024;

/** One validated lock operation (`ttlMs` from the request's `ttlSeconds`). */
export type LockOp =
  | { op: 'acquire'; name: string; ttlMs: number; owner: string | null; limit: number }
  | { op: 'renew'; name: string; token: number; ttlMs: number; owner: string | null; slot: number | undefined }
  | { op: 'release'; name: string; token: number; slot: number | undefined }
  | { op: 'get'; name: string };

/** A permit holder as answered (tokens of others are not shown). */
export interface Holder {
  slot: number;
  owner: string | null;
  since: string | null;
  expiresAt: string | null;
  renewedAt: string | null;
}

interface Permit {
  slot: number;
  row: KvRow;
  owner: string | null;
  since: number | null;
  renewedAt: number | null;
}

/** A KV `check` operation (docs/http-api.md#kv) to put in a transaction's `kv` rider. */
export interface LockGuard {
  op: 'check';
  ns: typeof LOCKS_NS;
  key: string;
  expect: number;
  required: true;
}

/** `get`: whether any permit is held, and by whom. */
export interface LockState {
  index: number;
  op: 'get';
  name: string;
  held: boolean;
  holders: Holder[];
}

/**
 * A permit granted (`acquired:true`, with `already:true` when the owner held it already) or renewed
 * (`renewed:true`): its slot, fencing `token`, expiry (ISO-8601) and {@link LockGuard}.
 */
export interface LockGranted {
  index: number;
  op: 'acquire' | 'renew';
  name: string;
  acquired?: true;
  renewed?: true;
  already?: true;
  slot: number;
  token: number;
  owner: string | null;
  expiresAt: string | null;
  guard: LockGuard;
  holders: Holder[];
}

/** A permit released: the slot and token it had. */
export interface LockReleased {
  index: number;
  op: 'release';
  name: string;
  released: true;
  slot: number;
  token: number;
  owner: string | null;
  guard: null;
  holders: Holder[];
}

/** A refusal: the verdict named for the op is false; `held` (every slot taken) or `lost` (token no longer holds a permit). */
export interface LockRefused {
  index: number;
  op: 'acquire' | 'renew' | 'release';
  name: string;
  acquired?: false;
  renewed?: false;
  released?: false;
  reason: 'held' | 'lost';
  slot: null;
  token: null;
  owner: null;
  guard: null;
  holders: Holder[];
}

/** One lock operation's verdict, index-aligned with the request's operations. */
export type LockResult = LockState | LockGranted | LockReleased | LockRefused;

/** The ready-made KV check that fails a transaction once the permit `key` at `token` is lost. */
export function guardOf(key: string, token: number): LockGuard {
  return { op: 'check', ns: LOCKS_NS, key, expect: token, required: true };
}

function keyOf(name: string, slot: number): string {
  return `${name}#${slot}`;
}

async function permits(view: KvView, name: string): Promise<Permit[]> {
  const prefix = `${name}#`;
  const out: Permit[] = [];
  let after: string | undefined;
  for (;;) {
    const rows = await view.scan(LOCKS_NS, prefix, after, 1000);
    for (const row of rows) {
      const rest = row.key.slice(prefix.length);
      if (!/^(0|[1-9][0-9]{0,3})$/.test(rest)) continue; // another lock whose name continues with '#'
      const v = JSON.parse(row.value) as { owner?: unknown; since?: unknown; renewedAt?: unknown } | null;
      out.push({
        slot: Number(rest), row,
        owner: typeof v?.owner === 'string' ? v.owner : null,
        since: typeof v?.since === 'number' ? v.since : null,
        renewedAt: typeof v?.renewedAt === 'number' ? v.renewedAt : null,
      });
    }
    if (rows.length < 1000) break;
    after = rows[rows.length - 1]!.key;
  }
  return out.sort((a, b) => a.slot - b.slot);
}

async function holders(view: KvView, name: string): Promise<Holder[]> {
  return (await permits(view, name)).map((p) => ({
    slot: p.slot, owner: p.owner, since: isoOrNull(p.since), expiresAt: isoOrNull(p.row.expiresAt), renewedAt: isoOrNull(p.renewedAt),
  }));
}

async function granted(index: number, op: LockGranted['op'], name: string, p: { slot: number; row: KvRow; owner: string | null }, view: KvView, already = false): Promise<LockGranted> {
  return {
    index, op, name, ...(op === 'acquire' ? { acquired: true } : { renewed: true }), ...(already ? { already: true } : {}), slot: p.slot, token: p.row.version, owner: p.owner,
    expiresAt: isoOrNull(p.row.expiresAt), guard: guardOf(p.row.key, p.row.version), holders: await holders(view, name),
  };
}

async function refused(index: number, op: LockRefused['op'], name: string, reason: 'held' | 'lost', view: KvView): Promise<LockRefused> {
  const verdict = op === 'acquire' ? { acquired: false as const } : op === 'renew' ? { renewed: false as const } : { released: false as const };
  return { index, op, name, ...verdict, reason, slot: null, token: null, owner: null, guard: null, holders: await holders(view, name) };
}

/** Applies one lock operation on `view`. */
export async function applyLockOp(view: KvView, op: LockOp, index: number): Promise<LockResult> {
  switch (op.op) {
    case 'get': {
      const h = await holders(view, op.name);
      return { index, op: op.op, name: op.name, held: h.length > 0, holders: h };
    }
    case 'acquire': {
      const held = await permits(view, op.name);
      if (op.owner !== null) {
        const mine = held.find((p) => p.owner === op.owner && p.slot < op.limit);
        if (mine) return granted(index, op.op, op.name, mine, view, true);
      }
      const taken = new Set(held.map((p) => p.slot));
      for (let slot = 0; slot < op.limit; slot++) {
        if (taken.has(slot)) continue;
        const row = await view.write(LOCKS_NS, keyOf(op.name, slot), JSON.stringify({ owner: op.owner, since: view.now }), op.ttlMs);
        return granted(index, op.op, op.name, { slot, row, owner: op.owner }, view);
      }
      return refused(index, op.op, op.name, 'held', view);
    }
    case 'renew': {
      const p = (await permits(view, op.name)).find((x) => x.row.version === op.token && (op.slot === undefined || x.slot === op.slot));
      if (!p) return refused(index, op.op, op.name, 'lost', view);
      const owner = op.owner ?? p.owner;
      const row = await view.write(LOCKS_NS, p.row.key, JSON.stringify({ owner, since: p.since ?? view.now, renewedAt: view.now }), op.ttlMs);
      return granted(index, op.op, op.name, { slot: p.slot, row, owner }, view);
    }
    case 'release': {
      const p = (await permits(view, op.name)).find((x) => x.row.version === op.token && (op.slot === undefined || x.slot === op.slot));
      if (!p) return refused(index, op.op, op.name, 'lost', view);
      await view.remove(LOCKS_NS, p.row.key);
      return { index, op: op.op, name: op.name, released: true, slot: p.slot, token: op.token, owner: p.owner, guard: null, holders: await holders(view, op.name) };
    }
  }
}

/**
 * Runs a call's lock operations in one unit of work (a call of `get`s only needs none), on
 * `tenant`'s lock rows (default: the default tenant).
 * @returns one result per operation, index-aligned
 * @throws QueenError `shutting_down`, `storage_error`, `write_contention`
 */
export async function runLocks(kv: Kv, ops: readonly LockOp[], tenant?: string): Promise<LockResult[]> {
  const all = async (view: KvView) => {
    const out: LockResult[] = [];
    for (let i = 0; i < ops.length; i++) out.push(await applyLockOp(view, ops[i]!, i));
    return out;
  };
  if (ops.every((o) => o.op === 'get')) return all(kv.reader(tenant));
  // Calls on one lock name (its permits are rows of LOCKS_NS) queue behind each other.
  const t = tenant ?? DEFAULT_TENANT;
  return kv.decided(all, t, ops.filter((o) => o.op !== 'get').map((o) => kvWriteKey(t, LOCKS_NS, o.name)));
}
