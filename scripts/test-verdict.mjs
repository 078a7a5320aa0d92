/**
 * What node:test's `run()` events mean for the verdict of `npm test` (scripts/test.mjs).
 */

/**
 * What one node:test `test:fail` event means for the verdict:
 * - `todo`: a test marked todo failed; it is reported but does not fail the run, as node:test's
 *   own exit code treats it;
 * - `file-timeout`: a whole test file was cut by the file timeout (the runner retries it once);
 * - `failure`: anything else fails the run.
 * @param {{ todo?: unknown, nesting?: number, name?: string, file?: string, details?: { error?: { failureType?: string } } }} d
 *   the event's data (node:test `run()` stream)
 * @returns {'todo' | 'file-timeout' | 'failure'}
 */
export function failureKind(d) {
  if (d.todo !== undefined && d.todo !== false) return 'todo';
  if (d.nesting === 0 && d.name === d.file && d.details?.error?.failureType === 'testTimeoutFailure') return 'file-timeout';
  return 'failure';
}

/**
 * Accounts for every test a run's files announced: each test (or suite) that a file enqueued must
 * reach a verdict (`test:pass`, skips and todos included, or `test:fail`), and each file must
 * report at least one test. A file whose process exits before its last events reached the parent
 * (nodejs/node#64833, see scripts/test-child-stdout.mjs) would otherwise pass with fewer tests
 * than it has, with exit code 0. A file that failed as a whole (crash, file timeout) is judged by
 * that failure instead, so its unanswered tests are not listed again.
 *
 * A test is known by its file, nesting, name, line and column; one defined twice at the same place
 * (a loop) is counted twice.
 */
export class ResultLedger {
  /** file → (test key → tests enqueued without a verdict yet) */
  #open = new Map();
  /** file → verdicts received for its tests (not the file itself) */
  #verdicts = new Map();
  /** files that failed as a whole */
  #fileFailed = new Set();

  /**
   * Feeds one event of a node:test `run()` stream.
   * @param {string} type the event's type (`test:enqueue`, `test:pass`, …; others are ignored)
   * @param {{ file?: string, nesting?: number, name?: string, line?: number, column?: number }} d the event's data
   */
  observe(type, d) {
    if (d === undefined || typeof d.file !== 'string' || typeof d.name !== 'string') return;
    const isFile = d.nesting === 0 && d.name === d.file;
    if (type === 'test:enqueue') {
      if (!this.#verdicts.has(d.file)) this.#verdicts.set(d.file, 0);
      if (isFile) return;
      const open = this.#open.get(d.file) ?? new Map();
      this.#open.set(d.file, open);
      const key = ResultLedger.#key(d);
      open.set(key, (open.get(key) ?? 0) + 1);
    } else if (type === 'test:pass' || type === 'test:fail') {
      if (isFile) {
        if (type === 'test:fail') this.#fileFailed.add(d.file);
        return;
      }
      this.#verdicts.set(d.file, (this.#verdicts.get(d.file) ?? 0) + 1);
      const open = this.#open.get(d.file);
      const key = ResultLedger.#key(d);
      const n = open?.get(key) ?? 0;
      if (n > 1) open.set(key, n - 1);
      else open?.delete(key);
    }
  }

  /**
   * The files whose results went missing, with what is missing: the tests enqueued that got no
   * verdict (`name (line:column)`), or `no test reported` for a file that reported none.
   * @returns {{ file: string, missing: string[] }[]} sorted by file; empty when all is accounted for
   */
  lost() {
    const out = [];
    for (const [file, verdicts] of [...this.#verdicts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (this.#fileFailed.has(file)) continue;
      const missing = [];
      for (const [key, n] of this.#open.get(file) ?? []) {
        const [, name, line, column] = key.split('\0');
        for (let i = 0; i < n; i++) missing.push(`${name} (${line}:${column})`);
      }
      if (missing.length === 0 && verdicts === 0) missing.push('no test reported');
      if (missing.length > 0) out.push({ file, missing });
    }
    return out;
  }

  static #key(d) {
    return `${d.nesting}\0${d.name}\0${d.line}\0${d.column}`;
  }
}
