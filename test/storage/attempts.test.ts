/**
 * The delivery counts of a cursor (src/storage/attempts.ts) against an exact model that keeps one
 * count per offset: random walks of claims of random sizes, acks, hand-backs and seeks. Every
 * delivered message is told an attempt never below its true number of deliveries, the "never
 * delivered" boundary is exact, and a walk whose unconsumed messages never had more than two
 * distinct delivery counts is told exactly the truth.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  attemptOf, batchAttempts, clearDeliveries, countDelivery, NO_DELIVERIES, takeBackDelivery, type DeliveryCounts,
} from '../../src/storage/attempts.js';

/** A small deterministic generator (mulberry32): a failing walk is replayed from its number. */
function rng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** The count the state implies for offset `x` at or above `committed`. */
function implied(c: DeliveryCounts, committed: number, x: number): number {
  return attemptOf(batchAttempts(c, committed), x) - 1;
}

interface Walk {
  /** Every message was told exactly its number of deliveries. */
  exact: boolean;
  /** The truth never had more than two distinct positive counts beyond the committed offset. */
  twoLevels: boolean;
  claims: number;
}

/** One random walk from `seed`; throws (assert) on an under-count or a wrong "never delivered" boundary. */
function walk(seed: number, steps = 200): Walk {
  const r = rng(seed);
  const c: DeliveryCounts = { ...NO_DELIVERIES };
  let truth: number[] = [];
  let committed = 0;
  let head = 8;
  let last: { lo: number; end: number } | undefined;
  /** The last claimed batch an ack may still move within (the cursor moves forward only). */
  let lastBatch: { lo: number; end: number } | undefined;
  const out: Walk = { exact: true, twoLevels: true, claims: 0 };
  for (let step = 0; step < steps; step++) {
    const op = r(10);
    const at = `seed ${seed} step ${step}`;
    const claimed = last;
    last = undefined; // a hand-back only follows its claim at once
    if (op < 5) {
      const lo = committed;
      const end = Math.min(head, lo + 1 + r(6));
      if (end <= lo) {
        head += 1 + r(6);
        continue;
      }
      const b = batchAttempts(c, lo);
      for (let x = lo; x < end; x++) {
        truth[x] = (truth[x] ?? 0) + 1;
        const told = attemptOf(b, x);
        assert.ok(told >= truth[x]!, `${at}: offset ${x} delivered ${truth[x]} times, told ${told}`);
        if (told !== truth[x]) out.exact = false;
      }
      countDelivery(c, lo, end);
      last = { lo, end };
      lastBatch = last;
      out.claims++;
    } else if (op === 5 && claimed) {
      takeBackDelivery(c, claimed.lo, claimed.end);
      for (let x = claimed.lo; x < claimed.end; x++) truth[x]! -= 1;
      lastBatch = undefined;
    } else if (op < 8 && lastBatch) {
      committed = lastBatch.lo + r(lastBatch.end - lastBatch.lo + 1); // an ack (all, part, or a nack rewinding within the batch)
      lastBatch = undefined;
    } else if (op === 8) {
      head += 1 + r(6);
    } else if (op === 9 && r(4) === 0) {
      committed = r(head + 1); // a seek, backwards or forwards
      clearDeliveries(c);
      truth = [];
      lastBatch = undefined;
    }
    const levels = new Set<number>();
    for (let x = committed; x < head + 8; x++) {
      const t = truth[x] ?? 0;
      const f = implied(c, committed, x);
      assert.ok(f >= t, `${at}: offset ${x} delivered ${t} times, counted ${f}`);
      assert.equal(f === 0, t === 0, `${at}: offset ${x} delivered ${t} times, counted ${f}: "never delivered" must be exact`);
      if (t > 0) levels.add(t);
    }
    if (levels.size > 2) out.twoLevels = false;
  }
  return out;
}

describe('delivery counts of a cursor', () => {
  test('the probe: 6 delivered, 2 redelivered and acked, the other 4 are on their second delivery', () => {
    const c: DeliveryCounts = { ...NO_DELIVERIES };
    assert.equal(attemptOf(batchAttempts(c, 0), 0), 1);
    countDelivery(c, 0, 6);
    const two = batchAttempts(c, 0);
    assert.deepEqual([0, 1].map((x) => attemptOf(two, x)), [2, 2]);
    countDelivery(c, 0, 2);
    const rest = batchAttempts(c, 2); // acked up to 2
    assert.deepEqual([2, 3, 4, 5, 6].map((x) => attemptOf(rest, x)), [2, 2, 2, 2, 1]);
  });

  test('a hand-back restores the counts before the claim; after a merge, an upper bound with first deliveries exact', () => {
    const c: DeliveryCounts = { ...NO_DELIVERIES };
    countDelivery(c, 0, 6);
    countDelivery(c, 0, 9);
    takeBackDelivery(c, 0, 9);
    assert.deepEqual([0, 5, 6, 8].map((x) => implied(c, 0, x)), [1, 1, 0, 0], 'the claim of [0, 9) as if it never happened');
    countDelivery(c, 0, 2); // [0,2) twice, [2,6) once
    countDelivery(c, 0, 9); // three levels: [0,2) 3, [2,6) 2, [6,9) 1, two of them merged
    assert.deepEqual([0, 2, 6, 8, 9].map((x) => implied(c, 0, x)), [3, 3, 1, 1, 0], '[2,6) counted high, the first deliveries exact');
    takeBackDelivery(c, 0, 9);
    assert.deepEqual([0, 2, 5, 6, 8].map((x) => implied(c, 0, x)), [2, 2, 2, 0, 0], 'never below the truth (2, 1, 1, 0, 0); [6,9) never delivered again');
  });

  test('random walks: never an under-count, the "never delivered" boundary exact, exact while two levels suffice', () => {
    let exactWalks = 0;
    let twoLevelWalks = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const w = walk(seed, 5 + (seed % 80));
      if (w.twoLevels) {
        twoLevelWalks++;
        assert.ok(w.exact, `seed ${seed}: two levels at most, yet a message was told more than its deliveries`);
      }
      if (w.exact) exactWalks++;
    }
    // The walks cover both kinds (so the exactness assertion above is not vacuous).
    assert.ok(twoLevelWalks > 100 && twoLevelWalks < 2900, `${twoLevelWalks} walks kept to two levels`);
    assert.ok(exactWalks > twoLevelWalks, `${exactWalks} exact walks`);
  });
});
