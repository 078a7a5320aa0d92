/**
 * Ephemeral message ids (docs/ephemeral.md#pop): `e:<epoch hex>:<partition>:<seq>`. The epoch is
 * drawn at process start; a ring's seq starts at `incarnation × 2^28`, where the incarnation is a
 * process-wide counter, so an id is never reused within a process even after a ring is collected
 * and re-created (kept as bigint in the text; the counter itself stays far below 2^53).
 */
import { randomBytes } from 'node:crypto';

/** Seq bases step by this much per ring incarnation. */
export const SEQ_STEP = 1n << 28n;

/** A fresh random 64-bit epoch as 16 hex digits. */
export function newEpoch(): string {
  return randomBytes(8).toString('hex');
}

/** Formats an id. `local` is the seq within the ring incarnation (< 2^28). */
export function formatId(epoch: string, partition: string, incarnation: number, local: number): string {
  // Exact in a double while incarnation × 2^28 + local < 2^53; bigint only past that.
  const seq = incarnation < NUMBER_INCARNATIONS ? String(incarnation * STEP + local) : (BigInt(incarnation) * SEQ_STEP + BigInt(local)).toString();
  return `e:${epoch}:${partition}:${seq}`;
}

/**
 * What every id of one ring incarnation starts with, and the number its seqs add `local` to
 * (undefined past 2^25 incarnations, where {@link formatId} takes the bigint path). Same text as
 * {@link formatId}: `${prefix}${base + local}`.
 */
export function idStem(epoch: string, partition: string, incarnation: number): { prefix: string; base: number | undefined } {
  return { prefix: `e:${epoch}:${partition}:`, base: incarnation < NUMBER_INCARNATIONS ? incarnation * STEP : undefined };
}

/** 2^28 as a number. */
const STEP = Number(SEQ_STEP);
/** Incarnations whose seqs stay below 2^53, so plain numbers carry them exactly. */
const NUMBER_INCARNATIONS = 2 ** 25;

/** A parsed id; undefined when it is not one of ours. */
export interface ParsedId {
  epoch: string;
  partition: string;
  incarnation: number;
  local: number;
}

/**
 * Parses an id: strip `e:`, the epoch up to the first `:`, the seq after the last `:`, the
 * partition in between (it may contain `:`).
 */
export function parseId(id: unknown): ParsedId | undefined {
  if (typeof id !== 'string' || !id.startsWith('e:')) return undefined;
  const rest = id.slice(2);
  const first = rest.indexOf(':');
  const last = rest.lastIndexOf(':');
  if (first <= 0 || last <= first) return undefined;
  const seqText = rest.slice(last + 1);
  if (!/^\d{1,30}$/.test(seqText)) return undefined;
  if (seqText.length <= 15) { // below 10^15 < 2^53: exact as a number
    const n = Number(seqText);
    const incarnation = Math.floor(n / STEP);
    return { epoch: rest.slice(0, first), partition: rest.slice(first + 1, last), incarnation, local: n - incarnation * STEP };
  }
  const seq = BigInt(seqText);
  return { epoch: rest.slice(0, first), partition: rest.slice(first + 1, last), incarnation: Number(seq / SEQ_STEP), local: Number(seq % SEQ_STEP) };
}

/** The epoch of an id that at least starts like one (for `stale` vs `unknown`). */
export function epochOf(id: unknown): string | undefined {
  if (typeof id !== 'string' || !id.startsWith('e:')) return undefined;
  const i = id.indexOf(':', 2);
  return i > 2 ? id.slice(2, i) : undefined;
}

/**
 * Parses an id against this process's `prefix` (`e:<epoch>:`) in one pass: `stale` for an id of
 * another epoch, undefined for one that is not ours; seqs up to 15 digits read without bigint.
 * Same outcomes as {@link epochOf} then {@link parseId}.
 */
export function parseOwnId(id: unknown, prefix: string): ParsedId | 'stale' | undefined {
  if (typeof id !== 'string') return undefined;
  if (!id.startsWith(prefix)) return epochOf(id) !== undefined ? 'stale' : undefined;
  const last = id.lastIndexOf(':');
  const digits = id.length - last - 1;
  if (last < prefix.length || digits < 1 || digits > 15) return parseId(id);
  let n = 0;
  for (let i = last + 1; i < id.length; i++) {
    const c = id.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return undefined;
    n = n * 10 + c;
  }
  const incarnation = Math.floor(n / STEP);
  return { epoch: prefix.slice(2, -1), partition: id.slice(prefix.length, last), incarnation, local: n - incarnation * STEP };
}
