/**
 * Checks on a request head shared by every HTTP listener (the broker's PORT, src/http/errors.ts,
 * and the proxy's, src/proxy/server.ts), so that both refuse the same framing.
 */
import http, { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { QueenError } from '../errors.js';

/** How many `Host` lines `raw` (Node's `rawHeaders`: name, value, name, …) holds; Node keeps the first of several. */
function hostLines(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}

/**
 * Header lines a request may carry at most. Node keeps the first 2,000 and silently drops the rest;
 * listeners are set to keep {@link MAX_HEADER_LINES} + 1 ({@link HEADER_LINES_KEPT}) so that a
 * request over the limit is refused (`431 request_headers_too_large`, {@link tooManyHeaderLines})
 * instead of being served without some of its headers.
 */
export const MAX_HEADER_LINES = 100;
/** The `maxHeadersCount` of every listener: one more than {@link MAX_HEADER_LINES}, so an excess is seen. */
export const HEADER_LINES_KEPT = MAX_HEADER_LINES + 1;

/** True when `req` carries more than {@link MAX_HEADER_LINES} header lines. */
function tooManyHeaderLines(req: IncomingMessage): boolean {
  return req.rawHeaders.length > 2 * MAX_HEADER_LINES;
}

/**
 * What every listener refuses in a request's head before any route runs, or undefined: more than
 * {@link MAX_HEADER_LINES} header lines (checked first: past the limit Node keeps no more headers,
 * so a `Host` after them would read as missing), then a missing or repeated `Host` ({@link hostProblem}).
 * @returns `request_headers_too_large` (431) or `invalid_request` (400)
 */
export function headProblem(req: IncomingMessage): QueenError | undefined {
  if (tooManyHeaderLines(req)) return new QueenError('request_headers_too_large', `more than ${MAX_HEADER_LINES} header lines`);
  const host = hostProblem(req);
  return host === undefined ? undefined : new QueenError('invalid_request', host);
}

/**
 * What is wrong with the request's `Host`, or undefined when nothing is: an HTTP/1.1 request
 * without one, or a request with several lines (RFC 9112 §3.2: a server answers 400 to both; Node
 * would keep the first of several). The server must be created with `requireHostHeader: false` for
 * a request without `Host` to reach this check.
 */
export function hostProblem(req: IncomingMessage): string | undefined {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) return 'an HTTP/1.1 request needs a Host header';
  if (hostLines(req.rawHeaders) > 1) return 'a request must carry one Host header, not several (RFC 9112 §3.2)';
  return undefined;
}

/**
 * Bytes of a declared body Node may read and discard after an early answer to keep the connection
 * (a refused small push costs less read than a new connection, and a TLS handshake, would).
 */
const DISCARD_BYTES = 64 * 1024;

/**
 * True when `req`'s body has not all arrived and is not worth reading to keep the connection:
 * chunked (of unknown length) or a `Content-Length` over {@link DISCARD_BYTES}.
 */
export function bodyPending(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const h = req.headers;
  return h['transfer-encoding'] !== undefined || Number(h['content-length'] ?? 0) > DISCARD_BYTES;
}

type Headers = http.OutgoingHttpHeaders | http.OutgoingHttpHeader[];

/** How long a connection closed under a request's unread body keeps reading and discarding it, ms. */
export const LINGER_MS = 2000;

/**
 * How long a request's head may take to arrive, ms, counted from the connection's opening for its
 * first request and from a later request's first byte (idle keep-alive time is not counted): longer and the
 * listener answers `408 request_timeout` and closes (a client that opens a connection and trickles
 * a head holds a socket no longer). The edge default of the reference's hardening (10 s).
 */
export const HEADER_READ_TIMEOUT_MS = 10_000;

/** How often Node checks its connections against {@link HEADER_READ_TIMEOUT_MS}, ms (Node's default is 30 s). */
export const CONNECTIONS_CHECK_MS = 1000;

