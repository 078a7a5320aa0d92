/**
 * The proxy's error envelope (docs/proxy.md#errors; public reference `proxy/src/errors.rs`):
 * `{"error":"<human text>","code":"<machine code>"}`, JSON, `Retry-After` on 429. Codes come from
 * the one registry (src/errors.ts); clients branch on `code`.
 */
import type { FastifyReply } from 'fastify';
import { QueenError, type ErrorCode } from '../errors.js';

/** Answers `reply` with the envelope of `code` (its registry status), `message` overriding the default text. */
export function refuse(reply: FastifyReply, code: ErrorCode, message?: string, opts: { retryAfterS?: number; status?: number; close?: boolean } = {}): FastifyReply {
  const e = new QueenError(code, message);
  if (opts.retryAfterS !== undefined) reply.header('retry-after', String(opts.retryAfterS));
  if (opts.close) reply.header('connection', 'close');
  return reply.code(opts.status ?? e.status).type('application/json').send({ error: e.message, code: e.code });
}
