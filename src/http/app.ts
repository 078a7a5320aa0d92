/**
 * The Fastify application: limits, JSON parsing, error mapping, and one plugin per API area.
 * Built by `main.ts`; tests reach it only over real HTTP.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import http from 'node:http';
import type { Logger } from 'pino';
import type { Broker } from '../broker/broker.js';
import type { Services } from '../broker/services.js';
import type { Config } from '../config/index.js';
import { QueenError } from '../errors.js';
import { parseClientJson, scanJsonText, stringifyClientJson } from '../util/json.js';
import { registerAuth } from '../auth/index.js';
import { installTenancy } from './tenant.js';
import { attachRouteSchemas, registerOpenApi } from './schemas/index.js';
import { AJV_OPTIONS, RouteValidators, type CompileValidators } from './schemas/validators.js';
import { proxyBodyCap } from '../model/in-process.js';
import { clientError, ClosingResponse, HEAD_TIMEOUTS, limitHeads } from '../util/http-head.js';
import { bodyText, capBody, decodeBody, describeJsonError } from './body-encoding.js';
import { frameworkError, installErrorHandling, installNodeLevelAnswers, nodeLevelGuard } from './errors.js';
import { authRoutes } from './routes/auth.js';
import { ackRoutes } from './routes/ack.js';
import { configureRoutes } from './routes/configure.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { dlqRoutes } from './routes/dlq.js';
import { opsRoutes } from './routes/ops.js';
import { healthRoutes, VERSION } from './routes/health.js';
import { leaseRoutes } from './routes/lease.js';
import { popRoutes } from './routes/pop.js';
import { pushRoutes } from './routes/push.js';
import { resourceRoutes } from './routes/resources.js';
import { transactionRoutes } from './routes/transaction.js';
import { kvRoutes } from './routes/kv.js';
import { timerRoutes } from './routes/timers.js';
import { ephemeralRoutes } from './routes/ephemeral.js';
import { streamsRoutes } from './routes/streams.js';

/**
 * What every route plugin receives: the broker services (built and started by `main.ts`), never
 * the engine or the store. `broker` is `services.broker`, kept apart for brevity.
 */
export interface RouteContext {
  broker: Broker;
  services: Services;
  config: Config;
}

/**
 * Creates the app (not listening). Empty JSON bodies parse as `undefined`; any content type is
 * parsed as JSON (the Queen clients always send JSON) with numbers kept exactly as sent
 * (src/util/json.ts); malformed JSON, and a body that is not UTF-8, answers
 * `400 {"error":"bad body: …","code":"bad_json"}`.
 * Every answer is serialized by `stringifyClientJson`, which splices stored client JSON verbatim.
 * Route validators compile on their route's first request; `compileValidators: 'boot'` compiles
 * them all here instead (a test does, so that no schema Ajv refuses waits for its first request).
 */
