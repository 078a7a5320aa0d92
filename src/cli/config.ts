/**
 * `~/.queen/config.yaml`: named contexts (server URL, token reference), kubectl-style, and the
 * precedence that picks the connection of one invocation (docs/cli.md#configuration). Shape and
 * precedence are the reference CLI's (queen-mq/queen: clients/client-cli/internal/config/config.go):
 *
 *   current-context in the file < $QUEEN_CONTEXT < --context < $QUEEN_SERVER / $QUEEN_TOKEN < --server / --token
 *
 * The file holds secrets (a `literal:` token), so it is written with mode 0600 in a 0700
 * directory, through a temporary file renamed over it. Tokens are never printed: `config view`
 * shows a context's token reference with a literal token replaced by `literal:<redacted>`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { authError, userError } from './errors.js';

/** One broker endpoint and where its token comes from. */
export interface Context {
  name: string;
  /** Broker base URL, e.g. `http://localhost:6632` (no `/api/v1`). */
  server?: string;
  /**
   * `env` ($QUEEN_TOKEN), `file:///abs/path` (the file's trimmed text), `literal:<token>`, or
   * `keychain://<id>` (the reference's OS keychain: not available here, refused with exit 3).
   */
  'token-ref'?: string;
  insecure?: boolean;
}

/** The file's shape. */
export interface ConfigFile {
  'current-context'?: string;
  contexts?: Context[];
}

/** The connection of one invocation, after the precedence. */
export interface Resolved {
  /** The context name, or '' when none applies. */
  name: string;
  server: string;
  token: string;
  insecure: boolean;
}

/** Flag values that override the file and the environment. */
export interface Overrides {
  context?: string;
  server?: string;
  token?: string;
  configPath?: string;
}

/** `--config`, else `$QUEEN_CONFIG`, else `~/.queen/config.yaml` (home from `$HOME`). */
export function configPath(flag?: string): string {
  if (flag) return flag;
  if (process.env.QUEEN_CONFIG) return process.env.QUEEN_CONFIG;
  return path.join(process.env.HOME || os.homedir(), '.queen', 'config.yaml');
}

/**
 * Reads the file; a missing file is an empty configuration.
 * @throws CliError exit 1 when the file is not YAML of the expected shape
 */
export function loadConfig(file: string): ConfigFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw userError(`load config ${file}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (e) {
    throw userError(`parse ${file}: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw userError(`parse ${file}: not a mapping`);
  const cfg = doc as ConfigFile;
  if (cfg.contexts !== undefined && !Array.isArray(cfg.contexts)) throw userError(`parse ${file}: contexts must be a list`);
  if (cfg['current-context'] !== undefined && typeof cfg['current-context'] !== 'string') throw userError(`parse ${file}: current-context must be a string`);
  for (const [i, c] of (cfg.contexts ?? []).entries()) {
    const where = `parse ${file}: contexts[${i}]`;
    if (c === null || typeof c !== 'object' || Array.isArray(c)) throw userError(`${where} must be a mapping`);
    if (typeof c.name !== 'string' || c.name === '') throw userError(`${where}.name must be a non-empty string`);
    for (const k of ['server', 'token-ref'] as const) if (c[k] !== undefined && c[k] !== null && typeof c[k] !== 'string') throw userError(`${where}.${k} must be a string`);
    if (c.insecure !== undefined && c.insecure !== null && typeof c.insecure !== 'boolean') throw userError(`${where}.insecure must be true or false`);
  }
  return cfg;
}

/** Writes the file with mode 0600 (directory 0700), atomically. */
export function saveConfig(file: string, cfg: ConfigFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, YAML.stringify(cfg), { mode: 0o600 });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

export function findContext(cfg: ConfigFile, name: string): Context | undefined {
  return (cfg.contexts ?? []).find((c) => c.name === name);
}

/** Inserts or replaces the context of the same name. */
export function upsertContext(cfg: ConfigFile, ctx: Context): void {
  const list = cfg.contexts ?? (cfg.contexts = []);
  const i = list.findIndex((c) => c.name === ctx.name);
  if (i >= 0) list[i] = ctx;
  else list.push(ctx);
}

/** Removes a context (and the current-context pointing at it); false when absent. */
export function deleteContext(cfg: ConfigFile, name: string): boolean {
  const list = cfg.contexts ?? [];
  const i = list.findIndex((c) => c.name === name);
  if (i < 0) return false;
  list.splice(i, 1);
  if (cfg['current-context'] === name) delete cfg['current-context'];
  return true;
}

/** The kind of token reference, for listings: none, env, file, literal, keychain. */
export function authLabel(ref: string | undefined): string {
  if (!ref) return 'none';
  if (ref === 'env') return 'env';
  if (ref.startsWith('keychain://')) return 'keychain';
  if (ref.startsWith('file://')) return 'file';
  return 'literal';
}

/** A copy of the file fit for printing: literal tokens replaced by `literal:<redacted>`. */
export function redacted(cfg: ConfigFile): ConfigFile {
  return {
    ...cfg,
    contexts: (cfg.contexts ?? []).map((c) => (c['token-ref'] && authLabel(c['token-ref']) === 'literal' ? { ...c, 'token-ref': 'literal:<redacted>' } : c)),
  };
}

/**
 * The token a reference names.
 * @throws CliError exit 3 when the reference cannot be read (keychain, missing file)
 */
export function readTokenRef(ref: string | undefined): string {
  if (!ref) return '';
  if (ref === 'env') return process.env.QUEEN_TOKEN ?? '';
  if (ref.startsWith('literal:')) return ref.slice('literal:'.length);
  if (ref.startsWith('file://')) {
    try {
      return fs.readFileSync(ref.slice('file://'.length), 'utf8').trim();
    } catch (e) {
      throw authError(`token file: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
  }
  if (ref.startsWith('keychain://')) throw authError('keychain token references are not supported by this queenctl; use `queenctl login --method token` (stored as literal in a 0600 file) or --token-ref file:///path');
  return ref; // a bare value is a literal, as in the reference
}

/** The message of {@link resolve}'s exit 1 when no step names a server (`version` tells it apart). */
export const NO_SERVER = 'no server configured: pass --server, set $QUEEN_SERVER, or run `queenctl config set-context <name> --server <url>`';

/**
 * Applies the precedence to the loaded file.
 * @throws CliError exit 1 when no server results, or when it is not an http(s) URL (a bad
 *   argument, not an unreachable broker: docs/cli.md#exit-codes)
 */
export function resolve(cfg: ConfigFile, o: Overrides): Resolved {
  const name = o.context || process.env.QUEEN_CONTEXT || cfg['current-context'] || '';
  const r: Resolved = { name, server: '', token: '', insecure: false };
  const ctx = name ? findContext(cfg, name) : undefined;
  if (name && !ctx && (o.context || process.env.QUEEN_CONTEXT)) throw userError(`no such context "${name}"`);
  if (ctx) {
    r.server = ctx.server ?? '';
    r.insecure = ctx.insecure === true;
    r.token = readTokenRef(ctx['token-ref']);
  }
  if (process.env.QUEEN_SERVER) r.server = process.env.QUEEN_SERVER;
  if (o.server) r.server = o.server;
  if (process.env.QUEEN_TOKEN) r.token = process.env.QUEEN_TOKEN;
  if (o.token) r.token = o.token;
  if (!r.server) throw userError(NO_SERVER);
  r.server = r.server.replace(/\/+$/, '');
  let url: URL | undefined;
  try {
    url = new URL(r.server);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw userError(`invalid server URL "${r.server}": expected http://host:port or https://host:port`);
  return r;
}
