/**
 * The broker's logger (pino, JSON lines on stdout). Payloads, tokens and keys are never logged:
 * the redaction list below is a second line of defence, not a licence to pass them in.
 */
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Creates the root logger at `level`. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'queen-ts' },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'secret', 'key', 'payload', 'data'],
      censor: '[redacted]',
    },
  });
}
