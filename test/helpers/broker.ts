/**
 * Starts a real broker process (`node dist/src/main.js`) on a free loopback port with its own
 * data directory, for black-box tests over real HTTP. Each call is isolated by construction.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
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
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A fresh temporary directory (removed by the OS tmp cleaner; tests may rm it). */
export function tempDir(prefix = 'queen-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Spawns the broker and resolves once `/health` answers 200.
 * @throws Error with the process output when it exits or does not become healthy in 15 s
 */
export async function startBroker(opts: StartOptions = {}): Promise<BrokerHandle> {
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? path.join(tempDir(), 'data');
  const proc = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      QUEEN_BIND_ADDR: '127.0.0.1',
      QUEEN_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  let exitCode: number | null | undefined;
  void exited.then((c) => (exitCode = c));
  for (;;) {
    if (exitCode !== undefined) throw new Error(`broker exited with ${exitCode} before it was healthy:\n${out}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) break;
    } catch { /* not yet listening */ }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`broker did not become healthy in 15 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url, port, dataDir, proc,
    output: () => out,
    stop: async () => {
      if (exitCode !== undefined) return exitCode;
      proc.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (exitCode !== undefined) return;
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Runs the broker binary expecting it to fail at boot.
 * @returns exit code and combined output; rejects if it is still running after `timeoutMs`
 */
export async function runBrokerExpectingExit(env: Record<string, string>, timeoutMs = 10_000): Promise<{ code: number | null; output: string }> {
  const port = await freePort();
  const proc = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), QUEEN_BIND_ADDR: '127.0.0.1', QUEEN_DATA_DIR: path.join(tempDir(), 'data'), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
