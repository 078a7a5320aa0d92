/**
 * The proxy's route classification (docs/proxy.md#route-classification; public reference
 * `proxy/src/routes.rs`), as ONE data table: the first row that matches the method and the path
 * (without query, percent-decoded once as the broker router does) gives the class. Any other path
 * under `/api/` is Blocked (fail closed); anything else is Read (the SPA and static files).
 *
 * Queen-TS rows beyond the reference (marked `ts` in the table): `/api/v1/locks` and the KV list
 * and namespace reads are gated on `kv` like the rest of KV; writes under Read prefixes (retry,
 * replay, seek, DLQ delete) need `admin` rather than `read`.
 */
import type { Feature, RouteClass } from '../auth/proxy/api-keys.js';

/** One row: a method set (undefined = any), an exact path or a prefix, and the class. */
export interface RouteRow {
  methods?: readonly string[];
  exact?: string;
  prefix?: string;
  cls: RouteClass;
  /** A Queen-TS addition to the reference table. */
  ts?: true;
  /**
   * The exact path also with one trailing slash (`/metrics/`): set on operator and blocked paths
   * that have no parametric route under them. Not on `/api/v1/timers` or `/api/v1/kv`, where
   * `/api/v1/timers/` is the timers of the queue named ''.
   */
  slash?: true;
}

const OPERATOR: RouteClass = { kind: 'operator' };
const BLOCKED: RouteClass = { kind: 'blocked' };
const PRODUCE: RouteClass = { kind: 'produce' };
const CONSUME: RouteClass = { kind: 'consume' };
const ADMIN: RouteClass = { kind: 'queue_admin' };
const READ: RouteClass = { kind: 'read' };
const gated = (feature: Feature, op: 'read' | 'grow' | 'open'): RouteClass => ({ kind: 'gated', feature, op });
const READS = ['GET', 'HEAD', 'OPTIONS'];
const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];

