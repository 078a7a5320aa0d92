#!/usr/bin/env node
/**
 * `npm test`: the build, the static checks and the test files, packed onto the machine's cores
 * (test/README.md#how-npm-test-runs). It does what `npm run build`, `tsc -p web/tsconfig.json
 * --noEmit`, `npm run lint` and `node --test dist/test/` do one after the other, with less waiting:
 *
 * - dist/ is removed; `scripts/compile-and-lint.mjs` builds the TypeScript program once, emits it
 *   (`tsc -p tsconfig.json`) and lints with it (`eslint .`); the dashboard is built with vite beside
 *   it; the dashboard's typecheck, the cycle check, the import-direction check and the citation
 *   check run one after the other in a third lane. Their output is held and printed at the end.
 * - The test files start as soon as dist/ is written and the dashboard built, while ESLint and the
 *   other checks still run: node:test's own runner and reporter, `--test-concurrency` files at a
 *   time, the files that take longest first (SLOW_FIRST), so that no long file starts last and
 *   runs alone while the other core idles; the rest follow in path order.
 * - Nothing is skipped: the exit code is 1 when the build, any check or any test fails. The script
 *   refuses to run when package.json's `build` or `lint` no longer match what it does, so that a
 *   step added there cannot be left out here.
 *
 * Usage: node scripts/test.mjs [--test-concurrency=N] [--no-checks] [file-or-folder under dist/test ...]
 *   --test-concurrency=N  test files run at once (default 3: most files wait on child brokers and
 *                         sockets as much as they compute)
 *   --no-checks           build and test only (ESLint and the other checks are then yours to run)
 */
import { fork, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ResultLedger, failureKind } from './test-verdict.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const concurrency = Number(/^--test-concurrency=(\d+)$/.exec(args.find((a) => a.startsWith('--test-concurrency=')) ?? '')?.[1] ?? 3);
const checks = !args.includes('--no-checks');
const only = args.filter((a) => !a.startsWith('--'));

/**
 * Test files (paths under dist/test/) that start before all others, longest first: each takes
 * several seconds (a browser, repeated broker restarts, JWKS servers, long-polls). A file missing
 * here only starts later; a name here that no longer exists is ignored.
 */
const SLOW_FIRST = [
  'web/dashboard.test.js',
  'http/coordination/timers-durability.test.js',
  'auth/http-jwks.test.js',
  'auth/http-keys.test.js',
  'crypto/encryption.e2e.test.js',
  'http/coordination/timers.test.js',
  'http/messaging/durability.test.js',
  'auth/boot.test.js',
  'auth/http-hs.test.js',
  'http/admin/system.test.js',
  'http/jobs/retention.test.js',
  'http/messaging/pop.test.js',
  'broker/messaging/lease-memory.test.js',
  'http/adversarial/long-delays.test.js',
  'http/coordination/timers-transaction.test.js',
];

/** Every `*.test.js` under `dir`, as paths relative to `base`, sorted. */
function testFiles(dir, base) {
  const out = [];
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) out.push(...testFiles(p, base));
    else if (ent.name.endsWith('.test.js')) out.push(path.relative(base, p).split(path.sep).join('/'));
  }
  return out.sort();
}

/** `files` with the SLOW_FIRST ones in front, in that list's order. */
function ordered(files) {
  const present = new Set(files);
  const first = SLOW_FIRST.filter((f) => present.has(f));
  const firstSet = new Set(first);
  return [...first, ...files.filter((f) => !firstSet.has(f))];
}

