/**
 * Delivery counts of a consumer group's cursor, O(1) per cursor row (docs/storage.md#delivery-counts):
 * how many times each offset at or above the committed offset has been delivered to the group since
 * its position there was last set, as a step function of at most two levels:
 *
 *   [committed, attemptSplit)        delivered `deliveryCount` times
 *   [attemptSplit, deliveredMax)     delivered `deliveryCountFromSplit` times
 *   [deliveredMax, ∞)                never delivered
 *
 * A claim always starts at the committed offset (the cursor only moves forward between claims,
 * except by a seek, which clears the counts), so the counts never grow with the offset, and a claim
 * adds one to a prefix of them. When that leaves three levels, two adjacent levels are merged into
 * the higher count (the pair that over-counts the fewest deliveries, never the level of this
 * claim's first deliveries): the counts stay an upper bound of the truth, exact whenever the
 * unconsumed messages have at most two distinct delivery counts, and `deliveredMax` (the "never
 * delivered" boundary) is always exact, hand-backs included: an attempt of 1 is a first delivery.
 *
 * The PostgreSQL hot path states {@link countDelivery} in SQL (`queen.count_delivery`, schema.ts);
 * the two are compared on random inputs (test/storage/attempts-sql.test.ts).
 */

/** A cursor's delivery counts (the fields of the cursor row, see the module comment). */
export interface DeliveryCounts {
  /** Deliveries of each offset in [committed offset, `attemptSplit`). */
  deliveryCount: number;
  /** Where the count drops from `deliveryCount` to `deliveryCountFromSplit`. */
  attemptSplit: number;
  /** Deliveries of each offset in [`attemptSplit`, `deliveredMax`). */
  deliveryCountFromSplit: number;
  /** Exclusive end of every offset delivered since the position was set (0 = none). */
  deliveredMax: number;
}

/**
 * The delivery attempt of each message of a claimed batch, this delivery included: `attempt` below
 * offset `upTo`, `thenAttempt` from there below `thenUpTo`, 1 (a first delivery) above.
 */
export interface BatchAttempts {
  upTo: number;
  attempt: number;
  thenUpTo: number;
  thenAttempt: number;
}

/** Counts of a cursor nothing was delivered from (a new cursor, or one a seek set). */
export const NO_DELIVERIES: Readonly<DeliveryCounts> = { deliveryCount: 0, attemptSplit: 0, deliveryCountFromSplit: 0, deliveredMax: 0 };

/** The attempt of the message at `offset` in a batch claimed with `b`. */
export function attemptOf(b: BatchAttempts, offset: number): number {
  return offset < b.upTo ? b.attempt : offset < b.thenUpTo ? b.thenAttempt : 1;
}

/**
 * The attempts of a batch about to be delivered from offset `lo` (the committed offset, or the
 * log's first offset when retention removed what it pointed at), from the counts before it.
 */
export function batchAttempts(c: Readonly<DeliveryCounts>, lo: number): BatchAttempts {
  const h = Math.max(c.deliveredMax, lo);
  const s = Math.min(Math.max(c.attemptSplit, lo), h);
  return { upTo: s, attempt: c.deliveryCount + 1, thenUpTo: h, thenAttempt: c.deliveryCountFromSplit + 1 };
}

/** Levels of a step function from `lo`: ends[i] is the exclusive end of level i, counts[i] its count. */
interface Levels {
  ends: number[];
  counts: number[];
}

/** Appends the level [previous end, end) with `count` when not empty, joining an equal neighbour. */
function append(l: Levels, lo: number, end: number, count: number): void {
  const n = l.ends.length;
  if (end <= (n > 0 ? l.ends[n - 1]! : lo)) return;
  if (n > 0 && l.counts[n - 1] === count) l.ends[n - 1] = end;
  else {
    l.ends.push(end);
    l.counts.push(count);
  }
}

/**
 * Writes `l` (at most three levels from `lo`, counts not growing) back into `c`, merging two levels
 * when there are three: the pair whose merge over-counts the fewest deliveries (level i+1 merged
 * into level i is over-counted by the difference, over its length), except that a third level of
 * first deliveries (`keepLast`) is never merged, so that a take-back finds it whole.
 */
function store(c: DeliveryCounts, lo: number, l: Levels, keepLast = false): void {
  let { ends, counts } = l;
  if (ends.length === 3) {
    const cost12 = (counts[0]! - counts[1]!) * (ends[1]! - ends[0]!);
    const cost23 = (counts[1]! - counts[2]!) * (ends[2]! - ends[1]!);
    [ends, counts] = keepLast || cost12 <= cost23
      ? [[ends[1]!, ends[2]!], [counts[0]!, counts[2]!]]
      : [[ends[0]!, ends[2]!], [counts[0]!, counts[1]!]];
  }
  const n = ends.length;
  c.deliveryCount = n > 0 ? counts[0]! : 0;
  c.attemptSplit = n > 0 ? ends[0]! : lo;
  c.deliveryCountFromSplit = n > 1 ? counts[1]! : 0;
  c.deliveredMax = n > 0 ? ends[n - 1]! : lo;
}

/**
 * Counts the delivery of [`lo`, `end`) in `c` (in place): one more for each of those offsets.
 * @param lo the first offset delivered (the committed offset, see {@link batchAttempts})
 * @param end exclusive end of the delivered batch, above `lo`
 */
export function countDelivery(c: DeliveryCounts, lo: number, end: number): void {
  const h = Math.max(c.deliveredMax, lo);
  const s = Math.min(Math.max(c.attemptSplit, lo), h);
  const a = c.deliveryCount;
  const b = c.deliveryCountFromSplit;
  const l: Levels = { ends: [], counts: [] };
  if (end <= s) {
    append(l, lo, end, a + 1);
    append(l, lo, s, a);
    append(l, lo, h, b);
  } else if (end <= h) {
    append(l, lo, s, a + 1);
    append(l, lo, end, b + 1);
    append(l, lo, h, b);
  } else {
    append(l, lo, s, a + 1);
    append(l, lo, h, b + 1);
    append(l, lo, end, 1);
  }
  store(c, lo, l, end > h);
}

/**
 * Takes back the delivery of [`lo`, `end`) that {@link countDelivery} counted last (a claim
 * nobody received): one less for each level inside it. A level that reaches past `end` (two
 * levels were merged over it) keeps its count, so the counts stay an upper bound; levels left at
 * zero become "never delivered" again.
 */
export function takeBackDelivery(c: DeliveryCounts, lo: number, end: number): void {
  const h = Math.max(c.deliveredMax, lo);
  const s = Math.min(Math.max(c.attemptSplit, lo), h);
  const l: Levels = { ends: [], counts: [] };
  const less = (levelEnd: number, count: number) => (levelEnd <= end ? count - 1 : count);
  const first = less(s, c.deliveryCount);
  const second = less(h, c.deliveryCountFromSplit);
  if (s > lo && first > 0) append(l, lo, s, first);
  if (h > s && second > 0 && (s <= lo || first > 0)) append(l, lo, h, second);
  store(c, lo, l);
}

/** Forgets every delivery (in place): the group's position was set anew (a seek, or moved back). */
export function clearDeliveries(c: DeliveryCounts): void {
  c.deliveryCount = 0;
  c.attemptSplit = 0;
  c.deliveryCountFromSplit = 0;
  c.deliveredMax = 0;
}
