/**
 * Runs the built queenctl (dist/src/cli/main.js) as a subprocess with an isolated `HOME` (so
 * `~/.queen/config.yaml` is the test's own) and no inherited QUEEN_* variables. Not a test file.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

export interface Run { code: number | null; stdout: string; stderr: string }

export interface RunOptions {
  /** Text written to stdin (stdin is closed either way). */
  input?: string;
  /** Extra environment (QUEEN_SERVER, QUEEN_TOKEN, …). */
  env?: Record<string, string>;
  /** `HOME` of the run (default: a fresh temporary one per {@link Cli}). */
  home?: string;
  timeoutMs?: number;
}

/** A fresh temporary HOME. */
export function tempHome(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'queenctl-home-'));
}

/** Runs `queenctl args…`; resolves when it exits (kills it after `timeoutMs`, default 60 s). */
export function queenctl(args: string[], o: RunOptions = {}): Promise<Run> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: o.home ?? tempHome(), ...o.env };
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.on('error', () => { /* the CLI may exit before reading stdin */ });
  child.stdin.end(o.input ?? '');
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`queenctl ${args.join(' ')} still running after ${o.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, o.timeoutMs ?? 60_000);
    // 'close' follows the last 'data' event of both pipes ('exit' may precede them).
    child.once('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A CLI bound to one broker and one HOME. */
export class Cli {
  readonly home = tempHome();
  constructor(readonly server: string) {}

  /** `queenctl --server <broker> args…`. */
  run(args: string[], o: RunOptions = {}): Promise<Run> {
    return queenctl(['--server', this.server, ...args], { home: this.home, ...o });
  }

  /** Like {@link run}, failing with the output unless the exit code is `code` (default 0). */
  async ok(args: string[], o: RunOptions & { code?: number } = {}): Promise<string> {
    const r = await this.run(args, o);
    if (r.code !== (o.code ?? 0)) throw new Error(`queenctl ${args.join(' ')} exited ${r.code}, expected ${o.code ?? 0}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r.stdout;
  }
}

/** Parses NDJSON output into objects. */
export function ndjson<T = Record<string, unknown>>(text: string): T[] {
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as T);
}
