/** Unit tests of the per-key first-come, first-served lock (src/util/keyed-lock.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyedLock } from '../../src/util/keyed-lock.js';

/** A promise with its resolver. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => { open = r; });
  return { wait, open };
}

describe('KeyedLock', () => {
  test('callers of one key run one at a time, in arrival order', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const first = gate();
    const a = lock.run(['k'], async () => { order.push('a in'); await first.wait; order.push('a out'); });
    const b = lock.run(['k'], async () => { order.push('b'); });
    const c = lock.run(['k'], async () => { order.push('c'); });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['a in'], 'b and c wait while a holds the key');
    first.open();
    await Promise.all([a, b, c]);
    assert.deepEqual(order, ['a in', 'a out', 'b', 'c']);
    assert.equal(lock.size, 0, 'a key nobody holds is forgotten');
  });

  test('other keys do not wait; no keys runs at once', async () => {
    const lock = new KeyedLock();
    const held = gate();
    const a = lock.run(['x'], () => held.wait);
    let ran = 0;
    await lock.run(['y'], async () => { ran++; });
    await lock.run([], async () => { ran++; });
    assert.equal(ran, 2);
    held.open();
    await a;
  });

  test('callers naming the same keys in opposite orders do not deadlock', async () => {
    const lock = new KeyedLock();
    let done = 0;
    await Promise.all(Array.from({ length: 50 }, (_, i) => lock.run(i % 2 ? ['p', 'q', 'p'] : ['q', 'p'], async () => {
      await new Promise((r) => setImmediate(r));
      done++;
    })));
    assert.equal(done, 50);
    assert.equal(lock.size, 0);
  });

  test('a function that throws lets the key go, and the caller gets its error', async () => {
    const lock = new KeyedLock();
    await assert.rejects(lock.run(['k'], async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await lock.run(['k'], async () => 42), 42);
    assert.equal(lock.size, 0);
  });
});
