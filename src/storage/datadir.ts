/**
 * The data directory is treated like a credential (docs/security.md#data-directory):
 * it holds the payloads of every unencrypted queue, KV data, positions and key-check
 * values. It is created with mode 0700, everything the broker creates in it gets mode 0600, and
 * the broker refuses to start on a directory that others can write to (they could swap the
 * database file under it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config/env.js';

/** What {@link prepareDataDir} did, for the boot log. */
export interface DataDirReport {
  /** Absolute path of the directory. */
  dir: string;
  /** True when the directory did not exist and was created. */
  created: boolean;
  /** Files whose mode was tightened to 0600 (created by an older build or another umask). */
  tightened: string[];
  /** Things worth a warning that do not stop the boot. */
  warnings: string[];
}

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/**
 * Prepares the data directory before the store opens it.
 *
 * - Sets the process umask to 0077, so every file the process creates from now on (SQLite's
 *   database, WAL and shared-memory files included) is 0600 and every directory 0700.
 * - Creates `dir` (and missing parents) with mode 0700.
 * - Refuses a path that is not a directory, or a directory writable by group or others.
 * - Tightens regular files directly inside `dir` that group or others may access to 0600, and
 *   warns when the directory itself is readable by group or others.
 *
 * POSIX permissions only: on Windows the directory is created and nothing else is checked.
 * @throws ConfigError with a message naming the directory, its mode and the fix.
 */
export function prepareDataDir(dir: string, platform: NodeJS.Platform = process.platform): DataDirReport {
  const abs = path.resolve(dir);
  const report: DataDirReport = { dir: abs, created: false, tightened: [], warnings: [] };
  const posix = platform !== 'win32';
  if (posix) process.umask(0o077);

  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ConfigError(`data directory ${abs} cannot be read: ${(e as Error).message}`);
    }
    try {
      fs.mkdirSync(abs, { recursive: true, mode: 0o700 });
    } catch (e2) {
      throw new ConfigError(`data directory ${abs} cannot be created: ${(e2 as Error).message}`);
    }
    report.created = true;
    st = fs.statSync(abs);
  }
  if (!st.isDirectory()) throw new ConfigError(`data directory ${abs} exists but is not a directory`);
  if (!posix) return report;

  if ((st.mode & 0o022) !== 0) {
    throw new ConfigError(
      `data directory ${abs} is writable by group or others (mode ${octal(st.mode)}); it holds queue payloads ` +
        `and must be private: run chmod 700 ${abs}`,
    );
  }
  if ((st.mode & 0o077) !== 0) {
    report.warnings.push(`data directory ${abs} is readable by group or others (mode ${octal(st.mode)}); chmod 700 is recommended`);
  }
  for (const ent of fs.readdirSync(abs, { withFileTypes: true })) {
    if (!ent.isFile()) continue;
    const file = path.join(abs, ent.name);
    const fst = fs.statSync(file);
    if ((fst.mode & 0o077) !== 0) {
      fs.chmodSync(file, 0o600);
      report.tightened.push(file);
    }
  }
  return report;
}
