/**
 * What every command needs from the global flags (docs/cli.md#global-flags): the configuration
 * file, the resolved connection, an {@link Api} and a {@link Renderer}. Built per command from
 * commander's merged options.
 */
import type { Command } from 'commander';
import { Api } from './client.js';
import { configPath, loadConfig, resolve, type ConfigFile, type Resolved } from './config.js';
import { userError } from './errors.js';
import { parseFormat, Renderer, type Format } from './output.js';
import { parseDurationMs } from './time.js';

/** The root command's flags. */
export interface GlobalOptions {
  context?: string;
  server?: string;
  token?: string;
  output?: string;
  color?: boolean;
  insecure?: boolean;
  quiet?: boolean;
  headers?: boolean;
  config?: string;
}

export class Session {
  private cfg?: ConfigFile;
  private res?: Resolved;

  constructor(readonly g: GlobalOptions) {}

  /** The session of a command being run (its options merged with the root's). */
  static of(cmd: Command): Session {
    return new Session(cmd.optsWithGlobals<GlobalOptions>());
  }

  get configFile(): string {
    return configPath(this.g.config);
  }

  config(): ConfigFile {
    return (this.cfg ??= loadConfig(this.configFile));
  }

  resolved(): Resolved {
    return (this.res ??= resolve(this.config(), { context: this.g.context, server: this.g.server, token: this.g.token }));
  }

  /** A client for the resolved broker; `--insecure` (or the context's) turns off TLS verification. */
  api(timeoutMs?: number): Api {
    const r = this.resolved();
    const api = new Api(r.server, r.token, timeoutMs, r.insecure || this.g.insecure === true);
    opened.push(api);
    return api;
  }

  /** The output renderer: `-o`, else table on a terminal and JSON in a pipe. */
  renderer(fallback?: Format): Renderer {
    const { format, expr } = parseFormat(this.g.output);
    const tty = process.stdout.isTTY === true;
    return new Renderer({
      format: format ?? fallback ?? (tty ? 'table' : 'json'),
      expr,
      noHeaders: this.g.headers === false,
      color: this.g.color ?? (tty && !process.env.NO_COLOR),
    });
  }

  /** Whether `-o` names a format. */
  get formatChosen(): boolean {
    return parseFormat(this.g.output).format !== undefined;
  }

  /**
   * Whether `-o` asks for a document (json, ndjson, yaml, jsonpath): a command whose default is a
   * status line then prints its summary as an object instead (`push`, `dlq retry|drain`).
   */
  get structured(): boolean {
    const f = parseFormat(this.g.output).format;
    return f !== undefined && f !== 'table' && f !== 'wide';
  }

  /** A status line on stdout, unless `-q`. */
  say(line: string): void {
    if (!this.g.quiet) process.stdout.write(`${line}\n`);
  }
}

/** Clients opened by this process, closed by {@link closeClients}. */
const opened: Api[] = [];

/** Closes the keep-alive sockets of every client (main.ts, when the command is done). */
export function closeClients(): void {
  for (const a of opened.splice(0)) a.close();
}

/**
 * A duration flag: Go-style (`10s`, `1m30s`, `500ms`) or a bare number of ms.
 * @throws CliError exit 1
 */
export function durationFlag(name: string, v: string): number {
  if (/^\d+$/.test(v)) return Number(v);
  const ms = parseDurationMs(v);
  if (ms === undefined) throw userError(`--${name}: invalid duration "${v}" (e.g. 10s, 1m, 500ms)`);
  return ms;
}

/**
 * A non-negative integer flag.
 * @throws CliError exit 1
 */
export function intFlag(name: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n)) throw userError(`--${name}: expected a non-negative integer up to 2^53-1, got "${v}"`);
  return n;
}
