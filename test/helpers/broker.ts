/**
 * Starts a real broker process (`node dist/src/main.js`) on a kernel-chosen loopback port with its own
 * data directory, for black-box tests over real HTTP. Each call is isolated by construction.
 *
 * One environment variable switches the storage of every broker started here:
 * `QUEEN_TEST_STORAGE=postgres` gives each data directory its own fresh database on the local
 * PostgreSQL server (`QUEEN_TEST_PG_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`) and
 * starts the broker with `QUEEN_STORAGE=postgres` and its `DATABASE_URL`; a restart on the same data
 * directory finds the same database. The databases are dropped when the test process ends.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/src/main.js, resolved from dist/test/helpers. */
export const MAIN = path.resolve(here, '../../src/main.js');

export interface BrokerHandle {
  url: string;
  port: number;
  dataDir: string;
  proc: ChildProcess;
  /** stdout + stderr seen so far */
  output(): string;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Reuse a data directory (restart tests). */
  dataDir?: string;
  /** Reuse a port. */
  port?: number;
  /** Another build's `main.js` (bench comparisons); default {@link MAIN}. */
  main?: string;
  /** Node flags before `main.js` (bench profiles: `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeArgs?: string[];
}

/** True when the black-box suite runs on PostgreSQL (`QUEEN_TEST_STORAGE=postgres`). */
export const ON_POSTGRES = process.env.QUEEN_TEST_STORAGE === 'postgres';

/**
 * `{ skip: reason }` for a test that is SQLite-specific by nature (data files, WAL, the SQLite
 * schema) when the suite runs on PostgreSQL; `{}` otherwise. Use as `test(name, sqliteOnly('…'), fn)`.
 */
export function sqliteOnly(reason: string): { skip?: string } {
  return ON_POSTGRES ? { skip: `SQLite-specific: ${reason}` } : {};
}

/** The admin database's URL (`QUEEN_TEST_PG_URL`). */
export const PG_ADMIN_URL = process.env.QUEEN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Database URL per data directory (a restart on the directory reuses it). */
const databases = new Map<string, { name: string; url: string }>();
let dropArmed = false;

/**
 * Runs one statement on the admin database (`QUEEN_TEST_PG_URL`): CREATE/DROP DATABASE, a read
 * of `pg_database` and the like.
 * @returns the statement's rows (none for DDL)
 */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: PG_ADMIN_URL });
  await c.connect();
  try {
    return (await c.query<R>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** dist/test/helpers/drop-databases.js: drops test databases in a process of its own. */
const DROP_DATABASES = path.join(here, 'drop-databases.js');

/**
 * Runs {@link DROP_DATABASES} and waits for it (at most 20 s). Synchronous, so that the `exit`
 * handler can use it: the runner's `forceExit` ends a test file with `process.exit`, which skips
 * `beforeExit` and never awaits.
 * @throws Error with the script's stderr when it fails
 */
function dropDatabasesSync(args: string[]): void {
  const r = spawnSync(process.execPath, [DROP_DATABASES, PG_ADMIN_URL, ...args], { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`dropping test databases failed (${r.error?.message ?? `exit ${r.status}`}): ${r.stderr}`);
}

/**
 * The database of `dataDir` for a PostgreSQL run: created on first use, dropped when the test
 * process exits. The first call of a process also drops the databases that test processes which
 * died without their exit handler (SIGKILL) left behind.
 */
async function databaseFor(dataDir: string): Promise<string> {
  const known = databases.get(dataDir);
  if (known) return known.url;
  if (!dropArmed) {
    dropArmed = true;
    dropDatabasesSync(['--orphans']);
    // Registered after the handler that kills this process's brokers (below), so it runs after it.
    process.once('exit', () => {
      try {
        if (databases.size > 0) dropDatabasesSync([...databases.values()].map((d) => d.name));
      } catch (e) {
        process.stderr.write(`${(e as Error).message}\n`);
      }
    });
  }
  const name = `queen_bb_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  databases.set(dataDir, { name, url: u.toString() });
  return u.toString();
}

/** The storage variables a broker on `dataDir` gets (none on SQLite, or when `env` chooses the storage itself). */
async function storageEnv(dataDir: string, env: Record<string, string> | undefined): Promise<Record<string, string>> {
  if (!ON_POSTGRES || env?.QUEEN_STORAGE !== undefined) return {};
  return { QUEEN_STORAGE: 'postgres', DATABASE_URL: await databaseFor(dataDir) };
}

/** The directories {@link tempDir} made in this process, removed when it exits. */
const tempDirs: string[] = [];

/**
 * A fresh temporary directory, removed with its contents when this process exits (after its
 * brokers are killed: see `liveBrokers`); tests may also rm it earlier. Without the removal every
 * run of the suite left some 500 data directories in the machine's tmp directory.
 */
export function tempDir(prefix = 'queen-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** Removes {@link tempDirs}; a directory that cannot be removed is left (never an error at exit). */
function removeTempDirs(): void {
  for (const dir of tempDirs) {
    try {
      // Retries: a broker killed a moment ago may still be closing files in it.
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    } catch { /* left for the OS tmp cleaner */ }
  }
}

/**
 * Every broker process this test process started and has not yet seen exit. When the test process
 * exits, or the runner ends it with SIGTERM, the survivors are killed, so a test that lost a handle
 * never leaves a broker running on the machine.
 */
const liveBrokers = new Set<ChildProcess>();
const killLiveBrokers = (): void => {
  for (const proc of liveBrokers) proc.kill('SIGKILL');
};
process.once('exit', killLiveBrokers);
process.once('exit', removeTempDirs);
// The runner ends a file that overran its timeout with SIGTERM, which skips 'exit' handlers.
process.once('SIGTERM', () => {
  killLiveBrokers();
  process.exit(143);
});

/** Spawns a broker process and tracks it until it exits (see `liveBrokers`). */
function spawnTracked(main: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): ChildProcess {
  const proc = spawn(process.execPath, [...nodeArgs, main], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  liveBrokers.add(proc);
  proc.once('exit', () => liveBrokers.delete(proc));
  return proc;
}

/** The message of the broker's listening log line (src/boot.ts), which carries the bound `port`. */
export const LISTENING_MSG = 'queen-ts listening';

/** Levels at which the info-level listening line is not printed. */
const QUIET_LEVELS = new Set(['warn', 'error', 'fatal', 'silent']);

/**
 * Spawns the broker and resolves once it has logged its listening line and `/health` answers 200.
 * Without `opts.port` the broker binds `PORT=0` (the kernel picks a port, no race with other
 * processes) and the bound port is read from the `queen-ts listening` line on stdout (JSON, or the
 * `LOG_FORMAT=pretty` form with an indented `port:` line). The
 * broker runs at `LOG_LEVEL=info` unless `opts.env` says otherwise.
 * @throws Error with the process output when it exits or is not healthy within 30 s (a bound
 *   against hangs: a boot takes well under a second on an idle machine, seconds on a loaded one),
 *   or when `opts.env.LOG_LEVEL` would hide the listening line and no `opts.port` is given
 */
export async function startBroker(opts: StartOptions = {}): Promise<BrokerHandle> {
  const level = opts.env?.LOG_LEVEL ?? 'info';
  if (opts.port === undefined && QUIET_LEVELS.has(level)) {
    throw new Error(`startBroker: LOG_LEVEL=${level} hides the '${LISTENING_MSG}' line that carries the bound port; use info or pass a port`);
  }
  const dataDir = opts.dataDir ?? path.join(tempDir(), 'data');
  const storage = await storageEnv(dataDir, opts.env);
  const proc = spawnTracked(opts.main ?? MAIN, {
    PATH: process.env.PATH ?? '',
    PORT: String(opts.port ?? 0),
    QUEEN_BIND_ADDR: '127.0.0.1',
    QUEEN_DATA_DIR: dataDir,
    LOG_LEVEL: level,
    ...storage,
    ...opts.env,
  }, opts.nodeArgs);
  let out = '';
  let stdoutTail = ''; // the incomplete last line of stdout (chunks split lines anywhere)
  let resolveListening!: (port: number) => void;
  // Set once the listening line was seen: later output is only collected, not searched again
  // (the pretty form is searched in the whole output, which grows with every logged line).
  let heard = false;
  const listening = new Promise<number>((r) => (resolveListening = (port) => { heard = true; r(port); }));
  proc.stdout!.on('data', (d: Buffer) => {
    const text = d.toString();
    out += text;
    if (heard) return;
    const lines = (stdoutTail + text).split('\n');
    stdoutTail = lines.pop()!;
    for (const line of lines) {
      if (!line.includes(LISTENING_MSG)) continue;
      try {
        const o = JSON.parse(line) as { msg?: unknown; port?: unknown };
        if (o.msg === LISTENING_MSG && typeof o.port === 'number') resolveListening(o.port);
      } catch { /* not a JSON log line */ }
    }
    // LOG_FORMAT=pretty: the message line is followed by an indented `port: N` line.
    const pretty = new RegExp(`${LISTENING_MSG}\\r?\\n\\s+port: (\\d+)`).exec(out);
    if (pretty) resolveListening(Number(pretty[1]));
  });
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let exitSignal: NodeJS.Signals | null = null;
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code, signal) => { exitSignal = signal; resolve(code); }));
  let exitCode: number | null | undefined;
  void exited.then((c) => (exitCode = c));
  const fail = (why: string): never => {
    proc.kill('SIGKILL');
    throw new Error(`${why}:\n${out}`);
  };
  let deadlineTimer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((r) => (deadlineTimer = setTimeout(() => r('timeout'), 30_000)));
  try {
    const first = await Promise.race([listening, exited.then(() => 'exited' as const), timedOut]);
    if (first === 'exited') throw new Error(`broker exited with ${exitCode ?? `signal ${exitSignal}`} before it was listening:\n${out}`);
    if (first === 'timeout') fail('broker did not log its listening line in 30 s');
    const port = first as number;
    if (opts.port !== undefined && port !== opts.port) fail(`broker listens on ${port}, not on the requested ${opts.port}`);
    const url = `http://127.0.0.1:${port}`;
    // The listening line follows app.listen(), so /health answers now; check it once anyway so a
    // broken health route fails here rather than in the first test.
    const health = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status, (e: Error) => e.message);
    if (health !== 200) fail(`broker listening on ${port} but /health answered ${health}`);
    return {
      url, port, dataDir, proc,
      output: () => out,
      stop: async () => {
        if (exitCode !== undefined) return exitCode;
        proc.kill('SIGTERM');
        // A broker that ignores SIGTERM must fail the test with its output, never hang the suite.
        let t: NodeJS.Timeout | undefined;
        const stuck = new Promise<'stuck'>((r) => (t = setTimeout(() => r('stuck'), 30_000)));
        const first = await Promise.race([exited, stuck]);
        clearTimeout(t);
        if (first === 'stuck') {
          proc.kill('SIGKILL');
          await exited;
          throw new Error(`broker did not exit within 30 s of SIGTERM:\n${out}`);
        }
        return first;
      },
      kill: async () => {
        if (exitCode !== undefined) return;
        proc.kill('SIGKILL');
        await exited;
      },
    };
  } finally {
    clearTimeout(deadlineTimer);
  }
}

/**
 * Runs the broker binary expecting it to fail at boot.
 * @returns exit code and combined output; rejects if it is still running after `timeoutMs`
 */
export async function runBrokerExpectingExit(env: Record<string, string>, timeoutMs = 10_000): Promise<{ code: number | null; output: string }> {
  // PORT=0: a broker that boots by mistake binds a port of its own instead of racing for one.
  const dataDir = env.QUEEN_DATA_DIR ?? path.join(tempDir(), 'data');
  const storage = await storageEnv(dataDir, env);
  const proc = spawnTracked(MAIN, { PATH: process.env.PATH ?? '', PORT: '0', QUEEN_BIND_ADDR: '127.0.0.1', QUEEN_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...storage, ...env });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`broker still running after ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(t);
      resolve({ code, output: out });
    });
  });
}
