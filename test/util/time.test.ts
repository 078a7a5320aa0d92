/** Unit tests of the time helpers (src/util/time.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { iso, parseIso } from '../../src/util/time.js';

describe('parseIso', () => {
  test('reads dates and date-times, with or without an offset (none = UTC)', () => {
    assert.equal(parseIso('2020-02-29'), Date.UTC(2020, 1, 29));
    assert.equal(parseIso('2000-02-29'), Date.UTC(2000, 1, 29), 'a leap year by the 400-year rule');
    assert.equal(parseIso('2020-02-29T10:15:30.250Z'), Date.UTC(2020, 1, 29, 10, 15, 30, 250));
    assert.equal(parseIso('2020-02-29T10:15'), Date.UTC(2020, 1, 29, 10, 15));
    assert.equal(parseIso('2020-02-29T10:15:00+02:00'), Date.UTC(2020, 1, 29, 8, 15));
    assert.equal(parseIso(' 2026-12-31 23:59:59 '), Date.UTC(2026, 11, 31, 23, 59, 59));
  });

  test('refuses free text and days a month does not have (Date.parse would move them into the next month)', () => {
    for (const s of ['1', 'yesterday', '2020-13-01', '2020-00-10', '2020-01-00', '2020-02-30T00:00:00Z', '2021-02-29',
      '2020-04-31', '2020-06-31T12:00:00Z', '1900-02-29', '2020-01-01T25:00:00Z', '2020-01-01T23:60:00Z']) {
      assert.equal(parseIso(s), undefined, s);
    }
  });
});

describe('iso', () => {
  test('formats each instant as toISOString does, also when one repeats or alternates with another', () => {
    const a = Date.UTC(2026, 11, 4, 18, 30, 0, 5);
    const b = a + 1;
    for (const ms of [a, a, b, a, b, b, 0, 0, a]) assert.equal(iso(ms), new Date(ms).toISOString(), String(ms));
  });

  test('an invalid instant throws every time, and does not poison the next call', () => {
    assert.throws(() => iso(NaN), RangeError);
    assert.throws(() => iso(NaN), RangeError);
    assert.equal(iso(1), '1970-01-01T00:00:00.001Z');
  });
});
