/**
 * Request body `Content-Encoding` and the wording of body errors.
 *
 * `gzip`, `deflate` and `br` bodies are decoded as a stream; the decoded bytes count against
 * QUEEN_MAX_BODY_BYTES and decoding stops at the first byte over it (413 `body_too_large`), so a
 * small compressed body that expands to gigabytes (a decompression bomb) costs at most the limit.
 * `identity` (or no header) passes the body through; any other encoding, including a list of
 * several, answers 415 `unsupported_encoding`. The decoded bytes must be UTF-8, as JSON text is
 * (RFC 8259 §8.1): other bytes answer 400 `bad_json` instead of being read as U+FFFD.
 */
import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { QueenError } from '../errors.js';

/** Encodings the broker decodes. */
export const BODY_ENCODINGS = ['gzip', 'deflate', 'br'] as const;

function decoder(encoding: string): Transform | undefined {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    default:
      return undefined;
  }
}

/** A decoded body stream, with the encoded byte count Fastify checks against Content-Length. */
type Decoded = Transform & { receivedEncodedLength: number };

/** Bytes read so far of each request body counted by {@link capBody}, by raw request. */
const counted = new WeakMap<object, { received: number }>();

/**
 * `payload` (the body of `raw`, a request without `Content-Length`: chunked) passed through a
 * counter that errors with QueenError `payload_too_large` (413, `request body over <cap> bytes`)
 * at the first chunk past `capBytes` (the embedded proxy's cap, src/model/in-process.ts
 * PROXY_BODY_CAP). The count is readable with {@link bodyBytesRead}.
 */
export function capBody(raw: object, payload: Readable, capBytes: number): Readable {
  const state = { received: 0 };
  counted.set(raw, state);
  const out = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      state.received += chunk.length;
      if (state.received > capBytes) {
        cb(new QueenError('payload_too_large', `request body over ${capBytes} bytes`));
        return;
      }
      cb(null, chunk);
    },
  });
  payload.on('error', (e: Error) => { if (!out.destroyed) out.destroy(e); });
  out.on('error', () => payload.unpipe(out));
  payload.pipe(out);
  return out;
}

/** The bytes {@link capBody} counted of `raw`'s body (0 when it counted none). */
export function bodyBytesRead(raw: object): number {
  return counted.get(raw)?.received ?? 0;
}

/**
 * The stream of the decoded body for `header` (a request's `Content-Encoding`), or `payload` itself
 * for no encoding or `identity`.
 * @param limitBytes the largest decoded body, bytes (QUEEN_MAX_BODY_BYTES)
 * @param capBytes the embedded proxy's cap when the request came through it and the cap is below
 *   `limitBytes`: the decoded body past it errors with `payload_too_large` instead
 * @throws QueenError `unsupported_encoding` (415) naming the encoding
 * The returned stream errors with QueenError `body_too_large` (413) once the decoded body passes
 * `limitBytes`, and with `invalid_request` (400) when the body is not valid data of its encoding.
 */
export function decodeBody(header: string | string[] | undefined, payload: Readable, limitBytes: number, capBytes?: number): Readable {
  if (header === undefined) return payload;
  const raw = Array.isArray(header) ? header.join(', ') : header;
  const encoding = raw.trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return payload;
  const z = decoder(encoding);
  if (!z) {
    const shown = JSON.stringify(raw.slice(0, 64).replace(/[^\x20-\x7e]/g, '?'));
    throw new QueenError('unsupported_encoding', `unsupported Content-Encoding ${shown}: send the body as is or as one of ${BODY_ENCODINGS.join(', ')}`);
  }
  let decoded = 0;
  const out = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      decoded += chunk.length;
      if (capBytes !== undefined && decoded > capBytes) {
        cb(new QueenError('payload_too_large', `request body over ${capBytes} bytes`));
        return;
      }
      if (decoded > limitBytes) {
        cb(new QueenError('body_too_large', `decoded request body exceeds ${limitBytes} bytes (QUEEN_MAX_BODY_BYTES)`));
        return;
      }
      cb(null, chunk);
    },
  }) as Decoded;
  out.receivedEncodedLength = 0;
  payload.on('data', (c: Buffer) => { out.receivedEncodedLength += c.length; });
  const stop = (e: Error) => {
    payload.unpipe(z);
    z.destroy();
    if (!out.destroyed) out.destroy(e);
  };
  z.on('error', () => stop(new QueenError('invalid_request', `request body is not valid ${encoding} data`)));
  payload.on('error', (e: Error) => stop(e));
  out.on('error', () => { payload.unpipe(z); z.destroy(); });
  out.on('close', () => { payload.unpipe(z); z.destroy(); });
  payload.pipe(z).pipe(out);
  return out;
}

/**
 * The text of a decoded request body. Lenient decoding would turn every byte that is not UTF-8
 * into U+FFFD and store that in place of what was sent, so such a body is refused instead.
 * @throws QueenError `bad_json` (400) when `body` is not valid UTF-8 (stray continuation bytes,
 *   truncated or overlong sequences, encoded surrogates, bytes 0xF5…0xFF)
 */
export function bodyText(body: Buffer): string {
  if (!isUtf8(body)) throw new QueenError('bad_json', 'bad body: not valid UTF-8 (JSON text must be UTF-8)');
  return body.toString('utf8');
}

/**
 * What is wrong with a body `JSON.parse` refused, without any of the body's bytes: V8's messages
 * may quote the input, so only known phrases and the position are kept.
 * @returns `bad body: <what> [at position N]`
 */
export function describeJsonError(e: unknown): string {
  const m = e instanceof Error ? e.message : '';
  const pos = /\bat position (\d+)/.exec(m)?.[1];
  const what = /^Unexpected end of JSON/.test(m) ? 'the JSON ends early'
    : /^Unterminated string/.test(m) ? 'unterminated string'
    : /^Bad control character/.test(m) ? 'control character inside a string'
    : /^Bad (escaped character|Unicode escape)/.test(m) ? 'bad escape in a string'
    : /^Expected property name/.test(m) ? "expected a property name or '}'"
    : /^Expected ',' or '}'/.test(m) ? "expected ',' or '}'"
    : /^Expected ',' or ']'/.test(m) ? "expected ',' or ']'"
    : /^Expected ':'/.test(m) ? "expected ':'"
    : /^Unexpected non-whitespace character after JSON/.test(m) ? 'unexpected text after the JSON value'
    : /^Unexpected token '\uFEFF'/.test(m) ? 'a byte order mark (U+FEFF) at the start: JSON text must not begin with one (RFC 8259 §8.1)'
    : /^(Unexpected token|Unexpected number|Unexpected string)/.test(m) ? 'unexpected character'
    : 'malformed JSON';
  return `bad body: ${what}${pos !== undefined ? ` at position ${pos}` : ''}`;
}
