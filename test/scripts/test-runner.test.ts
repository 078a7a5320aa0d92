/**
 * scripts/test.mjs (test/README.md#how-npm-test-runs): the files it starts first are real test
 * files, and the steps it runs in place of `npm run build` and `npm run lint` are still those
 * package.json names (the script refuses to run otherwise; this says so before a whole run).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = fs.readFileSync(`${ROOT}scripts/test.mjs`, 'utf8');

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
    const { failed, passed } = JSON.parse(r.stdout) as { failed: string[]; passed: string[] };
    assert.ok(failed.includes('fails but is todo: todo'), failed.join('; '));
    assert.ok(failed.includes('fails: failure'), failed.join('; '));
    assert.ok(failed.includes('hangs.mjs: file-timeout'), failed.join('; '));
    assert.deepEqual(failed.filter((f) => !f.startsWith('hangs.mjs') && !f.startsWith('never ends')), ['fails but is todo: todo', 'fails: failure']);
    assert.ok(passed.includes('passes') && passed.includes('skipped'), passed.join('; '));
  });
});
