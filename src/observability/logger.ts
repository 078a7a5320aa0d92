/**
 * The broker's logger (pino). JSON lines on stdout, or human-readable lines (pino-pretty) on a
 * terminal or with `LOG_FORMAT=pretty`. Payloads, tokens and keys are never logged: the redaction
 * list below is a second line of defence, not a licence to pass them in.
 *
 * Log output never stops the broker (docs/operations.md#logs): lines go to stdout through one
 * asynchronous sonic-boom writer with a bounded buffer (`QUEEN_LOG_BUFFER_BYTES`). When the reader
 * of stdout stops reading, lines that do not fit are dropped and counted
 * ({@link logOutputStats}, `queen_log_lines_dropped_total`), and one warning reports them when the
 * writer has drained again. A closed stdout (EPIPE) stops the output for good. At exit the buffer
 * is flushed synchronously for at most {@link FINAL_FLUSH_MS}.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import sonicBoom from 'sonic-boom';

// sonic-boom is CommonJS: the class comes off the module object.
const { SonicBoom } = sonicBoom;

export type { Logger } from 'pino';

/** `LOG_FORMAT`: `auto` (pretty on a TTY, JSON otherwise), `json` or `pretty`. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** Default of `QUEEN_LOG_BUFFER_BYTES`: bytes of log lines held while stdout is not writable. */
export const DEFAULT_LOG_BUFFER_BYTES = 8 * 1024 * 1024;

/** How long (ms) the synchronous flush at process exit keeps retrying a full stdout. */
export const FINAL_FLUSH_MS = 1000;

/** The message of the warning that reports dropped lines (fields `dropped`, `droppedTotal`). */
export const DROPPED_LINES_MSG = 'log lines dropped: stdout was not read fast enough';

/** The format actually used: `auto` becomes `pretty` when stdout is a terminal, else `json`. */
export function resolveLogFormat(format: LogFormat, stdoutIsTty: boolean): 'json' | 'pretty' {
  return format === 'auto' ? (stdoutIsTty ? 'pretty' : 'json') : format;
}

/** What happened to this process's log output. */
export interface LogOutputStats {
  /** Lines dropped since boot: buffer full (reader too slow or stopped) or stdout closed. */
  readonly dropped: number;
  /** The error code that stopped the output (`EPIPE`: the reader went away), if any. */
  readonly stoppedBy: string | undefined;
}

/**
 * The one writer of stdout in this process. Lines are queued in order and written with
 * non-blocking `fs.write`; EAGAIN (pipe full) is retried every 100 ms by sonic-boom without
 * blocking the event loop, except in the exit flush, where the retries stop after
 * {@link FINAL_FLUSH_MS}.
 */
class StdoutSink {
  private readonly boom: InstanceType<typeof SonicBoom>;
  dropped = 0;
  stoppedBy: string | undefined;
  /** Drops not yet reported by a warning. */
  private unreported = 0;
  /** Epoch ms after which EAGAIN is no longer retried (set by the exit flush). */
  private giveUpAt = Number.POSITIVE_INFINITY;
  /** The logger that reports drops (the last one created). */
  reporter: Logger | undefined;

  constructor(fd: number, maxBytes: number) {
    this.boom = new SonicBoom({
      fd,
      sync: false,
      minLength: 0,
      maxLength: maxBytes,
      retryEAGAIN: () => Date.now() < this.giveUpAt,
    });
    this.boom.on('drop', () => this.countDrop());
    this.boom.on('drain', () => this.reportDrops());
    this.boom.on('error', (e: NodeJS.ErrnoException) => this.stop(e));
    process.once('exit', () => this.finalFlush());
  }

  /** Queues one line (pino calls this). Never throws, never blocks. */
  write(line: string): void {
    if (this.stoppedBy !== undefined) return this.countDrop();
    this.boom.write(line);
  }

  private countDrop(): void {
    this.dropped++;
    this.unreported++;
  }

  private reportDrops(): void {
    if (this.unreported === 0 || this.reporter === undefined || this.stoppedBy !== undefined) return;
    const dropped = this.unreported;
    this.unreported = 0;
    this.reporter.warn({ dropped, droppedTotal: this.dropped }, DROPPED_LINES_MSG);
  }

  /** A write error other than a full pipe (EPIPE, EBADF, …): no more output, no retry loop. */
  private stop(e: NodeJS.ErrnoException): void {
    if (this.stoppedBy !== undefined) return;
    this.stoppedBy = e.code ?? 'error';
    this.boom.destroy();
    try {
      fs.writeSync(2, `warning: log output stopped: writing stdout failed with ${this.stoppedBy}\n`);
    } catch { /* stderr is gone too: the metric still counts the lost lines */ }
  }

  /** At exit: write what is buffered, retrying a full pipe for at most FINAL_FLUSH_MS. */
  private finalFlush(): void {
    if (this.stoppedBy !== undefined) return;
    this.giveUpAt = Date.now() + FINAL_FLUSH_MS;
    try {
      this.boom.flushSync();
    } catch { /* EAGAIN past the deadline, or EPIPE: the remaining lines are lost */ }
  }
}

let stdout: StdoutSink | undefined;

/** Counters of this process's log output (all zero before the first {@link createLogger}). */
export function logOutputStats(): LogOutputStats {
  return { dropped: stdout?.dropped ?? 0, stoppedBy: stdout?.stoppedBy };
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /**
   * Bytes of lines held while stdout is not writable (`QUEEN_LOG_BUFFER_BYTES`); further lines
   * are dropped. The first logger of the process sets it: all loggers share one stdout writer.
   */
  bufferBytes?: number;
}

/**
 * Creates a logger at `level`, writing to stdout through the process's one non-blocking writer.
 * @param format `auto` decides by whether stdout is a terminal; `pretty` lines are rendered by
 *   pino-pretty's formatter before they are queued, so both formats share the same bounded writer
 */
export function createLogger(level: string, format: LogFormat = 'auto', opts: LoggerOptions = {}): Logger {
  const options = {
    level,
    base: { service: 'queen-ts' },
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', 'secret', 'key', 'payload', 'data'],
      censor: '[redacted]',
    },
  };
  // Reading process.stdout also makes libuv open fd 1 non-blocking (pipes and sockets), so a full
  // pipe answers EAGAIN instead of blocking a thread.
  const pretty = resolveLogFormat(format, process.stdout.isTTY === true) === 'pretty';
  stdout ??= new StdoutSink(1, opts.bufferBytes ?? DEFAULT_LOG_BUFFER_BYTES);
  const sink = stdout;
  // pino-pretty (CommonJS) is loaded only for pretty output: a JSON-logging broker never holds it (idle RSS, README).
  const prettyFactory = pretty ? (createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty')).prettyFactory : undefined;
  const render = prettyFactory ? prettyFactory({ translateTime: 'SYS:standard', ignore: 'pid,hostname,service' }) : undefined;
  const log = pino(options, render === undefined ? sink : { write: (line: string) => sink.write(render(line)) });
  sink.reporter = log;
  return log;
}
