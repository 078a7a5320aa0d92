/**
 * The embedded proxy's listener (docs/proxy.md; public reference `proxy/src/proxy_embed.rs`,
 * `proxy/src/gateway.rs`, `proxy/src/harden.rs`): plain HTTP or TLS 1.2/1.3, and one head hook
 * that decides every request before any body is read:
 *
 * 1. per-IP token bucket (`/health` exempt) → `429 rate_limited` + `Retry-After`;
 * 2. dot or empty segments, also `%2e`-encoded → `400 invalid_path`;
 * 3. fixed routes: `/health` to the broker unauthenticated; a verified relay (`x-queen-eph-fwd` with
 *    the right `x-queen-raft-token`) to `/api/v1/ephemeral/…` to the broker router unchanged; `/metrics*` only with the control-plane
 *    token (else `404 not_found`); `/api/cp/*` with `x-queen-cp-token` (unset → 404, wrong → 401,
 *    then a 1 MiB body cap); `/auth/*` and `POST /api/login` → the session routes (src/proxy/sessions.ts), after the
 *    cross-site origin check (`403 csrf_rejected`) for a state-changing request carrying the cookie;
 *    `/console`, `/api/console/*` → the console (src/proxy/console.ts), after the same origin check;
 * 4. data plane: classify (src/proxy/routes.ts; Blocked, and Operator while
 *    `QUEEN_PROXY_OPERATOR_ENABLED` is off → `404 route_blocked` before authentication) → API key
 *    (`401 unauthorized`) or session (bearer wins over the cookie; the origin check for a
 *    state-changing cookie request; the acting cluster; the role, src/auth/proxy/roles.ts; an Operator
 *    route refused to anyone but a live operator answers the same 404) → cluster status (`403 cluster_suspended`) →
 *    plan feature (`403 feature_gated`) → push blocked (`403 push_blocked`) → scopes (`403
 *    forbidden`) → cluster rate (`429 rate_limited`, or logged and counted in shadow mode) → body
 *    cap (`413 payload_too_large`) → parked long-polls (`403 quota_exceeded`, or shadow) → the body
 *    quotas (queues, partitions, stored bytes, messages per second, retention), stamped for the broker router's hook (src/proxy/quotas.ts) → the broker router, in process (src/proxy/forward.ts), within an
 *    upstream budget (a long-poll pop's own timeout plus a margin; else `QUEEN_PROXY_REQUEST_TIMEOUT_MS`)
 *    after which the proxy answers `504 upstream_timeout`.
 *
 * Never logs a key, token, hash or cookie value.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { keyAllows, presentedKey, type RouteClass } from '../auth/proxy/api-keys.js';
import { isLiveOperator, resolveRole, roleAllows, selectableClusters } from '../auth/proxy/roles.js';
import { SessionTokens } from '../auth/proxy/sessions.js';
import type { KeyGrant, LimitName, ProxyState } from '../auth/proxy/state.js';
import { S3Settings } from '../auth/proxy/s3.js';
import type { KeyRing } from '../crypto/keyring.js';
import { routerPath } from '../auth/request-path.js';
import type { ProxyConfig } from '../config/proxy.js';
import { QueenError } from '../errors.js';
import type { Clock } from '../util/clock.js';
import { sameSecret } from '../util/secret.js';
import { controlPlaneRoutes } from './cp.js';
import { refuse } from './envelope.js';
import { PROXY_QUOTA } from '../model/in-process.js';
import { armUpstreamBudget, brokerCaller, isLongPoll, isPop, prepareForBroker, upstreamBudgetMs, type BrokerRouter } from './forward.js';
import { Quotas, type TenantReads } from './quotas.js';
import type { CoordinationPurge } from './cp.js';
import { Buckets, clientIp, ipKey } from './limits.js';
import { Meter } from './meter.js';
import { consoleRoutes } from './console.js';
import { oauthRoutes } from './oauth.js';
import { classify, unsafeProxyPath } from './routes.js';
import { actingCluster, changesState, originAllowed, registerSessionParsers, sessionCredential, sessionRoutes, verifySession } from './sessions.js';

/** The limits checked on a forwarded request's parsed body (src/proxy/quotas.ts): with none set, no check is stamped. */
const BODY_LIMITS = [
  'max_queues', 'max_partitions_per_queue', 'max_retention_seconds', 'max_batch_items', 'max_retained_bytes', 'max_msgs_per_sec',
] as const satisfies readonly LimitName[];

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

