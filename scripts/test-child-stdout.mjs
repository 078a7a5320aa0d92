/**
 * Preloaded into every test file's process by `npm test` (scripts/test.mjs) and by `.ci/run`'s
 * PostgreSQL pass: makes the process's stdout blocking before anything is written to it.
 *
 * Why: node:test runs each file in a child that streams its test events to the parent over a
 * pipe (stdout), and a pipe's writes are asynchronous on Linux. With `forceExit` (`--test-force-exit`)
 * the child calls `process.exit()` as soon as its last test has ended, and whatever libuv still
 * held of that stream was dropped: the parent then reported fewer tests than had run, with exit
 * code 0 (a whole suite of test/auth/units.test.ts was missing from one CI run). Known upstream as
 * nodejs/node#64833 (open; the force-exit flush of nodejs/node#55099 skips pipes). A blocking
 * stdout has written every byte before `write()` returns, so `process.exit()` cannot cut it.
 * scripts/test-verdict.mjs's ResultLedger is the check behind this: a test enqueued without a
 * verdict fails the run. Tested in test/scripts/test-runner.test.ts.
 */
const handle = /** @type {{ setBlocking?: (on: boolean) => number } | undefined} */ (/** @type {any} */ (process.stdout)._handle);
if (handle && typeof handle.setBlocking === 'function') handle.setBlocking(true);
