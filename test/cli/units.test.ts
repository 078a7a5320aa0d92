/**
 * queenctl's pure parts (src/cli/time.ts, output.ts, config.ts): time arguments, jsonpath, `-o`,
 * humanised cells, the config precedence. Mirrors the reference CLI's unit tests (queen-mq/queen:
 * clients/client-cli/internal/timefmt/parse_test.go, internal/output/jsonpath_test.go,
 * render_test.go, internal/config/config_test.go).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from '../../src/cli/config.js';
import { CliError } from '../../src/cli/errors.js';
import { evalPath, humanSeconds, parseFormat, toJson } from '../../src/cli/output.js';
import { parseDurationMs, parseTime } from '../../src/cli/time.js';
import { parseClientJson } from '../../src/util/json.js';

const NOW = Date.parse('2026-05-06T12:00:00Z');

test('time arguments: now, beginning, relative, Unix seconds, RFC 3339, dates; anything else exit 1', () => {
  assert.equal(parseTime('now', NOW), NOW);
  for (const b of ['beginning', 'start', 'earliest']) assert.equal(parseTime(b, NOW), 0);
  assert.equal(parseTime('15m ago', NOW), NOW - 15 * 60_000);
  assert.equal(parseTime('2h', NOW), NOW - 7_200_000);
  assert.equal(parseTime('1d ago', NOW), NOW - 86_400_000);
  assert.equal(parseTime('1w', NOW), NOW - 604_800_000);
  assert.equal(parseTime('1h30m ago', NOW), NOW - 5_400_000);
  assert.equal(parseTime('1714998000', NOW), 1_714_998_000_000);
  assert.equal(parseTime('2026-05-06T10:00:00Z', NOW), Date.parse('2026-05-06T10:00:00Z'));
  assert.equal(parseTime('2026-05-06T10:00:00.250+02:00', NOW), Date.parse('2026-05-06T08:00:00.250Z'));
  assert.equal(parseTime('2026-05-06', NOW), Date.parse('2026-05-06T00:00:00Z'));
  assert.equal(parseTime('2026-05-06 10:00:00', NOW), Date.parse('2026-05-06T10:00:00Z'));
  for (const bad of ['', 'yesterday', '5 parsecs ago', '12', '2026-13-45', '2026-02-30', '2026-04-31T10:00:00Z']) {
    assert.throws(() => parseTime(bad, NOW), (e: unknown) => e instanceof CliError && e.code === 1, bad);
  }
  assert.equal(parseDurationMs('500ms'), 500);
  assert.equal(parseDurationMs('10s'), 10_000);
  assert.equal(parseDurationMs('ten'), undefined);
});

test('jsonpath: keys, indexes, braces; errors are exit 1', () => {
  const doc = { queues: [{ name: 'a', totals: { pending: 3 } }, { name: 'b' }], n: null };
  assert.equal(evalPath(doc, '.queues[0].name'), 'a');
  assert.equal(evalPath(doc, 'queues[1].name'), 'b');
  assert.equal(evalPath(doc, '{.queues[0].totals.pending}'), 3);
  assert.equal(evalPath(doc, '.missing.deeper'), undefined);
  assert.equal(evalPath(doc, '.'), doc);
  assert.deepEqual(evalPath([1, 2], '[1]'), 2);
  for (const bad of ['.queues[5]', '.n[0]', '.queues[x]']) assert.throws(() => evalPath(doc, bad), (e: unknown) => e instanceof CliError && e.code === 1, bad);
});

test('-o values; unknown ones are exit 1', () => {
  assert.deepEqual(parseFormat(undefined), {});
  assert.deepEqual(parseFormat('JSON'), { format: 'json' });
  assert.deepEqual(parseFormat('jsonl'), { format: 'ndjson' });
  assert.deepEqual(parseFormat('jsonpath=.a.b'), { format: 'jsonpath', expr: '.a.b' });
  assert.deepEqual(parseFormat('wide'), { format: 'wide' });
  for (const bad of ['xml', 'go-template=x']) assert.throws(() => parseFormat(bad), (e: unknown) => e instanceof CliError && e.code === 1, bad);
});

test('cells and JSON output: durations humanised, exact numbers kept', () => {
  assert.equal(humanSeconds(0), '0s');
  assert.equal(humanSeconds(42), '42s');
  assert.equal(humanSeconds(125), '2m5s');
  assert.equal(humanSeconds(3720), '1h2m');
  assert.equal(humanSeconds(90000), '1d1h');
  assert.equal(humanSeconds(null), '-');
  const v = parseClientJson('{"a":12345678901234567890,"b":[1.0,"x\\"y"],"c":{}}');
  assert.equal(toJson(v), '{"a":12345678901234567890,"b":[1.0,"x\\"y"],"c":{}}');
  assert.equal(toJson(v, true), '{\n  "a": 12345678901234567890,\n  "b": [\n    1.0,\n    "x\\"y"\n  ],\n  "c": {}\n}');
});

test('config precedence: file < $QUEEN_CONTEXT < --context < $QUEEN_SERVER/$QUEEN_TOKEN < flags', () => {
  const cfg = {
    'current-context': 'a',
    contexts: [{ name: 'a', server: 'http://a', 'token-ref': 'literal:ta' }, { name: 'b', server: 'http://b/', 'token-ref': 'literal:tb' }],
  };
  const saved = { ctx: process.env.QUEEN_CONTEXT, srv: process.env.QUEEN_SERVER, tok: process.env.QUEEN_TOKEN };
  try {
    delete process.env.QUEEN_CONTEXT;
    delete process.env.QUEEN_SERVER;
    delete process.env.QUEEN_TOKEN;
    assert.deepEqual(resolve(cfg, {}), { name: 'a', server: 'http://a', token: 'ta', insecure: false });
    process.env.QUEEN_CONTEXT = 'b';
    assert.deepEqual(resolve(cfg, {}), { name: 'b', server: 'http://b', token: 'tb', insecure: false });
    assert.equal(resolve(cfg, { context: 'a' }).server, 'http://a');
    process.env.QUEEN_SERVER = 'http://env';
    process.env.QUEEN_TOKEN = 'tenv';
    assert.deepEqual(resolve(cfg, { context: 'a' }), { name: 'a', server: 'http://env', token: 'tenv', insecure: false });
    assert.deepEqual(resolve(cfg, { server: 'http://flag', token: 'tflag' }), { name: 'b', server: 'http://flag', token: 'tflag', insecure: false });
    assert.throws(() => resolve(cfg, { context: 'zzz' }), (e: unknown) => e instanceof CliError && e.code === 1);
    delete process.env.QUEEN_SERVER;
    delete process.env.QUEEN_CONTEXT;
    assert.throws(() => resolve({}, {}), (e: unknown) => e instanceof CliError && e.code === 1);
    assert.throws(() => resolve({ 'current-context': 'k', contexts: [{ name: 'k', server: 'http://k', 'token-ref': 'keychain://k' }] }, {}), (e: unknown) => e instanceof CliError && e.code === 3);
  } finally {
    for (const [k, v] of [['QUEEN_CONTEXT', saved.ctx], ['QUEEN_SERVER', saved.srv], ['QUEEN_TOKEN', saved.tok]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});
