/**
 * The proxy's data plane on the listener's own request (docs/proxy.md#forwarding; public reference
 * `proxy/src/gateway.rs`): every request that is not one of the proxy's fixed routes is decided on
 * the raw `IncomingMessage` from its head alone, then answered with a refusal or handed to the
 * broker router in process. The proxy's Fastify app (src/proxy/server.ts) is not entered, so a
 * forwarded request pays for one Fastify request cycle, the broker router's.
 *
 * Order: classify (src/proxy/routes.ts; Blocked, and Operator while `QUEEN_PROXY_OPERATOR_ENABLED`
 * is off → `404 route_blocked` before authentication) → API key (`401 unauthorized`) or session
 * (bearer wins over the cookie; the origin check for a state-changing cookie request; the acting
 * cluster; the role, src/auth/proxy/roles.ts; an Operator route refused to anyone but a live
 * operator answers the same 404; a page load without any credential → `303` to the login page) →
 * cluster status (`403 cluster_suspended`) → plan feature (`403 feature_gated`) → push blocked
 * (`403 push_blocked`) → scopes (`403 forbidden`) → cluster rate (`429 rate_limited`, or logged and
 * counted in shadow mode) → body cap (`413 payload_too_large`, `Connection: close`) → parked
 * long-polls (`403 quota_exceeded`, or shadow) → the body quotas stamped for the broker router's
 * hook (src/proxy/quotas.ts) → the broker router (src/proxy/forward.ts) within an upstream budget.
 *
 * Never logs a key, token, hash or cookie value.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { keyAllows, presentedKey, type RouteClass } from '../auth/proxy/api-keys.js';
import { isLiveOperator, resolveRole, roleAllows, selectableClusters } from '../auth/proxy/roles.js';
import type { SessionTokens } from '../auth/proxy/sessions.js';
import type { ClusterRow, KeyGrant, LimitName, ProxyState } from '../auth/proxy/state.js';
import type { ProxyConfig } from '../config/proxy.js';
import { QueenError, type ErrorCode } from '../errors.js';
import { PROXY_BODY_CAP, PROXY_QUOTA, type QuotaCheck } from '../model/in-process.js';
import type { Clock } from '../util/clock.js';
import { inviteBody, refuseRaw, type RefuseOptions } from './envelope.js';
import { armUpstreamBudget, isLongPoll, isPop, prepareForBroker, upstreamBudgetMs, type BrokerRouter } from './forward.js';
import type { Buckets } from './limits.js';
import type { Meter } from './meter.js';
import type { Quotas } from './quotas.js';
import { classify } from './routes.js';
import { actingCluster, changesState, originAllowed, parseCookies, sessionCredential, verifySession, type RequestHead } from './sessions.js';

/** The limits checked on a forwarded request's parsed body (src/proxy/quotas.ts): with none set, no check is stamped. */
const BODY_LIMITS = [
  'max_queues', 'max_partitions_per_queue', 'max_retention_seconds', 'max_batch_items', 'max_retained_bytes', 'max_msgs_per_sec',
] as const satisfies readonly LimitName[];

/** True when one of {@link BODY_LIMITS} is set (a loop: no closure per request). */
/** The route a transaction is sent to; classed Produce (docs/proxy.md#route-classification) whatever it holds. */
const TRANSACTION_PATH = '/api/v1/transaction';
/** The class whose permission an ack needs. */
const CONSUME_CLASS: RouteClass = { kind: 'consume' };

/**
 * The body check of a transaction sent by a credential that may not consume: an `ack` operation
 * would consume through a Produce route (the reference classes the path alone), so the broker
 * router refuses it with `403 forbidden` once the body is parsed, before anything runs; the
 * quota check, when there is one, runs after it.
 */
function withoutAcks(quota: QuotaCheck | undefined): QuotaCheck {
  return async (r) => {
    const ops = (r.body as { operations?: unknown } | undefined)?.operations;
    if (Array.isArray(ops) && ops.some((op) => (op as { type?: unknown } | null)?.type === 'ack')) {
      throw new QueenError('forbidden', 'a transaction that acks needs a credential that may consume (scope consume)');
    }
    return quota?.(r);
  };
}

