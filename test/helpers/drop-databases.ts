/**
 * Drops test databases on the local PostgreSQL server, as a process of its own:
 * `node dist/test/helpers/drop-databases.js <admin URL> [--orphans] [name …]`.
 *
 * - Each `name` is dropped (`DROP DATABASE IF EXISTS … WITH (FORCE)`).
 * - `--orphans` also drops every test database (`queen_bb_<pid>_…`, `queen_test_<pid>_…`) whose
 *   creating process is no longer alive: a test file killed by SIGKILL, or by the runner before
 *   its exit handler ran, leaves its databases behind, and each black-box run on PostgreSQL
 *   creates about 80 of them (some 650 MB). Liveness is judged by pid in this process's pid
 *   namespace: test runs in different namespaces (containers) must not share one server.
 *
 * test/helpers/broker.ts runs it synchronously from its `exit` handler, which cannot await (the
 * runner's `forceExit` ends a test file with `process.exit`, so `beforeExit` never fires), and
 * once per process with `--orphans` before it creates its first database. Exits 0, or 1 with the
 * error on stderr.
 */
import pg from 'pg';

/** The test databases' names: `<prefix>_<pid of the creating process>_<random hex>`. */
const TEST_DATABASE = /^queen_(?:bb|test)_(\d+)_[0-9a-f]+$/;

/** True when a process with this pid exists (EPERM: it exists but is not ours). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function main(argv: string[]): Promise<void> {
  const [url, ...rest] = argv;
  if (url === undefined) throw new Error('usage: drop-databases <admin URL> [--orphans] [name …]');
  const names = new Set(rest.filter((a) => a !== '--orphans'));
  for (const n of names) if (!TEST_DATABASE.test(n)) throw new Error(`not a test database name: ${n}`);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    if (rest.includes('--orphans')) {
      const r = await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'queen\\_%'");
      for (const { datname } of r.rows) {
        const m = TEST_DATABASE.exec(datname);
        if (m !== null && !alive(Number(m[1]))) names.add(datname);
      }
    }
    for (const n of names) await c.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`drop-databases: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
