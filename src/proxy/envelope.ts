/**
 * The proxy's error envelope (docs/proxy.md#errors; public reference `proxy/src/errors.rs`):
 * `{"error":"<human text>","code":"<machine code>"}`, JSON, `Retry-After` on 429. Codes come from
 * the one registry (src/errors.ts); clients branch on `code`.
 */
import type { FastifyReply } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { QueenError, type ErrorCode } from '../errors.js';

/** Options of a refusal: `Retry-After` in seconds, a status other than the code's, `Connection: close`. */
export interface RefuseOptions {
  retryAfterS?: number;
  status?: number;
  close?: boolean;
}

/**
 * Requests that arrived with `Expect: 100-continue` and have not been sent their `100 Continue`
 * yet (the proxy listener's `checkContinue`, src/proxy/server.ts): the client holds the body back
 * until the head has passed every check ({@link inviteBody}); a refusal meanwhile closes the
 * connection instead of reading a body it never invited (RFC 9110 §10.1.1).
 */
const awaitingContinue = new WeakSet<IncomingMessage>();

/** Marks `req` as waiting for its `100 Continue` (see {@link inviteBody}). */
export function holdBody(req: IncomingMessage): void {
  awaitingContinue.add(req);
}

/** Sends `100 Continue` once to a request held by {@link holdBody}, just before its body is read; nothing otherwise. */
export function inviteBody(req: IncomingMessage, res: ServerResponse): void {
  if (!awaitingContinue.delete(req)) return;
  res.writeContinue();
}

/** True when the answer to `req` must close the connection because its body was never invited. */
const uninvited = (req: IncomingMessage | undefined): boolean => req !== undefined && awaitingContinue.has(req);

/** Answers `reply` with the envelope of `code` (its registry status), `message` overriding the default text. */
export function refuse(reply: FastifyReply, code: ErrorCode, message?: string, opts: RefuseOptions = {}): FastifyReply {
  const e = new QueenError(code, message);
  if (opts.retryAfterS !== undefined) reply.header('retry-after', String(opts.retryAfterS));
  if (opts.close || uninvited(reply.raw.req)) reply.header('connection', 'close');
  return reply.code(opts.status ?? e.status).type('application/json').send({ error: e.message, code: e.code });
}

/**
 * {@link refuse} on a raw response (the proxy listener's data plane, src/proxy/data-plane.ts): the
 * same status, headers (`content-type: application/json; charset=utf-8` as Fastify writes it,
 * `Retry-After`, `Connection: close`) and body. With `close`, or for a request whose body was
 * held back ({@link holdBody}), Node closes the connection once the answer is written.
 */
export function refuseRaw(res: ServerResponse, code: ErrorCode, message?: string, opts: RefuseOptions = {}): void {
  const e = new QueenError(code, message);
  const body = JSON.stringify({ error: e.message, code: e.code });
  if (opts.retryAfterS !== undefined) res.setHeader('retry-after', String(opts.retryAfterS));
  if (opts.close || uninvited(res.req)) res.setHeader('connection', 'close');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.writeHead(opts.status ?? e.status);
  res.end(body);
}