export async function buildApp(config: Config, services: Services, log: Logger, opts: { compileValidators?: CompileValidators } = {}): Promise<FastifyInstance> {
  const broker = services.broker;
  const validators = new RouteValidators(opts.compileValidators);
  let closing = false;
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.limits.maxBodyBytes,
    // Long names must reach the handlers' name check (400 name_too_long), not the router's cap (404).
    routerOptions: { maxParamLength: config.limits.maxHeaderBytes },
    return503OnClosing: true,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
    forceCloseConnections: 'idle',
    ajv: AJV_OPTIONS,
    // Validators compile on their route's first request; answers are serialized by stringifyClientJson
    // (src/http/schemas/validators.ts): neither Fastify's Ajv nor fast-json-stringify is loaded at boot.
    schemaController: { compilersFactory: { buildValidator: validators.factory(), buildSerializer: () => () => (data: unknown) => stringifyClientJson(data) } },
    serverFactory: (handler) => {
      const server = http.createServer(
        { ServerResponse: ClosingResponse, maxHeaderSize: config.limits.maxHeaderBytes, noDelay: true, keepAliveTimeout: 65_000, requireHostHeader: false, ...HEAD_TIMEOUTS },
        nodeLevelGuard(handler, () => closing),
      );
      limitHeads(server);
      installNodeLevelAnswers(server, config.limits.maxBodyBytes);
      return server;
    },
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => {
    let text: string;
    try {
      text = typeof body === 'string' ? body : bodyText(body);
    } catch (e) {
      return done(e as Error, undefined);
    }
    if (text.trim() === '') return done(null, undefined);
    const scan = scanJsonText(text, config.limits.maxJsonDepth); // depth and inexact numbers, one pass, before any parse
    if (scan.tooDeep) {
      return done(new QueenError('json_too_deep', `bad body: JSON nested deeper than ${config.limits.maxJsonDepth} levels (QUEEN_MAX_JSON_DEPTH)`), undefined);
    }
    try {
      done(null, parseClientJson(text, scan.inexactNumber));
    } catch (e) {
      done(new QueenError('bad_json', describeJsonError(e)), undefined);
    }
  });

  app.setReplySerializer((payload) => stringifyClientJson(payload));
  installErrorHandling(app);
  const coverage = attachRouteSchemas(app, undefined, validators); // every route gets its schema; see src/http/schemas
  await registerOpenApi(app, VERSION);
  // gzip / deflate / br bodies, decoded size capped by QUEEN_MAX_BODY_BYTES (src/http/body-encoding.ts)
  // (callback style: no promise per request)
  // Through the embedded proxy, its body cap is counted as the body is read (src/model/in-process.ts PROXY_BODY_CAP).
  app.addHook('preParsing', (req, _reply, payload, done) => {
    let decoded;
    try {
      const cap = proxyBodyCap(req.raw);
      const wire = cap !== undefined && req.headers['transfer-encoding'] !== undefined ? capBody(req.raw, payload, cap) : payload;
      decoded = decodeBody(req.headers['content-encoding'], wire, config.limits.maxBodyBytes, cap !== undefined && cap < config.limits.maxBodyBytes ? cap : undefined);
    } catch (e) {
      return done(e as Error);
    }
    done(null, decoded);
  });
  app.addHook('preClose', (done) => { closing = true; done(); });
  const auth = await registerAuth(app, config.jwt, log, services.clock, services.scheduler, config.tenancy.raftToken); // JWT hook on every route (docs/security.md#jwt)
  installTenancy(app, config.tenancy); // request.tenant on every route, after authentication (src/http/tenant.ts)
  await app.register(authRoutes, { jwtEnabled: auth.config.enabled });
  const ctx: RouteContext = { broker, services, config };
  await app.register(healthRoutes, ctx);
  await app.register(configureRoutes, ctx);
  await app.register(pushRoutes, ctx);
  await app.register(popRoutes, ctx);
  await app.register(ackRoutes, ctx);
  await app.register(transactionRoutes, ctx);
  await app.register(leaseRoutes, ctx);
  await app.register(resourceRoutes, ctx);
  await app.register(dlqRoutes, ctx);
  await app.register(opsRoutes, ctx); // operator routes (docs/http-api.md#operator-routes)
  await app.register(kvRoutes, ctx); // KV store and locks (docs/http-api.md#kv, docs/http-api.md#locks)
  await app.register(timerRoutes, ctx); // scheduled messages (docs/http-api.md#timers)
  await app.register(ephemeralRoutes, ctx); // RAM-only queues (docs/ephemeral.md)
  await app.register(streamsRoutes, ctx); // streaming queries (docs/streams.md)
  await app.register(dashboardRoutes, { jwtEnabled: config.jwt.enabled });
  const missing = coverage.missing();
  if (missing.length > 0) throw new Error(`routes without a schema (add them to src/http/schemas): ${missing.join(', ')}`);
  return app;
}
