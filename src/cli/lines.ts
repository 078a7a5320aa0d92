/**
 * Bounded NDJSON line reading for queenctl's `push` and `ack --batch` (docs/cli.md#push).
 *
 * node:readline buffers a line however long it grows, so a stream without newlines (a binary
 * file, `/dev/zero`, a mis-split export) grew the process until it died. Lines here are cut at
 * `\n` on bytes and refused beyond {@link MAX_LINE_BYTES} as soon as that many bytes are pending,
 * with exit 1, as the reference CLI does (queen-mq/queen: clients/client-cli/cmd/push.go, a
 * 16 MiB scanner buffer and "input line too long").
 */
import fs from 'node:fs';
import { userError } from './errors.js';

/** Longest accepted input line, in bytes (16 MiB, the broker's default payload cap). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * The lines of `input` (UTF-8, without their `\n`; a trailing `\r` is kept for the caller's
 * `trim`), with their 1-based numbers.
 * @param maxBytes longest line in bytes
 * @throws CliError exit 1 naming the line when a line exceeds `maxBytes`
 */
export async function* readLines(input: NodeJS.ReadableStream, maxBytes = MAX_LINE_BYTES): AsyncGenerator<{ line: string; n: number; bytes: number }> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let n = 0;
  const tooLong = (): Error => userError(`input line ${n + 1} is longer than ${maxBytes} bytes; pre-split it (jq -c)`);
  for await (const c of input) {
    let chunk = typeof c === 'string' ? Buffer.from(c) : (c as Buffer);
    let nl: number;
    while ((nl = chunk.indexOf(0x0a)) !== -1) {
      if (pendingBytes + nl > maxBytes) throw tooLong();
      pending.push(chunk.subarray(0, nl));
      const line = Buffer.concat(pending, pendingBytes + nl);
      pending = [];
      pendingBytes = 0;
      chunk = chunk.subarray(nl + 1);
      yield { line: line.toString('utf8'), n: ++n, bytes: line.length + 1 };
    }
    if (pendingBytes + chunk.length > maxBytes) throw tooLong();
    if (chunk.length > 0) {
      pending.push(chunk);
      pendingBytes += chunk.length;
    }
  }
  if (pendingBytes > 0) yield { line: Buffer.concat(pending, pendingBytes).toString('utf8'), n: ++n, bytes: pendingBytes };
}

/**
 * The stream a `-f/--file` argument names: stdin for `-`, else the file.
 * @throws CliError exit 1 when the file cannot be opened for reading
 */
export function openInput(file: string): { input: NodeJS.ReadableStream; size?: number } {
  if (file === '-') return { input: process.stdin };
  let size: number;
  try {
    fs.accessSync(file, fs.constants.R_OK);
    size = fs.statSync(file).size;
  } catch (e) {
    throw userError(`open ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  return { input: fs.createReadStream(file), size };
}

/**
 * Exit 1 for line `n` that is not JSON. The parser's message quotes the line's start; control
 * characters in it are shown as `?` so binary input cannot drive the user's terminal.
 */
export function invalidJsonLine(n: number, e: unknown): Error {
  // eslint-disable-next-line no-control-regex
  const why = (e instanceof Error ? e.message : String(e)).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return userError(`invalid JSON line ${n}: ${why}`);
}