/** Runs a command, holding its output; resolves with its exit code and output. */
function job(label, cmd, cmdArgs) {
  return held(label, spawn(cmd, cmdArgs, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Holds a child's output; resolves with its exit code and output once it has exited. */
function held(label, child) {
  const started = Date.now();
  return new Promise((resolve) => {
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (e) => resolve({ label, code: 1, output: `${output}${e.message}\n`, ms: Date.now() - started }));
    child.on('close', (code, signal) => resolve({ label, code: code ?? (signal ? 1 : 0), output, ms: Date.now() - started }));
  });
}

/** Runs the jobs made by `steps` one after the other, stopping at the first failure. */
async function lane(steps) {
  const out = [];
  for (const step of steps) {
    const r = await step();
    out.push(r);
    if (r.code !== 0) break;
  }
  return out;
}

function report(r) {
  const status = r.code === 0 ? 'ok' : `FAILED (exit ${r.code})`;
  process.stdout.write(`# ${r.label}: ${status} in ${(r.ms / 1000).toFixed(1)} s\n`);
  if (r.code !== 0 || r.output.trim() !== '') process.stdout.write(r.output.replace(/^/gm, `#   `).replace(/#   $/, '') + (r.output.endsWith('\n') ? '' : '\n'));
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const bin = (pkg, file) => path.join(root, 'node_modules', pkg, file);

// What this script does in place of `npm run build` and `npm run lint`: refuse to run once they differ.
const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts;
const expected = {
  build: "node -e \"require('node:fs').rmSync('dist',{recursive:true,force:true})\" && tsc -p tsconfig.json && node -e \"require('node:fs').chmodSync('dist/src/cli/main.js',0o755)\" && vite build --config web/vite.config.ts --logLevel warn",
  lint: 'npm run lint:es --silent && npm run lint:cycles --silent && npm run lint:layers --silent && npm run lint:citations --silent',
  'lint:es': 'eslint .',
};
for (const [name, want] of Object.entries(expected)) {
  if (scripts[name] !== want) {
    process.stderr.write(`scripts/test.mjs: package.json's "${name}" is now ${JSON.stringify(scripts[name])}; update scripts/test.mjs (it runs those steps itself) to match\n`);
    process.exit(1);
  }
}

fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
const compiler = fork(path.join(root, 'scripts', 'compile-and-lint.mjs'), checks ? [] : ['--no-lint'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
const emitted = new Promise((resolve) => {
  compiler.on('message', (m) => resolve(m?.emitted === true));
  compiler.on('exit', () => resolve(false));
});
const compiled = held(checks ? 'tsc -p tsconfig.json + eslint .' : 'tsc -p tsconfig.json', compiler);
const dashboard = job('vite build (dashboard)', process.execPath, [bin('vite', 'bin/vite.js'), 'build', '--config', 'web/vite.config.ts', '--logLevel', 'warn']);
const checkLane = checks
  ? lane([
    () => job('tsc -p web/tsconfig.json --noEmit', process.execPath, [bin('typescript', 'bin/tsc'), '-p', 'web/tsconfig.json', '--noEmit']),
    () => job('lint:cycles', npm, ['run', 'lint:cycles', '--silent']),
    () => job('lint:layers', npm, ['run', 'lint:layers', '--silent']),
    () => job('lint:citations', npm, ['run', 'lint:citations', '--silent']),
  ])
  : Promise.resolve([]);

/**
 * Per-file timeout of the test runner, ms (a file still running then is ended and reported);
 * `QUEEN_TEST_FILE_TIMEOUT_MS` overrides the default of 300 000.
 */
const FILE_TIMEOUT_MS = Number(process.env.QUEEN_TEST_FILE_TIMEOUT_MS ?? 300_000);

/** The reporter for this terminal: spec on a TTY, TAP otherwise. */
function reporterFor(spec, tap) {
  return process.stdout.isTTY ? new spec() : tap;
}

/**
 * Runs `files` with node:test, `concurrency` at a time, reporting to stdout.
 * - `forceExit`: a file ends when its last test has, even if a handle is left open (test helpers
 *   kill the brokers they started when the process exits).
 * - The watchdog's stderr lines (scripts/test-watchdog.mjs) are printed; TAP leaves out stderr.
 * - Every test a file enqueued must reach a verdict, and every file must report a test
 *   (ResultLedger, scripts/test-verdict.mjs); a `# RESULTS LOST` line names each one that did not,
 *   and that fails the run.
 * @returns `failed`: a test failed or its result was lost, other than in a whole file cut by the
 *   timeout; `timedOut`: the files cut by the file timeout.
 */
async function runFiles(run, files, concurrency, reporter) {
  const stream = run({ files, concurrency, timeout: FILE_TIMEOUT_MS, forceExit: true });
  let failed = false;
  const timedOut = [];
  const ledger = new ResultLedger();
  for (const type of ['test:enqueue', 'test:pass', 'test:fail']) stream.on(type, (d) => ledger.observe(type, d));
  stream.on('test:fail', (d) => {
    const kind = failureKind(d); // scripts/test-verdict.mjs
    if (kind === 'file-timeout') timedOut.push(d.file);
    else if (kind === 'failure') failed = true;
  });
  stream.on('test:stderr', ({ file, message }) => {
    for (const line of message.split('\n')) if (line.startsWith('test watchdog:')) process.stdout.write(`# ${path.relative(root, file ?? '')}: ${line}\n`);
  });
  const out = stream.compose(reporter);
  await new Promise((resolve, reject) => {
    out.pipe(process.stdout, { end: false });
    out.on('end', resolve);
    out.on('error', reject);
  });
  for (const { file, missing } of ledger.lost()) {
    failed = true;
    process.stdout.write(`# RESULTS LOST ${path.relative(root, file)}: ${missing.length} without a verdict: ${missing.slice(0, 10).join('; ')}${missing.length > 10 ? '; …' : ''}\n`);
  }
  return { failed, timedOut };
}

const built = (await emitted) && (await dashboard).code === 0;
// package.json's build marks the CLI executable (its `bin`); so does this.
if (built) fs.chmodSync(path.join(root, 'dist', 'src', 'cli', 'main.js'), 0o755);
let failed = !built;
if (!built) process.stdout.write('# tests not run: the build failed (below)\n');
if (built) {
  const base = path.join(root, 'dist', 'test');
  const all = testFiles(base, base);
  const picked = only.length === 0 ? all : all.filter((f) => only.some((o) => `dist/test/${f}`.startsWith(o.replace(/^\.\//, ''))));
  const { run } = await import('node:test');
  const { spec, tap } = await import('node:test/reporters');
  // Every test file's process preloads the watchdog (scripts/test-watchdog.mjs) and a blocking
  // stdout (scripts/test-child-stdout.mjs: forceExit cut a pipe's last events otherwise): node:test
  // passes the parent's execArgv on to the files it runs.
  process.execArgv.push('--import', path.join(root, 'scripts', 'test-watchdog.mjs'), '--import', path.join(root, 'scripts', 'test-child-stdout.mjs'));
  const first = await runFiles(run, ordered(picked).map((f) => path.join(base, f)), concurrency, reporterFor(spec, tap));
  failed = first.failed;
  if (first.timedOut.length > 0) {
    // A file that reached the file timeout while none of its tests had failed runs once more, on its
    // own; both runs are in the output and the retry decides. Any other failure fails the run.
    const names = first.timedOut.map((f) => path.relative(root, f)).join(', ');
    if (failed) {
      process.stdout.write(`# ${names}: reached the ${FILE_TIMEOUT_MS / 1000} s file timeout\n`);
    } else {
      process.stdout.write(`# RETRY ${names}: reached the ${FILE_TIMEOUT_MS / 1000} s file timeout (the watchdog lines above name what it waited on); running it once more, alone\n`);
      const again = await runFiles(run, first.timedOut, 1, reporterFor(spec, tap));
      failed = again.failed || again.timedOut.length > 0;
      process.stdout.write(`# RETRY ${names}: ${failed ? 'failed again' : 'passed'}\n`);
    }
  }
}
for (const r of [await compiled, await dashboard, ...(await checkLane)]) {
  report(r);
  if (r.code !== 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
