/** Unit tests of the lossless client-JSON helpers (src/util/json.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { controlNumber, hasInexactNumber, parseClientJson, RawJson, scanJsonText, stringifyClientJson } from '../../src/util/json.js';

describe('hasInexactNumber', () => {
  test('flags every number whose text a JS number would alter', () => {
    for (const t of ['12345678901234567890', '9007199254740993', '1e400', '-0', '1.0', '1e2', '1E-400',
      '0.1000000000000000055511151231257827', '[1,2,1.50]', '{"a":{"b":[-0.0]}}']) {
      assert.equal(hasInexactNumber(t), true, t);
    }
  });
  test('leaves plain numbers and digits inside strings on the fast path', () => {
    for (const t of ['1', '-12', '1.5', '9007199254740991', '1e+21', '{"a":[1,2.25,-3]}',
      '{"at":"2024-01-05T10:00:00.000Z","id":"0190-00ab","s":"1.0 \\" 1e400"}']) {
      assert.equal(hasInexactNumber(t), false, t);
    }
  });
});

describe('scanJsonText', () => {
  test('measures depth outside strings, in the same pass', () => {
    assert.deepEqual(scanJsonText('[[1]]', 2), { tooDeep: false, inexactNumber: false });
    assert.equal(scanJsonText('[[[1]]]', 2).tooDeep, true);
    assert.equal(scanJsonText('["[[[[[", {"a":"}}}}"}]', 2).tooDeep, false);
    assert.equal(scanJsonText('[["\\"],[""[[["]]', 2).tooDeep, false);
    assert.deepEqual(scanJsonText('{"a":[1.0]}', 5), { tooDeep: false, inexactNumber: true });
  });

  test('a quote after an even run of backslashes closes the string; after an odd run it does not', () => {
    assert.equal(scanJsonText('["a\\\\", [[1]]]', 2).tooDeep, true); // "a\\" closed: [[1]] is structure
    assert.equal(scanJsonText('["a\\"", [[1]]]', 2).tooDeep, true); // "a\"" closed after the escaped quote
    assert.equal(scanJsonText('["a\\\\\\"[[[[", 1]', 1).tooDeep, false); // "a\\\"[[[[" is one string
    assert.equal(scanJsonText('["\\\\", 1.0]', 5).inexactNumber, true);
    assert.equal(scanJsonText('["\\", 1.0]', 5).inexactNumber, false); // unterminated: 1.0 is inside the string
  });

  test('integers take the short path without changing the verdict: 0, -0, leading zeros, 15 and 16 digits', () => {
    for (const [t, inexact] of [['0', false], ['-0', true], ['-1', false], ['007', true], ['999999999999999', false],
      ['-999999999999999', false], ['9007199254740993', true], ['1000000000000000', false], ['12345678901234567890', true]] as const) {
      assert.equal(scanJsonText(`[${t}]`, 5).inexactNumber, inexact, t);
    }
  });

  test('agrees with a parse-based oracle on random JSON with escapes, brackets and digits inside strings', () => {
    // Deterministic generator (no Math.random: a failure reproduces).
    let seed = 0x2f6b1d;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = ['a', '"', '\\', '[', ']', '{', '}', '1.0', '-0', '9', ' ', ',', ':', 'é', '😀'];
    const str = (): string => JSON.stringify(Array.from({ length: rnd(8) }, () => pieces[rnd(pieces.length)]).join(''));
    const exact = ['0', '-3', '12', '2.25', '1e+21', '-7.5', '123456789012345'];
    const inexact = ['1.0', '-0', '1e2', '9007199254740993', '1E400', '0.50', '-0.0'];
    // Returns [text, depth, has an inexact number].
    const value = (d: number): [string, number, boolean] => {
      const k = d > 6 ? rnd(3) : rnd(6);
      if (k === 0) return [str(), 0, false];
      if (k === 1) return [exact[rnd(exact.length)]!, 0, false];
      if (k === 2) return rnd(8) === 0 ? [inexact[rnd(inexact.length)]!, 0, true] : ['null', 0, false];
      const parts = Array.from({ length: rnd(4) }, () => value(d + 1));
      const depth = 1 + Math.max(0, ...parts.map((p) => p[1]));
      const bad = parts.some((p) => p[2]);
      if (k === 3) return [`[${parts.map((p) => p[0]).join(', ')}]`, depth, bad];
      return [`{${parts.map((p) => `${str()}: ${p[0]}`).join(',')}}`, depth, bad];
    };
    for (let i = 0; i < 3000; i++) {
      const [text, depth, bad] = value(0);
      JSON.parse(text); // the generator writes valid JSON
      assert.deepEqual(scanJsonText(text, depth), { tooDeep: false, inexactNumber: bad }, text);
      if (depth > 0) assert.equal(scanJsonText(text, depth - 1).tooDeep, true, text);
    }
  });
});

describe('parseClientJson', () => {
  test('keeps plain values identical to JSON.parse and inexact numbers as RawJson', () => {
    assert.deepEqual(parseClientJson('{"a":[1,"x",null,true]}'), { a: [1, 'x', null, true] });
    const v = parseClientJson('{"id":12345678901234567890,"n":5,"f":1.0}') as Record<string, unknown>;
    assert.ok(v.id instanceof RawJson);
    assert.equal((v.id as RawJson).text, '12345678901234567890');
    assert.equal(v.n, 5);
    assert.equal((v.f as RawJson).text, '1.0');
  });
  test('`__proto__` is an own key and duplicate keys keep the last value, on both paths', () => {
    for (const text of ['{"__proto__":{"x":1},"a":1,"a":2}', '{"__proto__":{"x":1.0},"a":1,"a":2}']) {
      const v = parseClientJson(text) as Record<string, unknown>;
      assert.equal(Object.getPrototypeOf(v), Object.prototype, text);
      assert.ok(Object.prototype.hasOwnProperty.call(v, '__proto__'), text);
      assert.equal(v.a, 2, text);
    }
  });
  test('bad JSON throws JSON.parse\'s SyntaxError on both paths', () => {
    assert.throws(() => parseClientJson('{"a":1'), SyntaxError);
    assert.throws(() => parseClientJson('{"a":1.0'), SyntaxError);
  });
});

describe('stringifyClientJson', () => {
  test('splices RawJson text verbatim and is plain JSON.stringify otherwise', () => {
    const v = { a: new RawJson('{"n":1.0,"big":12345678901234567890}'), b: [new RawJson('-0'), 1], c: 'x' };
    assert.equal(stringifyClientJson(v), '{"a":{"n":1.0,"big":12345678901234567890},"b":[-0,1],"c":"x"}');
    assert.equal(stringifyClientJson({ a: [1, 'two'] }), '{"a":[1,"two"]}');
    assert.equal(stringifyClientJson(new RawJson('1e400')), '1e400');
    const round = parseClientJson('{"x":[1.0,2,{"y":9007199254740993}],"s":"1.0"}');
    assert.equal(stringifyClientJson(round), '{"x":[1.0,2,{"y":9007199254740993}],"s":"1.0"}');
  });
  test('a client string containing the placeholder text survives (a colliding tag is retried)', () => {
    const tags = ['TAG_', 'TAG_', 'FRESH_'];
    let i = 0;
    const source = () => tags[Math.min(i++, tags.length - 1)]!;
    const v = { s: 'TAG_0', t: '"TAG_0"', raw: new RawJson('1.0') };
    assert.equal(stringifyClientJson(v, source), '{"s":"TAG_0","t":"\\"TAG_0\\"","raw":1.0}');
    assert.equal(i, 3, 'two colliding attempts, then a fresh tag');
  });
  test('many RawJson values (two-digit placeholder numbers) are spliced each in its own place', () => {
    const raws = Array.from({ length: 12 }, (_, i) => `${i}.0`);
    const v = { list: raws.map((t) => ({ n: new RawJson(t), s: 'x' })) };
    assert.equal(stringifyClientJson(v), JSON.stringify({ list: raws.map(() => ({ n: 'N', s: 'x' })) }).replace(/"N"/g, () => raws.shift()!));
  });
  test('the tag in client text, before or after the placeholders, makes a retry', () => {
    for (const clientText of ['xTAG_0', 'TAG_1', 'TAG_0"']) {
      for (const clientFirst of [false, true]) {
        const tags = ['TAG_', 'FRESH_'];
        let i = 0;
        const source = () => tags[Math.min(i++, tags.length - 1)]!;
        const v = clientFirst ? { s: clientText, raw: new RawJson('1.0') } : { raw: new RawJson('1.0'), s: clientText };
        const want = clientFirst ? `{"s":${JSON.stringify(clientText)},"raw":1.0}` : `{"raw":1.0,"s":${JSON.stringify(clientText)}}`;
        assert.equal(stringifyClientJson(v, source), want, clientText);
        assert.equal(i, 2, `${clientText}: one colliding attempt, then a fresh tag`);
      }
    }
  });
  test('outside the serializer a RawJson degrades to its parsed value (loggers)', () => {
    assert.equal(JSON.stringify({ a: new RawJson('{"b":1}') }), '{"a":{"b":1}}');
  });
});

describe('controlNumber', () => {
  test('exact safe integers only', () => {
    assert.equal(controlNumber(5), 5);
    assert.equal(controlNumber('5'), '5');
    assert.equal(controlNumber(new RawJson('1.0')), 1);
    assert.equal(controlNumber(new RawJson('1e2')), 100);
    assert.equal(controlNumber(new RawJson('1500e-2')), 15);
    for (const t of ['9007199254740993', '0.99999999999999999999', '1e400', '1.5e0', '1E-400']) {
      assert.ok(Number.isNaN(controlNumber(new RawJson(t))), t);
    }
  });
});
