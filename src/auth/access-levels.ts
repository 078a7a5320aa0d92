/**
 * Route classification and the five access levels, as data.
 *
 * Levels are role *sets*, not a ladder: each level lists the roles that pass it, and a check is a
 * membership test (a `write-only` token fails every read). The route table is ONE array, walked in
 * order, first match wins; its rows are the table of docs/security.md#access-levels
 * row for row. Anything unmatched (including
 * a path no route serves) is `read-write`, never `public`.
 *
 * Paths are compared exactly as received (no decoding, no normalisation), prefixes with `startsWith`.
 *
 * Source: docs/security.md#access-levels.
 */
import type { RoleNames } from '../config/jwt.js';

/** The five access levels (docs/security.md#access-levels). */
export type AccessLevel = 'public' | 'read-only' | 'write-only' | 'read-write' | 'admin';

/** A logical role; the configured {@link RoleNames} map each one to the string a token carries. */
export type Role = keyof RoleNames;

/** docs/security.md#access-levels, "Passed by": the roles that pass each level (public passes everyone). */
export const LEVEL_ROLES: Readonly<Record<AccessLevel, readonly Role[]>> = {
  public: [],
  'read-only': ['readOnly', 'readWrite', 'admin'],
  'write-only': ['writeOnly', 'readWrite', 'admin'],
  'read-write': ['readWrite', 'admin'],
  admin: ['admin'],
};

/** One row of the route table. A row matches when the method matches and any path condition does. */
export interface RouteRule {
  readonly level: AccessLevel;
  /** Exact request method (`HEAD` is not `GET`); absent = any method. */
  readonly method?: string;
  /** Paths matched exactly. */
  readonly exact?: readonly string[];
  /** Paths matched as a plain string prefix. */
  readonly prefix?: readonly string[];
  /** Where the row comes from. */
  readonly source: string;
}

const READ_ONLY_GET_PREFIXES = [
  '/api/v1/status',
  '/api/v1/analytics',
  '/api/v1/resources/',
  '/api/v1/messages',
  '/api/v1/consumer-groups',
  '/api/v1/dlq',
  '/api/v1/traces',
  '/api/v1/kv',
  '/api/v1/timers',
  '/api/v1/ephemeral/queues',
  '/api/v1/streams/',
] as const;

/** The route → access level table, first match wins. Default (no row matches): `read-write`. */
export const ROUTE_RULES: readonly RouteRule[] = [
  // public (docs/security.md#access-levels)
  { level: 'public', exact: ['/health', '/metrics', '/metrics/prometheus'], source: 'S4 public: health and metrics' },
  { level: 'public', exact: ['/'], prefix: ['/assets/', '/favicon'], source: 'S4 public: /, /assets/*, /favicon*' },
  { level: 'public', exact: ['/auth/me', '/auth/login', '/auth/logout'], source: 'S4 public: /auth/me, /auth/login, /auth/logout' },
  { level: 'public', exact: ['/openapi.json', '/openapi'], source: 'R: the API description (docs/openapi.json) and its page' },
  // admin (docs/security.md#access-levels; also deletes of dead letters)
  { level: 'admin', prefix: ['/api/v1/system/', '/internal/'], source: 'S4 admin: /api/v1/system/ and /internal/' },
  { level: 'admin', method: 'DELETE', prefix: ['/api/v1/consumer-groups/'], source: 'S4 admin: DELETE /api/v1/consumer-groups/*' },
  { level: 'admin', method: 'DELETE', prefix: ['/api/v1/resources/queues/'], source: 'S4 admin: DELETE /api/v1/resources/queues/*' },
  { level: 'admin', method: 'DELETE', exact: ['/api/v1/dlq'], source: 'S0 admin: deletes of dead letters (docs/security.md#access-levels)' },
  { level: 'admin', exact: ['/api/v1/stats/refresh'], source: 'S4 admin: /api/v1/stats/refresh' },
  // read-only (docs/security.md#access-levels; also reads by offset and KV listings)
  { level: 'read-only', method: 'GET', exact: ['/status'], prefix: READ_ONLY_GET_PREFIXES, source: 'S4 read-only: GET listings and reads' },
  { level: 'read-only', method: 'POST', exact: ['/api/v1/fetch'], source: 'S0 read-only: reads by offset (docs/security.md#access-levels)' },
  { level: 'read-only', method: 'POST', exact: ['/api/v1/partitions/changed'], source: 'S0 read-only: listings (docs/security.md#access-levels)' },
  { level: 'read-only', method: 'POST', exact: ['/api/v1/resources/kv/list'], source: 'S0 read-only: KV reads (docs/security.md#access-levels)' },
  { level: 'read-only', exact: ['/streams/v1/state/get'], source: 'S4 read-only: /streams/v1/state/get' },
  { level: 'read-write', prefix: ['/streams/'], source: 'R: every other stream verb is read-write' },
  // write-only (docs/security.md#access-levels; push on any method)
  { level: 'write-only', exact: ['/api/v1/push'], source: 'S4 write-only: /api/v1/push' },
  { level: 'write-only', method: 'POST', exact: ['/api/v1/timers'], source: 'S4 write-only: POST /api/v1/timers' },
  { level: 'write-only', method: 'POST', exact: ['/api/v1/ephemeral/push'], source: 'S4 write-only: POST /api/v1/ephemeral/push' },
  // read-write (docs/security.md#access-levels), spelled out for KV/timer/ephemeral writes; the default covers the rest
  { level: 'read-write', prefix: ['/api/v1/kv', '/api/v1/timers', '/api/v1/ephemeral'], source: 'S4 read-write: KV, timer and ephemeral writes' },
];

/** An unrecognised path is read-write, never public (docs/security.md#access-levels). */
export const DEFAULT_LEVEL: AccessLevel = 'read-write';

function ruleMatches(rule: RouteRule, method: string, path: string): boolean {
  if (rule.method !== undefined && rule.method !== method) return false;
  if (rule.exact?.includes(path)) return true;
  return rule.prefix?.some((p) => path.startsWith(p)) ?? false;
}

/**
 * The access level a request needs.
 * @param method the request method, exact (`HEAD` is not `GET`)
 * @param path the request path without the query string, exactly as received
 */
export function classify(method: string, path: string): AccessLevel {
  for (const rule of ROUTE_RULES) if (ruleMatches(rule, method, path)) return rule.level;
  return DEFAULT_LEVEL;
}

/**
 * The role strings that pass each level under a role mapping; empty role names never match.
 * Build once at boot.
 */
export function levelRoleSets(names: RoleNames): ReadonlyMap<AccessLevel, ReadonlySet<string>> {
  const out = new Map<AccessLevel, ReadonlySet<string>>();
  for (const [level, roles] of Object.entries(LEVEL_ROLES) as [AccessLevel, readonly Role[]][]) {
    out.set(level, new Set(roles.map((r) => names[r]).filter((n) => n !== '')));
  }
  return out;
}

/**
 * True when a holder of `held` passes `level`: `public` always, any other level when `held`
 * contains one of the level's roles (a membership test, not a ladder).
 */
export function passes(level: AccessLevel, held: ReadonlySet<string>, sets: ReadonlyMap<AccessLevel, ReadonlySet<string>>): boolean {
  if (level === 'public') return true;
  const allowed = sets.get(level);
  if (allowed === undefined) return false;
  for (const r of held) if (allowed.has(r)) return true;
  return false;
}
