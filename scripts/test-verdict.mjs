/**
 * What one node:test `test:fail` event means for the verdict of `npm test` (scripts/test.mjs):
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
