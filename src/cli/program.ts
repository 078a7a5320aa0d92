/**
 * The command tree (docs/cli.md#commands): global flags on the root, one register function per
 * area. Commander's own failures (unknown flag, missing argument) are thrown, not exited, so
 * main.ts maps them to exit 1.
 */
import { Command } from 'commander';
import { registerAdmin } from './commands/admin.js';
import { registerApply } from './commands/apply.js';
import { registerBench } from './commands/bench.js';
import { registerCompletion } from './commands/completion.js';
import { registerDlq } from './commands/dlq.js';
import { registerAck, registerLease, registerPop, registerTail } from './commands/consume.js';
import { registerGroups } from './commands/groups.js';
import { registerKv, registerTimers } from './commands/coordination.js';
import { registerLogin } from './commands/login.js';
import { registerOps } from './commands/ops.js';
import { registerConfig, registerDocs, registerPing, registerStatus, registerVersion } from './commands/plumbing.js';
import { registerPush } from './commands/push.js';
import { registerTx } from './commands/tx.js';
import { VERSION } from './version.js';

/**
 * Rewrites Go-style boolean flags (`--wait=false`, `--auto-ack=true`), which scripts written for
 * the reference CLI use, into commander's forms: `--x=true` → `--x`, `--x=false` → `--no-x`; the
 * token is dropped when that form does not exist, the value being the flag's default then.
 * Only flags that take no value anywhere in the tree are rewritten.
 */
export function booleanFlagsCompat(program: Command, argv: string[]): string[] {
  const positive = new Set<string>();
  const negative = new Set<string>();
  const valued = new Set<string>();
  const walk = (c: Command): void => {
    for (const o of c.options) {
      const long = o.long?.slice(2);
      if (!long) continue;
      if (o.required || o.optional) valued.add(long);
      else if (o.negate) negative.add(long.slice(3));
      else positive.add(long);
    }
    c.commands.forEach(walk);
  };
  walk(program);
  return argv.flatMap((a) => {
    const m = /^--([a-z][a-z0-9-]*)=(true|false)$/.exec(a);
    if (!m || valued.has(m[1]!) || (!positive.has(m[1]!) && !negative.has(m[1]!))) return [a];
    if (m[2] === 'true') return positive.has(m[1]!) ? [`--${m[1]}`] : [];
    return negative.has(m[1]!) ? [`--no-${m[1]}`] : [];
  });
}

/** Builds the root command with every verb registered. */
export function buildProgram(): Command {
  const program = new Command('queenctl')
    .description('Operator command line for Queen MQ brokers (Queen-TS and the reference)')
    .version(`queenctl ${VERSION} (queen-ts)`, '--version', 'print the queenctl version')
    .option('--context <name>', 'context from ~/.queen/config.yaml (overrides current-context and $QUEEN_CONTEXT)')
    .option('--server <url>', 'broker URL (overrides the context and $QUEEN_SERVER)')
    .option('--token <token>', 'bearer token (overrides the context and $QUEEN_TOKEN)')
    .option('-o, --output <format>', 'table | wide | json | ndjson | yaml | jsonpath=<expr>')
    .option('--color', 'force colour')
    .option('--no-color', 'no colour')
    .option('--insecure', 'skip TLS certificate verification')
    .option('-q, --quiet', 'suppress status lines')
    .option('--no-headers', 'omit table headers')
    .option('--config <path>', 'config file (default $QUEEN_CONFIG or ~/.queen/config.yaml)')
    .showSuggestionAfterError()
    .exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s.startsWith('error:') ? `queenctl: ${s}` : s) });
  registerPing(program);
  registerVersion(program);
  registerStatus(program);
  registerGroups(program);
  registerTail(program);
  registerPush(program);
  registerPop(program);
  registerAck(program);
  registerApply(program);
  registerAdmin(program);
  registerDlq(program);
  registerTx(program);
  registerLease(program);
  registerOps(program);
  registerBench(program);
  registerKv(program);
  registerTimers(program);
  registerConfig(program);
  registerLogin(program);
  registerCompletion(program);
  registerDocs(program);
  // Subcommands throw instead of exiting, like the root.
  const override = (c: Command): void => {
    for (const sub of c.commands) {
      sub.exitOverride();
      override(sub);
    }
  };
  override(program);
  return program;
}
