/**
 * Maps every failure to the registry's `{"error", "code"}` answer. Fastify's own errors
 * (malformed JSON, schema validation, body limits, media types) become 4xx with stable codes;
 * only real storage or programming failures reach 500, and those are logged.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { ERRORS, isQueenError, QueenError } from '../errors.js';
import { headProblem } from '../util/http-head.js';
import { describeJsonError } from './body-encoding.js';

function fromFastify(e: FastifyError): QueenError | undefined {
  if (e.validation) {
    const where = e.validationContext ?? 'request';
    const first = e.validation[0];
    const path = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : '';
    const detail = first ? `${where}${path ? '.' + path : ''} ${first.message ?? 'is invalid'}` : e.message;
    return new QueenError('invalid_request', detail);
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new QueenError('body_too_large', `request body exceeds the configured limit (QUEEN_MAX_BODY_BYTES)`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new QueenError('unsupported_media_type', 'unsupported content type: send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new QueenError('invalid_request', 'body must not be empty');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new QueenError('invalid_request', 'content-length does not match the body');
    default:
      break;
  }
  if (e.statusCode === 413) return new QueenError('body_too_large');
  if (e.statusCode === 400 && e instanceof SyntaxError) return new QueenError('bad_json', describeJsonError(e));
  if (e.statusCode === 404) return new QueenError('no_such_route');
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return new QueenError('invalid_request', e.message);
  }
  return undefined;
}

/**
 * True when the raw path (no query) holds a dot segment (`/./`, `/../`, trailing `/.` or `/..`) or
 * an empty segment (`//`): refused with 400 so that no normalisation anywhere can make the router
 * and the access-level table judge different paths (docs/security.md#path-hygiene).
 */
export function unsafePath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path.includes('//') || /\/\.\.?(?:\/|$)/.test(path);
}

/**
 * The first query parameter of `url` whose text is not valid percent-encoded UTF-8 (a `%` not
 * followed by two hex digits, or escapes that decode to no UTF-8 character), named as sent (decoded
 * when its name itself decodes); undefined when every parameter decodes. Fastify's query parser
 * keeps a broken escape as its three characters, so `%FF` and `%25FF` would read as one name
 * (RFC 3986 §2.1, WHATWG URL's application/x-www-form-urlencoded parser refuses neither). Only a
 * query holding a `%` is examined.
 */
export function brokenQueryParameter(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q === -1 || url.indexOf('%', q) === -1) return undefined;
  for (const pair of url.slice(q + 1).split('&')) {
    if (!pair.includes('%')) continue;
    try {
      decodeURIComponent(pair);
    } catch {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      try { return decodeURIComponent(name.replace(/\+/g, ' ')); } catch { return name; }
    }
  }
  return undefined;
}

/** The answer to a URL the router cannot even decode (Fastify's own framework errors). */
export function frameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const e = error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_ASYNC_CONSTRAINT'
    ? new QueenError('invalid_path')
    : new QueenError('invalid_request', error.message);
  void reply.code(e.status).type('application/json').send(e.toJSON());
}

/** Writes `e` as the registry's JSON answer on a raw Node response, closing the connection. */
function answerRaw(res: ServerResponse, e: QueenError): void {
  const body = JSON.stringify(e.toJSON());
  res.shouldKeepAlive = false;
  res.writeHead(e.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

/**
 * Wraps the app's request handler with the answers Node would otherwise give bare (no body):
 * a missing or repeated `Host` (400 `invalid_request`, src/util/http-head.ts; the server must be
 * created with `requireHostHeader: false` so a request without one reaches this check) and a request arriving while
 * the app closes (503 `shutting_down`, instead of Fastify's body without a code).
 * @param isClosing true once the app has begun to close
 */
export function nodeLevelGuard(handler: RequestListener, isClosing: () => boolean): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const head = headProblem(req);
    if (head !== undefined) return answerRaw(res, head);
    if (isClosing()) return answerRaw(res, new QueenError('shutting_down'));
    handler(req, res);
  };
}

/**
 * Answers an `Expect` other than `100-continue` with 417 `expectation_failed` in the registry
 * shape (Node's own answer has no body), without running any route; and `Expect: 100-continue`
 * itself: a `Content-Length` over `maxBodyBytes` is answered 413 `body_too_large` without the
 * `100 Continue` that would invite the client to send the body, any other request gets its
 * `100 Continue` and goes to the server's request handler as usual (with a `checkContinue`
 * listener Node sends neither by itself).
 * @param maxBodyBytes QUEEN_MAX_BODY_BYTES
 */
export function installNodeLevelAnswers(server: Server, maxBodyBytes: number): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const what = String(req.headers.expect ?? '').slice(0, 64).replace(/[^\x20-\x7e]/g, '?');
    answerRaw(res, new QueenError('expectation_failed', `unsupported Expect: ${JSON.stringify(what)}; only 100-continue is supported`));
  });
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const declared = Number(req.headers['content-length']);
    if (declared > maxBodyBytes) {
      return answerRaw(res, new QueenError('body_too_large', `a request body of ${declared} bytes exceeds ${maxBodyBytes} bytes (QUEEN_MAX_BODY_BYTES)`));
    }
    res.writeContinue();
    server.emit('request', req, res);
  });
}

/**
 * Codes answered with `Retry-After: 1` (seconds): the refusal lasts until the database accepts
 * writes (or connections) again, or until the other writers of the same rows are done.
 */
const RETRY_LATER: ReadonlySet<string> = new Set(['db_read_only', 'standby', 'db_unavailable', 'write_contention']);

/** Installs the error and not-found handlers on `app`. */
export function installErrorHandling(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => { // callback style: no promise per request
    if (unsafePath(request.url)) {
      reply.code(400).type('application/json').send(new QueenError('invalid_path').toJSON());
      return;
    }
    const broken = brokenQueryParameter(request.url);
    if (broken !== undefined) {
      const e = new QueenError('invalid_request', `query parameter ${JSON.stringify(broken)} is not valid percent-encoded UTF-8 (a % must start an escape of two hex digits, and the escapes must spell UTF-8)`);
      reply.code(400).type('application/json').send(e.toJSON());
      return;
    }
    // Every path segment and query value names something (a queue, a group, a key, a time): none may
    // hold a NUL (docs/http-api.md#conventions). In a well-formed URL `%00` can only be that escape.
    if (request.url.includes('%00')) {
      reply.code(400).type('application/json').send(new QueenError('invalid_name', 'a path segment or query parameter contains a NUL character (%00)').toJSON());
      return;
    }
    done();
  });
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const qe = isQueenError(error) ? error : fromFastify(error);
    if (qe) {
      if (RETRY_LATER.has(qe.code)) {
        // The database refuses writes for now (docs/cluster.md#failures), or other writers kept winning: the client retries, nothing is logged per request.
        return reply.code(qe.status).header('retry-after', '1').type('application/json').send(qe.toJSON());
      }
      // A 503 declines by a state the broker is in (maintenance, stopping, ephemeral limits), which is
      // logged where the state changes: per request it is noise at `debug`, not an error. Other 5xx are.
      if (qe.status === 503) request.log.debug({ code: qe.code }, qe.message);
      else if (qe.status >= 500) request.log.error({ code: qe.code }, qe.message);
      return reply.code(qe.status).type('application/json').send(qe.toJSON());
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).type('application/json').send({ error: ERRORS.internal_error.message, code: 'internal_error' });
  });
  app.setNotFoundHandler((request, reply) => {
    const e = new QueenError('no_such_route', `no such route: ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(404).type('application/json').send(e.toJSON());
  });
}
