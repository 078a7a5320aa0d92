/** Unit tests of the hot-path array helpers (src/util/arrays.ts). */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { mapPacked } from '../../src/util/arrays.js';

describe('mapPacked', () => {
  test('answers what map answers, with each item and its index, and leaves the source alone', () => {
    const src = [3, 1, 2];
    const seen: [number, number][] = [];
    assert.deepEqual(mapPacked(src, (x, i) => { seen.push([x, i]); return { x: x * 10, i }; }), src.map((x, i) => ({ x: x * 10, i })));
    assert.deepEqual(seen, [[3, 0], [1, 1], [2, 2]]);
    assert.deepEqual(src, [3, 1, 2]);
    assert.deepEqual(mapPacked([], () => 1), []);
  });

  test('answers a packed array of one map from the interpreter and from optimized code', () => {
    // V8's own intrinsics, in a child process: the property is about how the engine stores the
    // result, which only they can see. Feedback is allocated on the first call, so the optimized
    // `produce` inlines `mapPacked`; with `items.map(fn)` as its body the optimized call answers a
    // holey array of another map and both checks fail.
    const arrays = fileURLToPath(new URL('../../src/util/arrays.js', import.meta.url));
    const script = `
      const { mapPacked } = await import(${JSON.stringify(arrays)});
      function produce(a) { return mapPacked(a, (x) => ({ x })); }
      const src = [1, 2, 3];
      const cold = produce(src);
      %PrepareFunctionForOptimization(produce);
      for (let i = 0; i < 100; i++) produce(src);
      %OptimizeFunctionOnNextCall(produce);
      const hot = produce(src);
      console.log(JSON.stringify({ optimized: (%GetOptimizationStatus(produce) & 16) !== 0, coldHoley: %HasHoleyElements(cold), hotHoley: %HasHoleyElements(hot), sameMap: %HaveSameMap(cold, hot) }));
    `;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--no-lazy-feedback-allocation', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), { optimized: true, coldHoley: false, hotHoley: false, sameMap: true });
  });
});
