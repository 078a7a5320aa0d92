/**
 * The conformance cases can fail: run against a backend that drops cursor commits
 * (wrong-backend.ts), every case that depends on a commit fails and the others still pass (so the
 * failures come from the dropped commits, not from the harness).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/broker.js';
import { contractCases } from './contract-cases.js';
import { droppingCursorCommits } from './wrong-backend.js';
import { openSqliteBackend } from './sqlite-backend.js';

test('the conformance cases fail on a backend that drops cursor commits', async () => {
  const failed: string[] = [];
  const passed: string[] = [];
  for (const c of contractCases) {
    const b = droppingCursorCommits(openSqliteBackend(path.join(tempDir(), 'data'), 'off'));
    try {
      await c.run(b);
      passed.push(c.name);
    } catch {
      failed.push(c.name);
    } finally {
      await b.close();
    }
  }
  const commitCases = contractCases.filter((c) => c.cursorCommit).map((c) => c.name);
  assert.ok(commitCases.length >= 4, 'the suite has cursor-commit cases');
  assert.deepEqual(failed, commitCases, 'exactly the cursor-commit cases fail');
  assert.equal(passed.length, contractCases.length - commitCases.length);
});