/** The head limits of every listener, as `http.createServer` options: a head that never ends is answered 408 within about 11 s. */
export const HEAD_TIMEOUTS = { headersTimeout: HEADER_READ_TIMEOUT_MS, connectionsCheckingInterval: CONNECTIONS_CHECK_MS } as const;

/**
 * Sets the head limits on a created listener: {@link HEADER_LINES_KEPT} header lines (no
 * `createServer` option) and the header-read timeout again (an `https` server may not take every
 * option from `createServer`'s).
 */
export function limitHeads(server: http.Server): void {
  server.maxHeadersCount = HEADER_LINES_KEPT;
  server.headersTimeout = HEADER_READ_TIMEOUT_MS;
}

/**
 * Closes `socket` the way a server closes under a client still sending (a lingering close): Node
 * ends a connection that is not kept alive with `destroySoon()` once the answer is written, and
 * destroying a socket with unread data in it makes the kernel send a reset, which can discard the
 * answer at the client before it was read. Here the end is sent, what still arrives is read and
 * discarded (the request is dumped), and the socket is destroyed when the client closes or after
 * {@link LINGER_MS}.
 */
function linger(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket): void {
    this.end();
    destroyAfterLinger(this);
  };
}

/** Destroys `socket` {@link LINGER_MS} from now unless it closed before. */
function destroyAfterLinger(socket: Socket): void {
  const t = setTimeout(() => socket.destroy(), LINGER_MS);
  t.unref();
  socket.once('close', () => clearTimeout(t));
}

/**
 * The `ServerResponse` class of every listener (the `ServerResponse` option of
 * `http.createServer` / `https.createServer`): an answer written before its request's body has all
 * arrived (refused from the head: a bad path, query, tenant or token, a route that does not exist,
 * a body over a cap) carries `Connection: close` and the connection closes after it, rather than
 * Node reading, to keep the connection, the rest of a body nobody will use (a chunked one can be
 * endless), unless the body is small ({@link bodyPending}).
 */
export class ClosingResponse extends http.ServerResponse {
  override writeHead(statusCode: number, reason?: string | Headers, headers?: Headers): this {
    if (this.shouldKeepAlive && bodyPending(this.req)) {
      this.shouldKeepAlive = false;
      if (this.socket) linger(this.socket);
    }
    return typeof reason === 'string' ? super.writeHead(statusCode, reason, headers) : super.writeHead(statusCode, reason);
  }
}

/** Sockets {@link clientErrorAnswer} answered and is closing. */
const answered = new WeakSet<Socket>();

/**
 * A `clientError` handler (Node's HTTP parser refused the request before any route ran: oversized
 * headers, malformed framing, a timeout) that answers in the registry's `{"error","code"}` shape
 * with `extra` headers (lowercase name, value), then closes the connection. A reset connection
 * gets nothing, and nothing is logged: a client can cause these at connection rate.
 */
export function clientErrorAnswer(extra: readonly (readonly [string, string])[] = []): (err: Error & { code?: string }, socket: Socket) => void {
  const lines = extra.map(([n, v]) => `${n}: ${v}\r\n`).join('');
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (answered.has(socket)) return; // the parser refuses what still arrives: already answered, lingering
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    answered.add(socket);
    const e = err.code === 'HPE_HEADER_OVERFLOW' ? new QueenError('request_headers_too_large')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? new QueenError('request_timeout')
      : new QueenError('invalid_request', 'malformed HTTP request');
    const body = JSON.stringify(e.toJSON());
    // A lingering close (see linger): the client may still be sending (the rest of an oversized
    // header, a body), and destroying the socket now would reset the answer away.
    socket.end(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Content-Type: application/json\r\n${lines}Connection: close\r\n\r\n${body}`);
    socket.resume(); // what still arrives is read and dropped
    destroyAfterLinger(socket);
  };
}

/** {@link clientErrorAnswer} without extra headers (the broker's PORT). */
export const clientError = clientErrorAnswer();
