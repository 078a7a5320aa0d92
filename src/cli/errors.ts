/**
 * queenctl's exit codes and the error that carries one (docs/cli.md#exit-codes). The codes are
 * the reference CLI's (queen-mq/queen: clients/client-cli/internal/errors/exit.go), so scripts
 * written for it branch the same way: 0 success, 1 user error (bad flag, bad input, missing
 * argument), 2 server error or unreachable, 3 authentication or authorisation refused, 4 a
 * successful no-op (empty pop, nothing to push, nothing in the DLQ, nothing to apply).
 */

/** The exit codes, by name. */
export const EXIT = { ok: 0, user: 1, server: 2, auth: 3, empty: 4 } as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error that ends the command with `code`; its message goes to stderr (except for `empty`). */
export class CliError extends Error {
  constructor(readonly code: ExitCode, message: string) {
    super(message);
  }
}

/** Exit 1: the invocation is wrong (flag, argument, input file). */
export const userError = (message: string): CliError => new CliError(EXIT.user, message);
/** Exit 2: the broker refused or could not be reached. */
export const serverError = (message: string): CliError => new CliError(EXIT.server, message);
/** Exit 3: the broker (or the proxy) refused the credentials. */
export const authError = (message: string): CliError => new CliError(EXIT.auth, message);
/** Exit 4: nothing to do; not an error for scripts that branch on it. */
export const emptyResult = (message: string): CliError => new CliError(EXIT.empty, message);
