#!/usr/bin/env node
/**
 * queenctl: the operator's command line for Queen-TS and the reference Queen broker
 * (docs/cli.md). The package's `bin` (`npx queenctl …` after `npm ci`). It talks to a broker over
 * its HTTP API only; verbs, flags, output formats and exit codes are those of the reference CLI
 * (queen-mq/queen: clients/client-cli), plus `kv` and `timers`.
 *
 * Exit codes (src/cli/errors.ts): 0 ok, 1 user error, 2 server error or unreachable, 3 auth,
 * 4 successful no-op. Errors print `queenctl: <message>` on stderr (nothing for exit 4).
 */
import { Command, CommanderError } from 'commander';
import { CliError, EXIT } from './errors.js';
import { booleanFlagsCompat, buildProgram } from './program.js';
import { closeClients } from './session.js';

async function main(argv: string[]): Promise<number> {
  const program: Command = buildProgram();
  try {
    await program.parseAsync(booleanFlagsCompat(program, argv));
    closeClients();
    return EXIT.ok;
  } catch (e) {
    closeClients();
    if (e instanceof CommanderError) {
      // --help and --version end with code 0; usage errors (unknown option, missing argument) are user errors.
      return e.exitCode === 0 ? EXIT.ok : EXIT.user;
    }
    if (e instanceof CliError) {
      if (e.code !== EXIT.empty && e.message) process.stderr.write(`queenctl: ${e.message}\n`);
      return e.code;
    }
    process.stderr.write(`queenctl: ${(e as Error).message ?? String(e)}\n`);
    return EXIT.server;
  }
}

// A closed pipe (`queenctl … | head`) ends the command quietly, as with any Unix filter.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok);
  throw e;
});

main(process.argv).then((code) => {
  process.exitCode = code;
}, (e: unknown) => {
  process.stderr.write(`queenctl: ${String(e)}\n`);
  process.exitCode = EXIT.server;
});
