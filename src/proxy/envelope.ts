/**
 * The proxy's error envelope (docs/proxy.md#errors; public reference `proxy/src/errors.rs`):
 * `{"error":"<human text>","code":"<machine code>"}`, JSON, `Retry-After` on 429. Codes come from
 * the one registry (src/errors.ts); clients branch on `code`.
 */
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import { QueenError, type ErrorCode } from '../errors.js';

/** Options of a refusal: `Retry-After` in seconds, a status other than the code's, `Connection: close`. */
export interface RefuseOptions {
  retryAfterS?: number;
  status?: number;
  close?: boolean;
}

/** Answers `reply` with the envelope of `code` (its registry status), `message` overriding the default text. */
export function refuse(reply: FastifyReply, code: ErrorCode, message?: string, opts: RefuseOptions = {}): FastifyReply {
  const e = new QueenError(code, message);
  if (opts.retryAfterS !== undefined) reply.header('retry-after', String(opts.retryAfterS));
  if (opts.close) reply.header('connection', 'close');
  return reply.code(opts.status ?? e.status).type('application/json').send({ error: e.message, code: e.code });
}

/**
 * {@link refuse} on a raw response (the proxy listener's data plane, src/proxy/data-plane.ts): the
 * same status, headers (`content-type: application/json; charset=utf-8` as Fastify writes it,
 * `Retry-After`, `Connection: close`) and body. With `close`, Node closes the connection once the
 * answer is written.
 */
export function refuseRaw(res: ServerResponse, code: ErrorCode, message?: string, opts: RefuseOptions = {}): void {
  const e = new QueenError(code, message);
  const body = JSON.stringify({ error: e.message, code: e.code });
  if (opts.retryAfterS !== undefined) res.setHeader('retry-after', String(opts.retryAfterS));
  if (opts.close) res.setHeader('connection', 'close');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.writeHead(opts.status ?? e.status);
  res.end(body);
}
