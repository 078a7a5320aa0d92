/**
 * The broker's logger (pino). JSON lines on stdout, or human-readable lines (pino-pretty) on a
 * terminal or with `LOG_FORMAT=pretty`. Payloads, tokens and keys are never logged: the redaction
 * list below is a second line of defence, not a licence to pass them in.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';

/** `LOG_FORMAT`: `auto` (pretty on a TTY, JSON otherwise), `json` or `pretty`. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** The format actually used: `auto` becomes `pretty` when stdout is a terminal, else `json`. */
export function resolveLogFormat(format: LogFormat, stdoutIsTty: boolean): 'json' | 'pretty' {
  return format === 'auto' ? (stdoutIsTty ? 'pretty' : 'json') : format;
}

/**
 * Creates the root logger at `level`, writing to stdout.
 * @param format `auto` decides by whether stdout is a terminal; pretty lines are written
 *   synchronously (a human is reading; no worker thread to flush at exit).
 */
export function createLogger(level: string, format: LogFormat = 'auto'): Logger {
  const options = {
    level,
    base: { service: 'queen-ts' },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'secret', 'key', 'payload', 'data'],
      censor: '[redacted]',
    },
  };
  if (resolveLogFormat(format, process.stdout.isTTY === true) === 'json') return pino(options);
  return pino(options, pretty({ sync: true, translateTime: 'SYS:standard', ignore: 'pid,hostname,service' }));
}