function header(req: FastifyRequest, name: string): string | undefined {
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

/** Creates the proxy app (not listening). */
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
  const serverOptions = { maxHeaderSize: deps.maxHeaderBytes, noDelay: true, keepAliveTimeout: 65_000, requireHostHeader: false, highWaterMark: 1024 * 1024 };
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: CP_BODY_LIMIT,
    forceCloseConnections: 'idle',
    clientErrorHandler: (err: Error & { code?: string }, socket) => {
      log.warn({ code: err.code, message: err.message }, 'proxy client error');
      socket.destroy();
    },
    return503OnClosing: true,
    serverFactory: (handler) => {
      const server = config.tls
        ? https.createServer({ ...serverOptions, cert: config.tls.cert, key: config.tls.key, minVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'], handshakeTimeout: 10_000 }, handler)
        : http.createServer(serverOptions, handler);
      // Set on the server itself: https.createServer does not take it from the options, and an idle
      // TLS socket closed at Node's 5 s default is reset under a client that reuses it.
      server.keepAliveTimeout = 65_000;
      if (config.tls) {
        // The TLS socket's own write buffer, which the option above does not reach (Node 20).
        server.on('secureConnection', (socket: { _writableState?: { highWaterMark: number } }) => {
          if (socket._writableState) socket._writableState.highWaterMark = 1024 * 1024;
        });
      }
      server.on('tlsClientError', (e: Error & { code?: string }) => log.debug({ code: e.code }, 'proxy TLS client error'));
      server.headersTimeout = 10_000 + 65_000; // the header-read budget starts when the idle socket was last used
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

  // Security headers on every answer of the proxy listener (docs/proxy.md#forwarding).
  const securityHeaders: [string, string][] = [
    ['x-content-type-options', 'nosniff'], ['x-frame-options', 'DENY'], ['referrer-policy', 'no-referrer'], ['cross-origin-resource-policy', 'same-origin'],
    ...(config.tls ? [['strict-transport-security', 'max-age=31536000']] as [string, string][] : []),
  ];
  /** The query of `url` (empty when none). */
  const queryOf = (url: string): URLSearchParams => {
    const q = url.indexOf('?');
    return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
  };
  const forward = (req: FastifyRequest, reply: FastifyReply, tenant: string | undefined, path: string, query?: URLSearchParams): void => {
    prepareForBroker(req.raw, tenant);
    reply.hijack();
    const pop = isPop(req.method, path);
    // Only a pop's budget depends on its query (wait, timeout): other requests skip parsing it.
    const budget = pop ? upstreamBudgetMs(req.method, path, query ?? queryOf(req.url), config) : config.requestTimeoutMs;
    armUpstreamBudget(req.raw, reply.raw, budget, clock, () => {
      meter.upstreamTimeout(tenant ?? 'none');
      log.warn({ method: req.method, path, budget_ms: budget, code: 'upstream_timeout' }, 'proxy: the broker did not answer within the budget');
    }, pop);
    router(req.raw, reply.raw);
  };

  app.addHook('onRequest', async (req, reply) => {
    for (const [name, value] of securityHeaders) reply.raw.setHeader(name, value); // also on answers the broker router writes
    const q = req.url.indexOf('?');
    const rawPath = q === -1 ? req.url : req.url.slice(0, q);
    if (rawPath !== '/health') {
      const ip = ipKey(clientIp(req.raw.socket.remoteAddress, req.headers['x-forwarded-for'], config.trustedProxies));
      const c = edge.charge(ip, config.edgeRate, config.edgeBurst);
      if (!c.ok) return refuse(reply, 'rate_limited', 'too many requests from this address', { retryAfterS: c.retryAfterS });
    }
    if (unsafeProxyPath(rawPath)) return refuse(reply, 'invalid_path');
    const path = routerPath(req.url);
    if (path === '/health') return forward(req, reply, undefined, path);
    if (path.startsWith('/api/v1/ephemeral/') && deps.raftToken !== undefined && header(req, 'x-queen-eph-fwd') !== undefined) {
      const token = header(req, 'x-queen-raft-token');
      if (token !== undefined && sameSecret(token, deps.raftToken)) {
        reply.hijack(); // a verified relay between brokers: the router checks it again and honours its tenant
        return router(req.raw, reply.raw);
      }
    }
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
    if (path === '/console' || path.startsWith('/console/') || path.startsWith('/api/console/')) {
      const credential = sessionCredential(req, path, config);
      if (credential?.from === 'cookie' && changesState(req.method) && !originAllowed(req, config)) return refuse(reply, 'csrf_rejected');
      return; // the console routes (src/proxy/console.ts)
    }
    return dataPlane(req, reply, path);
  });

  const dataPlane = async (req: FastifyRequest, reply: FastifyReply, path: string): Promise<FastifyReply | void> => {
    const cls: RouteClass = classify(req.method, path);
    if (cls.kind === 'blocked' || (cls.kind === 'operator' && !config.operatorEnabled)) return refuse(reply, 'route_blocked');
    const key = presentedKey(header(req, 'authorization'));
    let grant: Omit<KeyGrant, 'key'>;
    let allowed: boolean;
    if (key !== undefined) {
      const g = state.verify(key);
      if (!g) return refuse(reply, 'unauthorized', 'unknown or revoked api key');
      if (cls.kind === 'operator') return refuse(reply, 'route_blocked');
      grant = g;
      allowed = keyAllows(g.key.scopes, cls);
    } else {
      const credential = sessionCredential(req, path, config);
      if (!credential) {
        // A person's browser opening a page (the dashboard at `/`) without a session: to the login page.
        const accept = header(req, 'accept') ?? '';
        if (req.method === 'GET' && !path.startsWith('/api/') && config.sessions.signer && (header(req, 'sec-fetch-mode') === 'navigate' || accept.includes('text/html'))) {
          return reply.code(303).header('location', `/auth/login?next=${encodeURIComponent(path)}`).header('cache-control', 'no-store').send();
        }
        return refuse(reply, 'unauthorized', 'missing credential: send an API key as Authorization: Bearer <key>');
      }
      const session = await verifySession(tokens, state, credential);
      if (!session) return refuse(reply, 'unauthorized', 'invalid credential');
      if (!session.user) return refuse(reply, 'unauthorized', 'session no longer valid');
      if (credential.from === 'cookie' && changesState(req.method) && !originAllowed(req, config)) return refuse(reply, 'csrf_rejected');
      if (cls.kind === 'operator') {
        if (!isLiveOperator(session.user, config.operatorEnabled)) return refuse(reply, 'route_blocked');
        return forward(req, reply, undefined, path); // broker-wide operator views
      }
      let acting = actingCluster(req, session, state, config.operatorEnabled);
      if (acting === undefined && cls.kind === 'read' && !path.startsWith('/api/')) {
        // The dashboard's page and files (not data): a page load cannot name a cluster, and any of the person's will do.
        acting = selectableClusters(session.user, state.store, config.operatorEnabled)[0]?.cluster;
      }
      if (acting === null) return refuse(reply, 'cluster_unknown', 'unknown cluster', { status: 421 });
      if (acting === undefined) return refuse(reply, 'cluster_unknown', 'no acting cluster: name one in x-queen-act-cluster', { status: 421 });
      const r = resolveRole(session.claims, session.user, acting, state.store, config.operatorEnabled);
      if (!r.ok) return refuse(reply, r.status === 401 ? 'unauthorized' : 'forbidden', r.error);
      const g = state.clusterGrant(acting);
      if (!g) return refuse(reply, 'cluster_unknown', 'unknown cluster', { status: 421 });
      grant = g;
      allowed = roleAllows(r.role, cls);
    }
    const { cluster, tenant } = grant;
    const now = clock.now();
    const done = (outcome: string) => meter.request(cluster.id, cluster.brokerTenantUuid, outcome, now);
    if (cluster.status === 'suspended' || cluster.status === 'deleting' || tenant.status === 'suspended' || tenant.status === 'deleting') {
      done('cluster_suspended');
      return refuse(reply, 'cluster_suspended');
    }
    if (cls.kind === 'gated' && !grant.features.has(cls.feature)) {
      done('feature_gated');
      return refuse(reply, 'feature_gated', 'not in your plan');
    }
    if (cluster.status === 'push_blocked' && (cls.kind === 'produce' || (cls.kind === 'gated' && cls.op === 'grow'))) {
      done('push_blocked');
      return refuse(reply, 'push_blocked');
    }
    if (!allowed) {
      done('forbidden');
      return refuse(reply, 'forbidden', 'operation not permitted for this credential');
    }
    const limits = grant.limits;
    const rate = limits.max_req_per_sec;
    if (typeof rate === 'number') {
      const c = clusters.charge(cluster.id, rate, typeof limits.req_burst === 'number' ? limits.req_burst : rate);
      if (!c.ok) {
        meter.decision(cluster.brokerTenantUuid, 'rate_limited', config.enforce);
        if (config.enforce) {
          done('rate_limited');
          return refuse(reply, 'rate_limited', 'cluster request rate exceeded', { retryAfterS: c.retryAfterS });
        }
        log.warn({ cluster: cluster.slug, code: 'rate_limited' }, 'shadow mode: request over the cluster rate let through (QUEEN_PROXY_ENFORCE=false)');
      }
    }
    const length = Number(req.headers['content-length'] ?? 0);
    const cap = Math.min(config.maxBodyBytes, typeof limits.max_payload_bytes === 'number' && cls.kind === 'produce' ? Math.max(limits.max_payload_bytes, 0) : Infinity);
    if (length > cap) {
      done('payload_too_large');
      return refuse(reply, 'payload_too_large', `request body over ${cap} bytes`, { close: true });
    }
    const query = isPop(req.method, path) ? queryOf(req.url) : undefined;
    if (query !== undefined && isLongPoll(req.method, path, query)) {
      try {
        const release = quotas.park(cluster.brokerTenantUuid, cluster.id, cluster.slug, typeof limits.max_parked_pops === 'number' ? limits.max_parked_pops : undefined);
        reply.raw.once('close', release);
      } catch (e) {
        done('quota_exceeded');
        return refuse(reply, 'quota_exceeded', (e as Error).message);
      }
    }
    if (BODY_LIMITS.some((k) => typeof limits[k] === 'number')) {
      (req.raw as unknown as Record<symbol, unknown>)[PROXY_QUOTA] = quotas.check(cluster.id, cluster.slug, limits);
    }
    done('forwarded');
    meter.forwarded(cluster.brokerTenantUuid, cls.kind, Number.isFinite(length) ? length : 0, now);
    forward(req, reply, cluster.brokerTenantUuid, path, query);
  };

  await app.register(controlPlaneRoutes, { state, meter, broker: brokerCall, purge: deps.usage, s3: new S3Settings(state, deps.keyRing, clock) });
  await app.register(sessionRoutes, { config, state, tokens, clock });
  await app.register(oauthRoutes, { config, state, tokens });
  await app.register(consoleRoutes, { config, state, tokens });
  app.addHook('onClose', async () => clock.clearTimer(pruneTimer));
  return { app, meter };
}
