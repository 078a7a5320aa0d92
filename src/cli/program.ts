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
import { registerAck, registerLease, registerPop, registerTail } from './commands/consume.js';
import { registerGroups } from './commands/groups.js';
import { registerKv, registerTimers } from './commands/coordination.js';
import { registerLogin } from './commands/login.js';
import { registerOps } from './commands/ops.js';
import { registerConfig, registerPing, registerStatus, registerVersion } from './commands/plumbing.js';
import { registerPush } from './commands/push.js';
import { registerTx } from './commands/tx.js';
import { VERSION } from './version.js';

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
  registerTx(program);
  registerLease(program);
  registerOps(program);
  registerBench(program);
  registerKv(program);
  registerTimers(program);
  registerConfig(program);
  registerLogin(program);
  registerCompletion(program);
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