function hasBodyLimit(limits: Omit<KeyGrant, 'key'>['limits']): boolean {
  for (const k of BODY_LIMITS) if (typeof limits[k] === 'number') return true;
  return false;
}

/** What {@link dataPlane} needs: the proxy's configuration and state, and the parts it shares with the proxy app. */
export interface DataPlaneDeps {
  config: ProxyConfig;
  state: ProxyState;
  router: BrokerRouter;
  log: Logger;
  clock: Clock;
  meter: Meter;
  quotas: Quotas;
  tokens: SessionTokens;
  /** The per-cluster request-rate buckets. */
  clusters: Buckets;
}

/** A refusal (the envelope of `code`) or the login redirect, not yet written. */
type Refusal = { code: ErrorCode; message?: string; opts?: RefuseOptions } | { redirect: string };

/** The data plane of the proxy listener. */
export interface DataPlane {
  /**
   * Decides `req` (router path `path`, dot segments already refused) and answers it: a refusal,
   * the login redirect, or the broker router's answer. Never throws: an unexpected error is logged
   * and answered `500 internal_error` when nothing was written yet.
   */
  handle(req: IncomingMessage, res: ServerResponse, path: string): void;
  /**
   * Hands `req` to the broker router in process acting for `tenant` (undefined: none is stamped;
   * `/health` and a live operator's broker-wide views), within the upstream budget
   * (docs/proxy.md#forwarding).
   */
  forward(req: IncomingMessage, res: ServerResponse, tenant: string | undefined, path: string, query?: URLSearchParams): void;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The query of `url` (empty when none). */
function queryOf(url: string): URLSearchParams {
  const q = url.indexOf('?');
  return new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
}

/** Builds the data plane over `deps` (see the module comment for the order of the checks). */
export function dataPlane(deps: DataPlaneDeps): DataPlane {
  const { config, state, router, log, clock, meter, quotas, tokens, clusters } = deps;
  // A shared proxy store (PostgreSQL) makes writes durable asynchronously: no refusal leaves before
  // the writes made so far are (a refused write answers 503 unavailable), as on the proxy's own routes.
  const settled = state.store.settled?.bind(state.store);

  const write = (res: ServerResponse, r: Refusal): void => {
    if ('redirect' in r) {
      res.setHeader('location', r.redirect);
      res.setHeader('cache-control', 'no-store');
      res.setHeader('content-length', 0);
      res.writeHead(303);
      res.end();
      return;
    }
    refuseRaw(res, r.code, r.message, r.opts);
  };
  const deny = (res: ServerResponse, r: Refusal): void => {
    if (!settled) return write(res, r);
    settled().then(() => write(res, r), (e: unknown) => {
      if (!res.headersSent) refuseRaw(res, 'unavailable', `the proxy state could not be written: ${(e as Error).message}`);
    });
  };
  const failed = (res: ServerResponse, e: unknown): void => {
    log.error({ err: e }, 'proxy request failed');
    if (!res.headersSent) refuseRaw(res, 'internal_error');
    else res.destroy();
  };

  const forward = (req: IncomingMessage, res: ServerResponse, tenant: string | undefined, path: string, query?: URLSearchParams): void => {
    prepareForBroker(req, tenant);
    const method = req.method ?? 'GET';
    const pop = isPop(method, path);
    // Only a pop's budget depends on its query (wait, timeout): other requests skip parsing it.
    const budget = pop ? upstreamBudgetMs(method, path, query ?? queryOf(req.url ?? ''), config) : config.requestTimeoutMs;
    armUpstreamBudget(req, res, budget, clock, () => {
      meter.upstreamTimeout(tenant ?? 'none');
      log.warn({ method, path, budget_ms: budget, code: 'upstream_timeout' }, 'proxy: the broker did not answer within the budget');
    }, pop);
    inviteBody(req, res);
    router(req, res);
  };

  /** `r`, counted as a request of `cluster` at `now` (ms) with its code as the outcome. */
  const counted = (cluster: ClusterRow, now: number, r: Refusal & { code: ErrorCode }): Refusal => {
    meter.request(cluster.id, cluster.brokerTenantUuid, r.code, now);
    return r;
  };

  /** The checks after the credential, on `grant`; forwards when they pass, else the refusal. */
  const admit = (req: IncomingMessage, res: ServerResponse, path: string, cls: RouteClass, grant: Omit<KeyGrant, 'key'>, allowed: boolean, mayConsume: boolean): Refusal | undefined => {
    const { cluster, tenant } = grant;
    const now = clock.now();
    if (cluster.status === 'suspended' || cluster.status === 'deleting' || tenant.status === 'suspended' || tenant.status === 'deleting') {
      return counted(cluster, now, { code: 'cluster_suspended' });
    }
    if (cls.kind === 'gated' && !grant.features.has(cls.feature)) {
      return counted(cluster, now, { code: 'feature_gated', message: 'not in your plan' });
    }
    if (cluster.status === 'push_blocked' && (cls.kind === 'produce' || (cls.kind === 'gated' && cls.op === 'grow'))) {
      return counted(cluster, now, { code: 'push_blocked' });
    }
    if (!allowed) {
      return counted(cluster, now, { code: 'forbidden', message: 'operation not permitted for this credential' });
    }
    const limits = grant.limits;
    const rate = limits.max_req_per_sec;
    if (typeof rate === 'number') {
      const c = clusters.charge(cluster.id, rate, typeof limits.req_burst === 'number' ? limits.req_burst : rate);
      if (!c.ok) {
        meter.decision(cluster.brokerTenantUuid, 'rate_limited', config.enforce);
        if (config.enforce) {
          return counted(cluster, now, { code: 'rate_limited', message: 'cluster request rate exceeded', opts: { retryAfterS: c.retryAfterS } });
        }
        log.warn({ cluster: cluster.slug, code: 'rate_limited' }, 'shadow mode: request over the cluster rate let through (QUEEN_PROXY_ENFORCE=false)');
      }
    }
    const length = Number(req.headers['content-length'] ?? 0);
    const cap = Math.min(config.maxBodyBytes, typeof limits.max_payload_bytes === 'number' && cls.kind === 'produce' ? Math.max(limits.max_payload_bytes, 0) : Infinity);
    if (length > cap) {
      return counted(cluster, now, { code: 'payload_too_large', message: `request body over ${cap} bytes`, opts: { close: true } });
    }
    (req as unknown as Record<symbol, unknown>)[PROXY_BODY_CAP] = cap; // a chunked or compressed body is counted as it is read
    const method = req.method ?? 'GET';
    const query = isPop(method, path) ? queryOf(req.url ?? '') : undefined;
    if (query !== undefined && isLongPoll(method, path, query)) {
      try {
        const release = quotas.park(cluster.brokerTenantUuid, cluster.id, cluster.slug, typeof limits.max_parked_pops === 'number' ? limits.max_parked_pops : undefined);
        res.once('close', release);
      } catch (e) {
        return counted(cluster, now, { code: 'quota_exceeded', message: (e as Error).message });
      }
    }
    const quota = hasBodyLimit(limits) ? quotas.check(cluster.id, cluster.slug, limits) : undefined;
    const check = path === TRANSACTION_PATH && !mayConsume ? withoutAcks(quota) : quota;
    if (check) (req as unknown as Record<symbol, unknown>)[PROXY_QUOTA] = check;
    meter.request(cluster.id, cluster.brokerTenantUuid, 'forwarded', now);
    meter.forwarded(cluster.brokerTenantUuid, cls.kind, Number.isFinite(length) ? length : 0, now);
    forward(req, res, cluster.brokerTenantUuid, path, query);
    return undefined;
  };

  /** A request without an API key: a session (bearer or cookie), else 401 or the login page. */
  const bySession = async (req: IncomingMessage, res: ServerResponse, path: string, cls: RouteClass): Promise<Refusal | undefined> => {
    const head = req as IncomingMessage & RequestHead;
    if (header(req, 'authorization') === undefined) parseCookies(head);
    const method = req.method ?? 'GET';
    const credential = sessionCredential(head, path, config);
    if (!credential) {
      // A person's browser opening a page (the dashboard at `/`) without a session: to the login page.
      const accept = header(req, 'accept') ?? '';
      if (method === 'GET' && !path.startsWith('/api/') && config.sessions.signer && (header(req, 'sec-fetch-mode') === 'navigate' || accept.includes('text/html'))) {
        return { redirect: `/auth/login?next=${encodeURIComponent(path)}` };
      }
      return { code: 'unauthorized', message: 'missing credential: send an API key as Authorization: Bearer <key>' };
    }
    const session = await verifySession(tokens, state, credential);
    if (!session) return { code: 'unauthorized', message: 'invalid credential' };
    if (!session.user) return { code: 'unauthorized', message: 'session no longer valid' };
    if (credential.from === 'cookie' && changesState(method) && !originAllowed(head, config)) return { code: 'csrf_rejected' };
    if (cls.kind === 'operator') {
      if (!isLiveOperator(session.user, config.operatorEnabled)) return { code: 'route_blocked' };
      forward(req, res, undefined, path); // broker-wide operator views
      return undefined;
    }
    let acting = actingCluster(head, session, state, config.operatorEnabled);
    if (acting === undefined && cls.kind === 'read' && !path.startsWith('/api/')) {
      // The dashboard's page and files (not data): a page load cannot name a cluster, and any of the person's will do.
      acting = selectableClusters(session.user, state.store, config.operatorEnabled)[0]?.cluster;
    }
    if (acting === null) return { code: 'cluster_unknown', message: 'unknown cluster', opts: { status: 421 } };
    if (acting === undefined) return { code: 'cluster_unknown', message: 'no acting cluster: name one in x-queen-act-cluster', opts: { status: 421 } };
    const r = resolveRole(session.claims, session.user, acting, state.store, config.operatorEnabled);
    if (!r.ok) return { code: r.status === 401 ? 'unauthorized' : 'forbidden', message: r.error };
    const g = state.clusterGrant(acting);
    if (!g) return { code: 'cluster_unknown', message: 'unknown cluster', opts: { status: 421 } };
    return admit(req, res, path, cls, g, roleAllows(r.role, cls), roleAllows(r.role, CONSUME_CLASS));
  };

  const decide = (req: IncomingMessage, res: ServerResponse, path: string): Refusal | Promise<Refusal | undefined> | undefined => {
    const cls = classify(req.method ?? 'GET', path);
    if (cls.kind === 'blocked' || (cls.kind === 'operator' && !config.operatorEnabled)) return { code: 'route_blocked' };
    const key = presentedKey(header(req, 'authorization'));
    if (key === undefined) return bySession(req, res, path, cls);
    const g = state.verify(key);
    if (!g) return { code: 'unauthorized', message: 'unknown or revoked api key' };
    if (cls.kind === 'operator') return { code: 'route_blocked' };
    return admit(req, res, path, cls, g, keyAllows(g.key.scopes, cls), keyAllows(g.key.scopes, CONSUME_CLASS));
  };

  const handle = (req: IncomingMessage, res: ServerResponse, path: string): void => {
    let r: ReturnType<typeof decide>;
    try {
      r = decide(req, res, path);
    } catch (e) {
      return failed(res, e);
    }
    if (r === undefined) return;
    if (r instanceof Promise) {
      r.then((refusal) => { if (refusal) deny(res, refusal); }, (e: unknown) => failed(res, e));
      return;
    }
    deny(res, r);
  };

  return { handle, forward };
}
