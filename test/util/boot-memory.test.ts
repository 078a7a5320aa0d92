/**
 * The boot hold of src/util/boot-memory.ts, seen from outside: a broker started with V8's
 * `--trace-opt` (which prints a `completed optimizing` line per function Turbofan compiles) prints
 * none before its listening line, and prints them once it works under load, so the hold covers
 * the boot and ends with it. A compiler flag the operator gave is kept: with `--no-opt` no
 * function is optimised, however long the broker works.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { LISTENING_MSG, startBroker, type BrokerHandle } from '../helpers/broker.js';
import { call, uniqueName } from '../helpers/http.js';
import { waitFor } from '../helpers/wait.js';

const OPTIMIZED = /completed optimizing/g;
const brokers: BrokerHandle[] = [];
after(async () => { await Promise.all(brokers.map((b) => b.stop())); });

/** The number of `completed optimizing` lines before and after the listening line. */
function optimized(b: BrokerHandle): { boot: number; serving: number } {
  const out = b.output();
  const at = out.indexOf(LISTENING_MSG);
  assert.ok(at >= 0, 'the listening line is in the output');
  return { boot: out.slice(0, at).match(OPTIMIZED)?.length ?? 0, serving: out.slice(at).match(OPTIMIZED)?.length ?? 0 };
}

/** Pushes `n` single-message requests to `queue`, one after the other. */
async function push(b: BrokerHandle, queue: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await call(b.url, 'POST', '/api/v1/push', { items: [{ queue, payload: { i } }] });
    assert.equal(r.status, 201, r.text);
  }
}

let pushesToOptimize = 0;

test('nothing is optimised during the boot; functions are optimised once the broker serves', async () => {
  const b = await startBroker({ nodeArgs: ['--trace-opt'] });
  brokers.push(b);
  assert.equal(optimized(b).boot, 0, 'no function optimised before the listening line');
  const queue = uniqueName('jit');
  await waitFor(async () => {
    await push(b, queue, 50);
    pushesToOptimize += 50;
    return optimized(b).serving > 0;
  }, { what: 'a function optimised while serving pushes', timeoutMs: 60_000, intervalMs: 0 });
});

test('an operator --no-opt is kept after the boot', async () => {
  const b = await startBroker({ nodeArgs: ['--trace-opt', '--no-opt'] });
  brokers.push(b);
  // Three times the pushes that got functions optimised without the flag (at least 500).
  await push(b, uniqueName('nojit'), Math.max(500, 3 * pushesToOptimize));
  assert.deepEqual(optimized(b), { boot: 0, serving: 0 });
});
