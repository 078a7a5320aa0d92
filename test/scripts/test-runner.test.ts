/**
 * scripts/test.mjs (test/README.md#how-npm-test-runs): the files it starts first are real test
 * files, and the steps it runs in place of `npm run build` and `npm run lint` are still those
 * package.json names (the script refuses to run otherwise; this says so before a whole run).
 * Results that never reach the runner fail the run (scripts/test-verdict.mjs's ResultLedger), and
 * a test file's stdout is blocking so that forceExit cannot cut it (scripts/test-child-stdout.mjs).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = fs.readFileSync(`${ROOT}scripts/test.mjs`, 'utf8');

/** scripts/test-verdict.mjs's ledger (a plain ES module of scripts/, loaded from the source tree). */
interface Ledger { observe(type: string, d: object): void; lost(): { file: string; missing: string[] }[] }
const { ResultLedger } = (await import(`${ROOT}scripts/test-verdict.mjs`)) as { ResultLedger: new () => Ledger };

describe('scripts/test.mjs', () => {
  it('SLOW_FIRST names only existing test files, each once', () => {
    const list = /const SLOW_FIRST = \[([^\]]*)\]/.exec(SCRIPT)?.[1];
    assert.ok(list, 'SLOW_FIRST not found in scripts/test.mjs');
    const names = [...list.matchAll(/'([^']+)'/g)].map((m) => m[1]!);
    assert.ok(names.length > 0);
    assert.equal(new Set(names).size, names.length, 'a name twice');
    for (const n of names) {
      assert.match(n, /\.test\.js$/);
      assert.ok(fs.existsSync(`${ROOT}test/${n.replace(/\.js$/, '.ts')}`), `${n}: no test/${n.replace(/\.js$/, '.ts')}`);
    }
  });

  it('the build and lint steps it stands in for are package.json\'s', () => {
    const scripts = JSON.parse(fs.readFileSync(`${ROOT}package.json`, 'utf8')).scripts as Record<string, string>;
    assert.equal(scripts.test, 'node scripts/test.mjs');
    for (const name of ['build', 'lint', 'lint:es']) {
      const v = scripts[name]!;
      assert.ok(SCRIPT.includes(JSON.stringify(v)) || SCRIPT.includes(`'${v}'`), `package.json's ${name} (${v}) is not the one scripts/test.mjs stands in for`);
    }
  });

  it('a failing todo test does not fail the run; a real failure does; a file cut by the timeout is told apart', () => {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT; // set for test files; run() in a child that has it refuses to run files
    const r = spawnSync(process.execPath, [`${ROOT}test/fixtures/runner/drive.mjs`, '3000'], { env, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const { failed, passed, lost } = JSON.parse(r.stdout) as { failed: string[]; passed: string[]; lost: { file: string }[] };
    assert.ok(failed.includes('fails but is todo: todo'), failed.join('; '));
    assert.ok(failed.includes('fails: failure'), failed.join('; '));
    assert.ok(failed.includes('hangs.mjs: file-timeout'), failed.join('; '));
    assert.deepEqual(failed.filter((f) => !f.startsWith('hangs.mjs') && !f.startsWith('never ends')), ['fails but is todo: todo', 'fails: failure']);
    assert.ok(passed.includes('passes') && passed.includes('skipped'), passed.join('; '));
    // The file that exited in the middle passed as a whole, exit code 0, as lost results do; the
    // ledger names it and the file with no test, and nothing of the files that reported all.
    assert.ok(passed.includes('exits-early.mjs'), passed.join('; '));
    assert.deepEqual(lost.map((l) => l.file), ['empty.mjs', 'exits-early.mjs']);
  });

  it('the ledger names each enqueued test that got no verdict, once per definition', () => {
    const ledger = new ResultLedger();
    const at = (name: string, line: number, nesting = 0) => ({ file: '/t/a.test.js', name, line, column: 1, nesting });
    ledger.observe('test:enqueue', at('/t/a.test.js', 1)); // the file itself: needs no verdict of its own
    ledger.observe('test:enqueue', at('suite', 2));
    ledger.observe('test:enqueue', at('in a loop', 3, 1));
    ledger.observe('test:enqueue', at('in a loop', 3, 1));
    ledger.observe('test:enqueue', at('last', 9));
    ledger.observe('test:pass', at('in a loop', 3, 1));
    ledger.observe('test:fail', at('suite', 2));
    assert.deepEqual(ledger.lost(), [{ file: '/t/a.test.js', missing: ['in a loop (3:1)', 'last (9:1)'] }]);
    ledger.observe('test:pass', at('in a loop', 3, 1));
    ledger.observe('test:pass', at('last', 9));
    assert.deepEqual(ledger.lost(), []);
    // A file that failed as a whole is judged by that failure, not listed again.
    ledger.observe('test:enqueue', { file: '/t/b.test.js', name: 'cut', line: 1, column: 1, nesting: 0 });
    ledger.observe('test:fail', { file: '/t/b.test.js', name: '/t/b.test.js', line: 1, column: 1, nesting: 0 });
    assert.deepEqual(ledger.lost(), []);
  });

  it('a test file\'s stdout, preloaded with scripts/test-child-stdout.mjs, keeps every byte written before process.exit()', () => {
    const fixture = `${ROOT}test/fixtures/runner/stdout-exit.mjs`;
    const size = 4 * 1024 * 1024;
    const plain = spawnSync(process.execPath, [fixture], { maxBuffer: 2 * size, timeout: 60_000 });
    assert.equal(plain.status, 0);
    assert.ok(plain.stdout.length < size, `without the preload the pipe kept all ${plain.stdout.length} bytes: the fixture no longer shows the loss`);
    const blocking = spawnSync(process.execPath, ['--import', `${ROOT}scripts/test-child-stdout.mjs`, fixture], { maxBuffer: 2 * size, timeout: 60_000 });
    assert.equal(blocking.status, 0);
    assert.equal(blocking.stdout.length, size);
  });
});
