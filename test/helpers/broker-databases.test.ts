/**
 * test/helpers/broker.ts on PostgreSQL (`QUEEN_TEST_STORAGE=postgres`): the database each data
 * directory gets is dropped when the test process exits, also through `process.exit` (the
 * runner's forceExit, which skips `beforeExit`), and databases left by test processes that died
 * without their exit handler are dropped by the next one; the temporary data directory goes too.
 * Before this, every black-box run on PostgreSQL left about 80 databases (650 MB) on the server,
 * and every run of the suite some 500 data directories in the tmp directory.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { adminQuery, PG_ADMIN_URL } from './broker.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const HELPER = fileURLToPath(new URL('./broker.js', import.meta.url));

/** Names of the databases matching the LIKE pattern `like`. */
async function databaseNames(like: string): Promise<string[]> {
  const rows = await adminQuery<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1', [like]);
  return rows.map((r) => r.datname);
}

describe('test databases on PostgreSQL', () => {
  it('a test process that ends with process.exit drops its databases and removes its data directories, and drops the databases a killed one left', async () => {
    // A pid that was alive and no longer is: a test process killed before its exit handler ran.
    const gone = spawnSync('true').pid!;
    const orphan = `queen_bb_${gone}_0ddba11`;
    await adminQuery(`CREATE DATABASE ${orphan}`);
    try {
      const r = spawnSync(process.execPath, [`${ROOT}test/fixtures/pg-databases/exits.mjs`, HELPER, PG_ADMIN_URL], {
        env: { ...process.env, QUEEN_TEST_STORAGE: 'postgres' }, encoding: 'utf8', timeout: 60_000,
      });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { pid: number; health: number; databases: number; dataDir: string };
      assert.equal(out.health, 200);
      assert.equal(out.databases, 1, 'the broker had a database of its own while the process ran');
      assert.deepEqual(await databaseNames(`queen\\_bb\\_${out.pid}\\_%`), [], 'the exited process left its database');
      assert.deepEqual(await databaseNames(orphan.replaceAll('_', '\\_')), [], 'the orphan of a dead process is still there');
      assert.match(out.dataDir, /queen-test-/);
      assert.equal(fs.existsSync(path.dirname(out.dataDir)), false, `${out.dataDir}: the temporary directory is still there`);
    } finally {
      await adminQuery(`DROP DATABASE IF EXISTS ${orphan} WITH (FORCE)`);
    }
  });
});