/** The classification table, first match wins. */
export const ROUTE_TABLE: readonly RouteRow[] = [
  // 1. Operator (exact)
  ...['/api/v1/status', '/api/v1/status/buffers', '/api/v1/analytics/system-metrics', '/api/v1/analytics/worker-metrics',
    '/api/v1/analytics/postgres-stats', '/api/v1/system/maintenance', '/api/v1/system/maintenance/pop', '/metrics/prometheus',
  ].map((exact): RouteRow => ({ exact, cls: OPERATOR, slash: true })),
  // 2. Blocked
  { prefix: '/api/v1/migration', cls: BLOCKED },
  { prefix: '/api/v1/system', cls: BLOCKED },
  { prefix: '/internal', cls: BLOCKED },
  { exact: '/api/v1/stats/refresh', cls: BLOCKED, slash: true },
  { exact: '/metrics', cls: BLOCKED, slash: true },
  { exact: '/status', cls: BLOCKED, slash: true },
  { exact: '/api/v1/pop', cls: BLOCKED },
  { exact: '/api/v1/pop/', cls: BLOCKED },
  // 3. Produce
  { exact: '/api/v1/push', cls: PRODUCE },
  { exact: '/api/v1/transaction', cls: PRODUCE },
  // 4. Consume
  { prefix: '/api/v1/pop/queue/', cls: CONSUME },
  { exact: '/api/v1/ack', cls: CONSUME },
  { exact: '/api/v1/ack/batch', cls: CONSUME },
  { prefix: '/api/v1/lease/', cls: CONSUME },
  // 5. QueueAdmin
  { exact: '/api/v1/configure', cls: ADMIN },
  { methods: ['DELETE'], prefix: '/api/v1/resources/queues/', cls: ADMIN },
  { methods: ['DELETE'], prefix: '/api/v1/messages/', cls: ADMIN },
  { methods: ['DELETE', 'POST'], prefix: '/api/v1/consumer-groups', cls: ADMIN },
  // 6. Gated
  { prefix: '/streams/', cls: gated('streams', 'open') },
  { methods: ['POST'], exact: '/api/v1/traces', cls: gated('traces', 'open') },
  { methods: ['POST'], exact: '/api/v1/kv', cls: gated('kv', 'open') },
  { exact: '/api/v1/kv', cls: BLOCKED },
  { methods: ['GET'], prefix: '/api/v1/kv/', cls: gated('kv', 'read') },
  { methods: ['PUT'], prefix: '/api/v1/kv/', cls: gated('kv', 'grow') },
  { methods: ['DELETE'], prefix: '/api/v1/kv/', cls: gated('kv', 'open') },
  { prefix: '/api/v1/kv/', cls: BLOCKED },
  { methods: ['POST'], exact: '/api/v1/locks', cls: gated('kv', 'open'), ts: true },
  { methods: ['POST'], exact: '/api/v1/resources/kv/list', cls: gated('kv', 'read'), ts: true },
  { methods: ['GET'], exact: '/api/v1/resources/kv/namespaces', cls: gated('kv', 'read'), ts: true },
  { methods: ['POST'], exact: '/api/v1/timers', cls: gated('timers', 'open') },
  { exact: '/api/v1/timers', cls: BLOCKED },
  { methods: ['GET'], prefix: '/api/v1/timers/', cls: gated('timers', 'read') },
  { methods: ['DELETE'], prefix: '/api/v1/timers/', cls: gated('timers', 'open') },
  { prefix: '/api/v1/timers/', cls: BLOCKED },
  { methods: ['POST'], exact: '/api/v1/ephemeral/push', cls: gated('ephemeral', 'grow') },
  { methods: ['POST'], exact: '/api/v1/ephemeral/ack', cls: gated('ephemeral', 'open') },
  { methods: ['POST'], exact: '/api/v1/ephemeral/configure', cls: gated('ephemeral', 'open') },
  { methods: ['POST'], exact: '/api/v1/ephemeral/reset', cls: gated('ephemeral', 'open') },
  { methods: ['GET'], exact: '/api/v1/ephemeral/pop', cls: gated('ephemeral', 'open') },
  { methods: ['GET'], exact: '/api/v1/ephemeral/queues', cls: gated('ephemeral', 'read') },
  { methods: ['GET'], prefix: '/api/v1/ephemeral/queues/', cls: gated('ephemeral', 'read') },
  { methods: ['DELETE'], prefix: '/api/v1/ephemeral/queue/', cls: gated('ephemeral', 'open') },
  { prefix: '/api/v1/ephemeral', cls: BLOCKED },
  // 7. Read (writes under these prefixes need admin: Queen-TS)
  ...['/api/v1/resources', '/api/v1/status', '/api/v1/analytics', '/api/v1/consumer-groups', '/api/v1/dlq', '/api/v1/messages', '/api/v1/traces']
    .flatMap((prefix): RouteRow[] => [{ methods: READS, prefix, cls: READ }, { methods: WRITES, prefix, cls: ADMIN, ts: true }]),
];

/**
 * The class of a request (docs/proxy.md#route-classification).
 * @param method the HTTP method, upper case
 * @param path the router path (no query, percent-decoded once), dot segments already refused
 */
export function classify(method: string, path: string): RouteClass {
  // A `slash` row also covers its path with one trailing slash (`/metrics/`, `/api/v1/status/`):
  // the variant must not fall through to a looser class than the row it spells.
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  for (const row of ROUTE_TABLE) {
    if (row.methods && !row.methods.includes(method)) continue;
    if (row.exact !== undefined ? path === row.exact || (row.slash === true && trimmed === row.exact) : path.startsWith(row.prefix!)) return row.cls;
  }
  return path.startsWith('/api/') ? BLOCKED : READ;
}

/**
 * True when the raw request path holds a dot or empty segment, also percent-encoded (`%2e`,
 * `%2E`): refused with 400 before classification (docs/proxy.md#paths).
 */
export function unsafeProxyPath(rawPath: string): boolean {
  // Most paths hold neither a dot, a percent nor `//`: nothing to rewrite or match.
  if (!rawPath.includes('.') && !rawPath.includes('%') && !rawPath.includes('//')) return false;
  const p = rawPath.replace(/%2e/gi, '.');
  return p.includes('//') || /\/\.\.?(?:\/|$)/.test(p);
}
