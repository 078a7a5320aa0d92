/**
 * The embedded proxy's listener (docs/proxy.md; public reference `proxy/src/proxy_embed.rs`,
 * `proxy/src/gateway.rs`, `proxy/src/harden.rs`): plain HTTP or TLS 1.2/1.3, and one request
 * handler on the raw request that decides every request before any body is read:
 *
 * 1. security headers on every answer; per-IP token bucket (`/health` exempt) → `429 rate_limited`
 *    + `Retry-After`;
 * 2. dot or empty segments, also `%2e`-encoded → `400 invalid_path`;
 * 3. `/health` to the broker unauthenticated; a verified relay (`x-queen-eph-fwd` with the right
 *    `x-queen-raft-token`) to `/api/v1/ephemeral/…` to the broker router unchanged;
 * 4. the proxy's own routes, served by its Fastify app with a head hook: `/metrics*` only with the
 *    control-plane token (else `404 not_found`); `/api/cp/*` with `x-queen-cp-token` (unset → 404,
 *    wrong → 401, then a 1 MiB body cap); `/auth/*` and `POST /api/login` → the session routes
 *    (src/proxy/sessions.ts), after the cross-site origin check (`403 csrf_rejected`) for a
 *    state-changing request carrying the cookie; `/console`, `/api/console/*` → the console
 *    (src/proxy/console.ts), after the same origin check;
 * 5. anything else: the data plane (src/proxy/data-plane.ts), on the raw request without a Fastify
 *    request cycle of the proxy's own, then the broker router in process.
 *
 * Never logs a key, token, hash or cookie value.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { SessionTokens } from '../auth/proxy/sessions.js';
import type { ProxyState } from '../auth/proxy/state.js';
import { S3Settings } from '../auth/proxy/s3.js';
import type { KeyRing } from '../crypto/keyring.js';
import { routerPath } from '../auth/request-path.js';
import type { ProxyConfig } from '../config/proxy.js';
import { QueenError } from '../errors.js';
import type { Clock } from '../util/clock.js';
import { clientErrorAnswer, HEAD_TIMEOUTS, headProblem, limitHeads } from '../util/http-head.js';
import { sameSecret } from '../util/secret.js';
import { controlPlaneRoutes } from './cp.js';
import { dataPlane } from './data-plane.js';
import { holdBody, inviteBody, refuse, refuseRaw } from './envelope.js';
import { responseWithHeaders } from './response.js';
import { brokerCaller, type BrokerRouter } from './forward.js';
import { Quotas, type TenantReads } from './quotas.js';
import type { CoordinationPurge } from './cp.js';
import { Buckets, clientIp, ipKey } from './limits.js';
import { Meter } from './meter.js';
import { consoleRoutes } from './console.js';
import { oauthRoutes } from './oauth.js';
import { unsafeProxyPath } from './routes.js';
import { changesState, originAllowed, registerSessionParsers, sessionCredential, sessionRoutes } from './sessions.js';

/** Control-plane bodies are capped at 1 MiB. */
export const CP_BODY_LIMIT = 1024 * 1024;

/** What {@link buildProxy} needs. */
export interface ProxyDeps {
  config: ProxyConfig;
  state: ProxyState;
  /** The broker router, called in process. */
  router: BrokerRouter;
  /** The broker's Prometheus text (in process). */
  brokerMetrics: () => Promise<string>;
  log: Logger;
  clock: Clock;
  /** Request header cap in bytes (`QUEEN_MAX_HEADER_BYTES`). */
  maxHeaderBytes: number;
  /** `QUEEN_RAFT_TOKEN`: a verified relay to `/api/v1/ephemeral/…` goes to the broker router as is. */
  raftToken: string | undefined;
  /** What each tenant holds in the broker, and the purge of its KV, locks and timers (src/broker/admin/tenant-usage.ts). */
  usage: TenantReads & CoordinationPurge;
  /** The `QUEEN_ENCRYPTION_KEY` ring that seals S3 secrets; null without a key (`409 encryption_required`). */
  keyRing: KeyRing | null;
}

