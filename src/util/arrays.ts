/**
 * Array helpers for the push, pop and ack paths (docs/architecture.md#hot-paths). Leaf module.
 */

/**
 * `items.map(fn)` whose result has the same elements kind in every tier of V8.
 *
 * `Array.prototype.map` answers a packed array while it runs as a builtin and a holey one once
 * TurboFan has inlined it into its caller (Node 20, V8 11.3). An optimized consumer that has seen
 * only one of the two deoptimizes ("wrong map") on the first array of the other kind, so each
 * producer that gets optimized throws away the optimized code of the functions that read its
 * arrays. This loop answers a packed array in every tier.
 * @param items the source array (not changed)
 * @param fn called once per item, in order, with the item and its index
 * @returns a new array of `fn`'s results, `items.length` long
 */
export function mapPacked<T, U>(items: readonly T[], fn: (item: T, index: number) => U): U[] {
  const out: U[] = [];
  for (let i = 0; i < items.length; i++) out.push(fn(items[i]!, i));
  return out;
}
