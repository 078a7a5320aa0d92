/** Nonces cut from the CSPRNG pool (src/crypto/nonces.ts): fresh, owned by the caller, never repeated. */
import test from 'node:test';
import assert from 'node:assert/strict';
import { POOL_BYTES, randomNonce } from '../../src/crypto/nonces.js';

test('nonces are 12 fresh bytes each, none repeated across several pool refills', () => {
  const seen = new Set<string>();
  const count = Math.ceil((POOL_BYTES / 12) * 5); // five refills
  for (let i = 0; i < count; i++) {
    const n = randomNonce(12);
    assert.equal(n.length, 12);
    const hex = n.toString('hex');
    assert.ok(!seen.has(hex), `nonce ${hex} repeated after ${i} nonces`);
    seen.add(hex);
  }
  assert.equal(seen.size, count);
});

test('a nonce handed out is never changed by later draws or pool refills', () => {
  const c = randomNonce(12);
  const cCopy = Buffer.from(c);
  for (let i = 0; i < POOL_BYTES; i++) randomNonce(12); // refills the pool many times
  assert.deepEqual(c, cCopy, 'a refill overwrote a nonce already handed out');
});

test('the bytes look uniformly random: each bit position is set about half the time', () => {
  const counts = new Array<number>(96).fill(0);
  const n = 4000;
  for (let i = 0; i < n; i++) {
    const b = randomNonce(12);
    for (let bit = 0; bit < 96; bit++) if ((b[bit >> 3]! >> (bit & 7)) & 1) counts[bit]!++;
  }
  // Binomial(4000, 0.5): sd ≈ 31.6; 8 sd either side fails with probability far below 1e-12.
  for (const c of counts) assert.ok(Math.abs(c - n / 2) < 8 * 31.6, `a bit was set ${c} times of ${n}`);
});

test('lengths outside 1 … POOL_BYTES are refused', () => {
  for (const bad of [0, -1, 1.5, POOL_BYTES + 1, Number.NaN]) assert.throws(() => randomNonce(bad), RangeError);
  assert.equal(randomNonce(POOL_BYTES).length, POOL_BYTES);
});
