/**
 * Throw-away PostgreSQL servers for the standby tests (docs/cluster.md#standby): a primary made
 * with `initdb` in a temporary directory, and a hot-standby replica of it made with
 * `pg_basebackup -R` (streaming replication). Both run as the `postgres` OS user (initdb refuses
 * root) on free ports of 127.0.0.1 with trust authentication, `fsync=off`. The server binaries are
 * found under /usr/lib/postgresql/<version>/bin (or `QUEEN_TEST_PG_BIN`).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The directory of initdb, pg_ctl and pg_basebackup, or undefined when not installed. */
export function pgBinDir(): string | undefined {
  if (process.env.QUEEN_TEST_PG_BIN) return process.env.QUEEN_TEST_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs.readdirSync(root).filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : undefined;
}

/** Why the standby tests cannot run here (no server binaries, no `postgres` user, not root), or undefined. */
export function pgServersUnavailable(): string | undefined {
  if (!pgBinDir()) return 'PostgreSQL server binaries not found (apt-get install postgresql)';
  if (process.getuid?.() !== 0) return 'starting a throw-away PostgreSQL as the postgres user needs root';
  try {
    fs.accessSync('/usr/sbin/runuser');
  } catch {
    return 'runuser not found';
  }
  return undefined;
}

/** A free TCP port on 127.0.0.1 (the kernel's pick, released before use). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as net.AddressInfo;
      s.close(() => resolve(a.port));
    });
  });
}

/** Runs a server binary as the postgres user (60 s bound). */
async function asPostgres(bin: string, args: string[]): Promise<string> {
  const { stdout, stderr } = await run('/usr/sbin/runuser', ['-u', 'postgres', '--', path.join(pgBinDir()!, bin), ...args], { timeout: 60_000 });
  return stdout + stderr;
}

/** A running throw-away server. */
export interface PgServer {
  port: number;
  dir: string;
  /** URL of database `db` on this server (user postgres). */
  url(db: string): string;
  /** Stops it (`immediate`: as a crash would) and removes its directory unless `keep`. */
  stop(mode?: 'fast' | 'immediate', keep?: boolean): Promise<void>;
}

async function start(dir: string, port: number): Promise<PgServer> {
  fs.appendFileSync(path.join(dir, 'postgresql.conf'), [
    '', `port = ${port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${dir}'`, 'fsync = off', 'full_page_writes = off',
    'wal_level = replica', 'max_wal_senders = 4', 'hot_standby = on', 'shared_buffers = 16MB', 'max_connections = 60', '',
  ].join('\n'));
  await asPostgres('pg_ctl', ['-D', dir, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  let stopped = false;
  return {
    port, dir,
    url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}`,
    stop: async (mode = 'fast', keep = false) => {
      if (!stopped) {
        stopped = true;
        await asPostgres('pg_ctl', ['-D', dir, '-m', mode, '-w', '-t', '60', 'stop']).catch(() => undefined);
      }
      if (!keep) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
    },
  };
}

/** A directory the postgres user owns, inside a fresh temporary one. */
function ownedDir(prefix: string): string {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(parent, 0o755);
  const dir = path.join(parent, 'data');
  fs.mkdirSync(dir, { mode: 0o700 });
  const pw = fs.statSync('/var/lib/postgresql', { throwIfNoEntry: false });
  const uid = pw?.uid ?? 101;
  const gid = pw?.gid ?? 104;
  fs.chownSync(dir, uid, gid);
  return dir;
}

/** Creates and starts a primary (trust authentication, replication allowed from 127.0.0.1). */
export async function startPrimary(): Promise<PgServer> {
  const dir = ownedDir('queen-pg-primary-');
  await asPostgres('initdb', ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  return start(dir, await freePort());
}

/** Copies `primary` with pg_basebackup (`-R`: standby.signal and primary_conninfo) and starts it as a hot standby. */
export async function startReplica(primary: PgServer): Promise<PgServer> {
  const dir = ownedDir('queen-pg-replica-');
  await asPostgres('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', dir, '-R', '-X', 'stream', '--no-sync', '-c', 'fast']);
  // The copy carries the primary's settings; the appended ones (port, socket directory) win.
  return start(dir, await freePort());
}
