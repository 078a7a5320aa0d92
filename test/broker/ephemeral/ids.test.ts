/**
 * Ephemeral ids (docs/ephemeral.md#pop): the number fast path and the bigint path format and parse
 * the same ids, and a round trip gives back the partition, incarnation and local seq.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { epochOf, formatId, idStem, parseId, parseOwnId, SEQ_STEP } from '../../../src/broker/ephemeral/ids.js';

describe('ephemeral ids', () => {
  test('round trip on both sides of the 2^53 boundary, partition with colons kept', () => {
    for (const [incarnation, local] of [[0, 0], [1, 5], [123_456, 2 ** 28 - 1], [2 ** 25 - 1, 2 ** 28 - 1], [2 ** 25, 0], [2 ** 30 + 7, 99]] as const) {
      const id = formatId('00ff00ff00ff00ff', 'a:b', incarnation, local);
      const seq = BigInt(incarnation) * SEQ_STEP + BigInt(local);
      assert.equal(id, `e:00ff00ff00ff00ff:a:b:${seq}`, 'the text is the exact seq');
      const stem = idStem('00ff00ff00ff00ff', 'a:b', incarnation);
      if (stem.base !== undefined) assert.equal(stem.prefix + String(stem.base + local), id, 'the stem gives the same text');
      assert.deepEqual(parseId(id), { epoch: '00ff00ff00ff00ff', partition: 'a:b', incarnation, local });
    }
  });

  test('not ours → undefined', () => {
    for (const id of ['x', 'e:', 'e:ab', 'e:ab:p:', 'e:ab:p:12a', 42, null]) assert.equal(parseId(id), undefined, String(id));
  });

  test('parseOwnId agrees with epochOf then parseId', () => {
    const prefix = 'e:00ff00ff00ff00ff:';
    const ids: unknown[] = ['x', 'e:', 'e::p:1', 'e:00ff00ff00ff00ff:', 'e:00ff00ff00ff00ff:5', 'e:00ff00ff00ff00ff::5', 'e:00ff00ff00ff00ff:p:', 'e:00ff00ff00ff00ff:p:1x',
      'e:00ff00ff00ff00ff:a:b:123456789012345', 'e:00ff00ff00ff00ff:p:1234567890123456789', 'e:1111:p:1', 'e:1111:', 7, undefined,
      formatId('00ff00ff00ff00ff', 'Default', 3, 17)];
    for (const id of ids) {
      const epoch = epochOf(id);
      const expected = epoch !== undefined && epoch !== '00ff00ff00ff00ff' ? 'stale' : parseId(id);
      assert.deepEqual(parseOwnId(id, prefix), expected, String(id));
    }
  });
});