function header(req: { headers: http.IncomingHttpHeaders }, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** True when `req` shows the control-plane token (`x-queen-cp-token`, or `Bearer` when `bearerToo`). */
function cpTokenOk(req: FastifyRequest, token: string | undefined, bearerToo: boolean): boolean {
  if (token === undefined) return false;
  const given = header(req, 'x-queen-cp-token');
  if (given !== undefined && sameSecret(given, token)) return true;
  const auth = header(req, 'authorization');
  return bearerToo && auth !== undefined && auth.startsWith('Bearer ') && sameSecret(auth.slice(7), token);
}

/** True for the proxy's own routes (`path` is the router path), served by its Fastify app. */
function ownRoute(method: string, path: string): boolean {
  return path === '/metrics' || path === '/metrics/prometheus' || path === '/api/cp' || path.startsWith('/api/cp/')
    || path.startsWith('/auth/') || (path === '/api/login' && method === 'POST')
    || path === '/console' || path.startsWith('/console/') || path.startsWith('/api/console/');
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/**
 * Creates the proxy app (not listening). Its server's request handler is the listener's front
 * (see the module comment); the app itself serves only the proxy's own routes.
 */
export async function buildProxy(deps: ProxyDeps): Promise<{ app: FastifyInstance; meter: Meter }> {
  const { config, state, router, log, clock } = deps;
  const meter = new Meter();
  const brokerCall = brokerCaller(router);
  const quotas = new Quotas(deps.usage, meter, log, config.enforce, clock, config.storageSampleMs);
  const tokens = new SessionTokens(config.sessions, state.store, clock);
  // The session deny-list is pruned of expired entries at boot, on every logout and hourly.
  tokens.prune();
  let pruneTimer = clock.setTimer(function prune() {
    tokens.prune();
    pruneTimer = clock.setTimer(prune, 3_600_000);
  }, 3_600_000);
  const edge = new Buckets();
  const clusters = new Buckets();
  // highWaterMark: a response larger than a socket's write buffer leaves it `needDrain`; a request
  // arriving on a TLS socket meanwhile made Node 20's parser fail with HPE_PAUSED (the socket was
  // reset). 1 MiB covers answers of up to 1 MiB.
  // Security headers on every answer of the proxy listener (docs/proxy.md#forwarding), also on the
  // answers the broker router writes: added by the response class as the status line is written.
  const securityHeaders: [string, string][] = [
    ['x-content-type-options', 'nosniff'], ['x-frame-options', 'DENY'], ['referrer-policy', 'no-referrer'], ['cross-origin-resource-policy', 'same-origin'],
    ...(config.tls ? [['strict-transport-security', 'max-age=31536000']] as [string, string][] : []),
  ];
  const serverOptions = { ServerResponse: responseWithHeaders(securityHeaders), maxHeaderSize: deps.maxHeaderBytes, noDelay: true, keepAliveTimeout: 65_000, requireHostHeader: false, highWaterMark: 1024 * 1024,
    ...HEAD_TIMEOUTS };
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: CP_BODY_LIMIT,
    forceCloseConnections: 'idle',
    clientErrorHandler: clientErrorAnswer(securityHeaders), // the JSON 4xx PORT gives, with the listener's headers
    return503OnClosing: true,
    // With a server factory Fastify reads `https` only to write its listening lines' scheme.
    ...(config.tls ? { https: {} } : {}),
    serverFactory: (handler) => {
      const entry: Handler = (req, res) => {
        try {
          front(req, res, handler); // declared below; requests arrive once the app is built
        } catch (e) {
          log.error({ err: e }, 'proxy request failed');
          if (!res.headersSent) refuseRaw(res, 'internal_error');
          else res.destroy();
        }
      };
      const server = config.tls
        ? https.createServer({ ...serverOptions, cert: config.tls.cert, key: config.tls.key, minVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'], handshakeTimeout: 10_000 }, entry)
        : http.createServer(serverOptions, entry);
      // Set on the server itself: https.createServer does not take it from the options, and an idle
      // TLS socket closed at Node's 5 s default is reset under a client that reuses it.
      server.keepAliveTimeout = 65_000;
      if (config.tls) {
        // The TLS socket's own write buffer, which the option above does not reach (Node 20).
        server.on('secureConnection', (socket: { _writableState?: { highWaterMark: number } }) => {
          if (socket._writableState) socket._writableState.highWaterMark = 1024 * 1024;
        });
      }
      // `Expect: 100-continue`: no automatic 100; the head's checks run first and the body is
      // invited just before it is read (envelope.ts inviteBody), a refusal closes instead. Any
      // other expectation: 417 in the envelope (Node's own answer has no body).
      server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
        holdBody(req);
        server.emit('request', req, res);
      });
      server.on('checkExpectation', (_req: http.IncomingMessage, res: http.ServerResponse) => {
        refuseRaw(res, 'expectation_failed', 'unsupported Expect; only 100-continue is supported', { close: true });
      });
      server.on('tlsClientError', (e: Error & { code?: string }) => log.debug({ code: e.code }, 'proxy TLS client error'));
      limitHeads(server); // the head limits every listener has (docs/proxy.md#tls)
      return server;
    },
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      done(new QueenError('invalid', `invalid JSON body: ${(e as Error).message}`), undefined);
    }
  });
  app.setErrorHandler((error: Error & { code?: string; statusCode?: number; validation?: unknown }, req, reply) => {
    if (error instanceof QueenError) return refuse(reply, error.code, error.message);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // A body without Content-Length (chunked) over the route's cap, found while reading it.
      const limit = req.routeOptions.bodyLimit ?? CP_BODY_LIMIT;
      const text = limit === CP_BODY_LIMIT && req.url.startsWith('/api/cp') ? 'control-plane request body over 1 MiB' : `request body over ${limit} bytes`;
      return refuse(reply, 'payload_too_large', text, { close: true });
    }
    if (error.validation) return refuse(reply, 'invalid', error.message);
    if (error.statusCode !== undefined && error.statusCode < 500) return refuse(reply, 'invalid', error.message, { status: error.statusCode });
    log.error({ err: error }, 'proxy request failed');
    return refuse(reply, 'internal_error');
  });
  app.setNotFoundHandler((_req, reply) => refuse(reply, 'not_found'));
  // A shared proxy store (PostgreSQL) makes writes durable asynchronously: no answer leaves before
  // the writes made so far are (a refused write answers 503 unavailable, once).
  if (state.store.settled) {
    const settled = state.store.settled.bind(state.store);
    app.addHook('onSend', async () => {
      try {
        await settled();
      } catch (e) {
        throw new QueenError('unavailable', `the proxy state could not be written: ${(e as Error).message}`);
      }
    });
  }
  await registerSessionParsers(app); // the cookie hook runs before the head hook below

  const plane = dataPlane({ config, state, router, log, clock, meter, quotas, tokens, clusters });
  let closing = false;
  app.addHook('preClose', (done) => { closing = true; done(); });

  // Without trusted proxies a client's address is its connection's peer: its bucket key is computed once per connection.
  const edgeKeys = new WeakMap<object, string>();
  const edgeKey = (req: http.IncomingMessage): string => {
    let key = edgeKeys.get(req.socket);
    if (key !== undefined) return key;
    key = ipKey(clientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], config.trustedProxies));
    if (config.trustedProxies.length === 0) edgeKeys.set(req.socket, key);
    return key;
  };

  /**
   * The listener's request handler, on the raw request: the edge bucket, the path check, `/health`
   * and verified relays to the broker router; the proxy's own routes (`/metrics*`, `/api/cp/*`,
   * `/auth/*`, `POST /api/login`, `/console`, `/api/console/*`) to the proxy app (`fastify`, its
   * routing function); anything else to the data plane (src/proxy/data-plane.ts).
   */
  function front(req: http.IncomingMessage, res: http.ServerResponse, fastify: Handler): void {
    if (closing) {
      // As Fastify's return503OnClosing: the listener is closing, nothing new is started.
      res.setHeader('connection', 'close');
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': '80' });
      res.end('{"error":"Service Unavailable","message":"Service Unavailable","statusCode":503}');
      return;
    }
    const head = headProblem(req);
    if (head !== undefined) return refuseRaw(res, head.code, head.message, { close: true });
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    if (rawPath !== '/health') {
      const c = edge.charge(edgeKey(req), config.edgeRate, config.edgeBurst);
      if (!c.ok) return refuseRaw(res, 'rate_limited', 'too many requests from this address', { retryAfterS: c.retryAfterS });
    }
    if (unsafeProxyPath(rawPath)) return refuseRaw(res, 'invalid_path');
    const path = routerPath(url);
    if (path === '/health') return plane.forward(req, res, undefined, path);
    if (path.startsWith('/api/v1/ephemeral/') && deps.raftToken !== undefined && header(req, 'x-queen-eph-fwd') !== undefined) {
      const token = header(req, 'x-queen-raft-token');
      // A verified relay between brokers: the router checks it again and honours its tenant.
      if (token !== undefined && sameSecret(token, deps.raftToken)) {
        inviteBody(req, res);
        return router(req, res);
      }
    }
    if (ownRoute(req.method ?? 'GET', path)) return fastify(req, res);
    plane.handle(req, res, path);
  }

  // The proxy's own routes: the checks on their head, before any body is read.
  app.addHook('onRequest', async (req, reply) => {
    const path = routerPath(req.url);
    if (path === '/metrics' || path === '/metrics/prometheus') {
      if (!cpTokenOk(req, config.cpToken, true)) return refuse(reply, 'not_found');
      const text = (await deps.brokerMetrics()) + (await meter.registry.metrics());
      return reply.code(200).header('cache-control', 'no-cache').type('text/plain; version=0.0.4; charset=utf-8').send(text);
    }
    if (path.startsWith('/api/cp/') || path === '/api/cp') {
      if (config.cpToken === undefined) return refuse(reply, 'not_found', undefined, { close: true });
      if (!cpTokenOk(req, config.cpToken, false)) return refuse(reply, 'unauthorized', 'bad control-plane token', { close: true });
      const length = Number(req.headers['content-length'] ?? 0);
      if (length > CP_BODY_LIMIT) return refuse(reply, 'payload_too_large', 'control-plane request body over 1 MiB', { close: true });
      return; // the control-plane routes read the body (1 MiB cap)
    }
    if (path.startsWith('/auth/') || (path === '/api/login' && req.method === 'POST')) {
      const credential = sessionCredential(req, path, config);
      if (credential?.from === 'cookie' && changesState(req.method) && !originAllowed(req, config)) return refuse(reply, 'csrf_rejected');
      if (Number(req.headers['content-length'] ?? 0) > 16 * 1024) return refuse(reply, 'payload_too_large', 'request body over 16384 bytes', { close: true });
      return; // the session routes
    }
    const credential = sessionCredential(req, path, config);
    if (credential?.from === 'cookie' && changesState(req.method) && !originAllowed(req, config)) return refuse(reply, 'csrf_rejected');
    // the console routes (src/proxy/console.ts)
  });
  // Reached only by heads the hook above let through: a held body is invited now (envelope.ts).
  app.addHook('onRequest', (req, reply, done) => {
    inviteBody(req.raw, reply.raw);
    done();
  });

  await app.register(controlPlaneRoutes, { state, meter, broker: brokerCall, purge: deps.usage, s3: new S3Settings(state, deps.keyRing, clock) });
  await app.register(sessionRoutes, { config, state, tokens, clock });
  await app.register(oauthRoutes, { config, state, tokens });
  await app.register(consoleRoutes, { config, state, tokens });
  app.addHook('onClose', async () => clock.clearTimer(pruneTimer));
  return { app, meter };
}
