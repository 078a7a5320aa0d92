/**
 * The tables of docs/security.md, transcribed as test data,
 * independently of the implementation's own tables. Every test in test/auth walks these rows.
 */

/** "Algorithms and auto-detection": `JWT_ALGORITHM` → token `alg` values accepted. */
export const SEED_ALG_TABLE: readonly (readonly [setting: string, accepted: readonly string[]])[] = [
  ['auto', ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'EdDSA']],
  ['HS256', ['HS256']],
  ['HS384', ['HS384']],
  ['HS512', ['HS512']],
  ['RS256', ['RS256', 'RS384', 'RS512']],
  ['RS384', ['RS384']],
  ['RS512', ['RS512']],
  ['EdDSA', ['EdDSA']],
];

/** Every token `alg` the tests can mint and the broker can meet. */
export const ALL_TOKEN_ALGS = ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'EdDSA', 'PS256', 'ES256'] as const;

/** "The token on the wire" error table: status, message (byte for byte), registry code. */
export const SEED_ERRORS: readonly (readonly [status: number, message: string, code: string])[] = [
  [401, 'Authentication required', 'auth_required'],
  [401, 'Bad token header', 'bad_token_header'],
  [401, 'Unsupported token algorithm', 'unsupported_token_algorithm'],
  [401, 'Invalid token signature', 'invalid_token_signature'],
  [401, 'Token has expired', 'token_expired'],
  [401, 'Token not yet valid', 'token_not_yet_valid'],
  [401, 'Token issued in the future', 'token_issued_in_future'],
  [401, 'Invalid token issuer', 'invalid_token_issuer'],
  [401, 'Invalid token audience', 'invalid_token_audience'],
  [401, 'Unknown key ID', 'unknown_key_id'],
  [403, 'Insufficient permissions', 'insufficient_permissions'],
  [500, 'HS secret not configured', 'hs_secret_not_configured'],
  [500, 'invalid RSA public key PEM', 'invalid_rsa_pem'],
  [500, 'invalid Ed public key PEM', 'invalid_ed_pem'],
];

/** Look up an error row of docs/security.md#refusals by code. */
export function seedError(code: string): { status: number; body: { error: string; code: string } } {
  const row = SEED_ERRORS.find((r) => r[2] === code);
  if (!row) throw new Error(`no seed error ${code}`);
  return { status: row[0], body: { error: row[1], code: row[2] } };
}

export type Level = 'public' | 'read-only' | 'write-only' | 'read-write' | 'admin';

/** "Access levels are a role set": which held roles pass each level (public: everyone). */
export const SEED_LEVEL_PASSED_BY: Readonly<Record<Level, readonly string[] | 'everyone'>> = {
  public: 'everyone',
  'read-only': ['read-only', 'read-write', 'admin'],
  'write-only': ['write-only', 'read-write', 'admin'],
  'read-write': ['read-write', 'admin'],
  admin: ['admin'],
};

/** Role holdings the matrix tests use (the token's `roles` array). */
export const ROLE_HOLDINGS: readonly (readonly string[])[] = [
  [],
  ['read-only'],
  ['write-only'],
  ['read-write'],
  ['admin'],
  ['read-only', 'write-only'],
  ['Admin'],
];

/** Expected outcome of a holding at a level, from the "Passed by" column of docs/security.md#access-levels. */
export function seedPasses(level: Level, held: readonly string[]): boolean {
  const by = SEED_LEVEL_PASSED_BY[level];
  return by === 'everyone' || held.some((r) => by.includes(r));
}

/**
 * The route classification table, one or more concrete requests per item of each row
 * (query strings added where a real route would otherwise long-poll; they are not part of the path).
 * `why` names the row's item; rows marked S0 are the refinements listed in docs/security.md#access-levels.
 */
export const SEED_ROUTES: readonly (readonly [method: string, path: string, level: Level, why: string])[] = [
  // public
  ['GET', '/health', 'public', 'S4 public /health'],
  ['GET', '/metrics', 'public', 'S4 public /metrics'],
  ['GET', '/metrics/prometheus', 'public', 'S4 public /metrics/prometheus'],
  ['GET', '/', 'public', 'S4 public /'],
  ['GET', '/assets/app.js', 'public', 'S4 public /assets/*'],
  ['GET', '/assets/', 'public', 'S4 public /assets/*'],
  ['GET', '/favicon.ico', 'public', 'S4 public /favicon*'],
  ['GET', '/favicon-32.png', 'public', 'S4 public /favicon*'],
  ['GET', '/auth/me', 'public', 'S4 public /auth/me'],
  ['GET', '/auth/login', 'public', 'S4 public /auth/login'],
  ['POST', '/auth/logout', 'public', 'S4 public /auth/logout'],
  ['GET', '/openapi.json', 'public', 'R public: the API description'],
  ['GET', '/openapi', 'public', 'R public: the API description page'],
  // admin
  ['GET', '/api/v1/system/maintenance', 'admin', 'S4 admin /api/v1/system/'],
  ['POST', '/api/v1/system/maintenance', 'admin', 'S4 admin /api/v1/system/'],
  ['GET', '/internal/anything', 'admin', 'S4 admin /internal/'],
  ['POST', '/internal/api/x', 'admin', 'S4 admin /internal/'],
  ['DELETE', '/api/v1/consumer-groups/g1', 'admin', 'S4 admin DELETE /api/v1/consumer-groups/*'],
  ['DELETE', '/api/v1/consumer-groups/g1/subscription', 'admin', 'S4 admin DELETE /api/v1/consumer-groups/*'],
  ['DELETE', '/api/v1/resources/queues/auth-no-such-queue', 'admin', 'S4 admin DELETE /api/v1/resources/queues/*'],
  ['POST', '/api/v1/stats/refresh', 'admin', 'S4 admin /api/v1/stats/refresh'],
  ['GET', '/api/v1/stats/refresh', 'admin', 'S4 admin /api/v1/stats/refresh'],
  ['DELETE', '/api/v1/dlq', 'admin', 'S0 deletes of dead letters (docs/security.md#access-levels)'],
  // read-only
  ['GET', '/status', 'read-only', 'S4 read-only GET /status'],
  ['GET', '/api/v1/status', 'read-only', 'S4 read-only GET /api/v1/status*'],
  ['GET', '/api/v1/status/queues', 'read-only', 'S4 read-only GET /api/v1/status*'],
  ['GET', '/api/v1/analytics/queue-ops', 'read-only', 'S4 read-only GET /api/v1/analytics*'],
  ['GET', '/api/v1/resources/queues', 'read-only', 'S4 read-only GET /api/v1/resources/*'],
  ['GET', '/api/v1/resources/queues/auth-no-such-queue', 'read-only', 'S4 read-only GET /api/v1/resources/*'],
  ['GET', '/api/v1/messages', 'read-only', 'S4 read-only GET /api/v1/messages*'],
  ['GET', '/api/v1/messages/q/p/1', 'read-only', 'S4 read-only GET /api/v1/messages*'],
  ['GET', '/api/v1/consumer-groups', 'read-only', 'S4 read-only GET /api/v1/consumer-groups*'],
  ['GET', '/api/v1/consumer-groups/g1', 'read-only', 'S4 read-only GET /api/v1/consumer-groups*'],
  ['GET', '/api/v1/dlq', 'read-only', 'S4 read-only GET /api/v1/dlq*'],
  ['GET', '/api/v1/traces/t1', 'read-only', 'S4 read-only GET /api/v1/traces*'],
  ['GET', '/api/v1/kv/ns/k', 'read-only', 'S4 read-only GET /api/v1/kv*'],
  ['GET', '/api/v1/timers', 'read-only', 'S4 read-only GET /api/v1/timers*'],
  ['GET', '/api/v1/ephemeral/queues', 'read-only', 'S4 read-only GET /api/v1/ephemeral/queues*'],
  ['GET', '/api/v1/ephemeral/queues/q1', 'read-only', 'S4 read-only GET /api/v1/ephemeral/queues*'],
  ['GET', '/streams/v1/state/get', 'read-only', 'S4 read-only /streams/v1/state/get'],
  ['POST', '/streams/v1/state/get', 'read-only', 'S4 read-only /streams/v1/state/get'],
  ['POST', '/api/v1/fetch', 'read-only', 'S0 reads by offset (docs/security.md#access-levels)'],
  ['POST', '/api/v1/partitions/changed', 'read-only', 'S0 listings (docs/security.md#access-levels)'],
  ['POST', '/api/v1/resources/kv/list', 'read-only', 'S0 KV reads (docs/security.md#access-levels)'],
  // write-only
  ['POST', '/api/v1/push', 'write-only', 'S4 write-only POST /api/v1/push'],
  ['POST', '/api/v1/timers', 'write-only', 'S4 write-only POST /api/v1/timers'],
  ['POST', '/api/v1/ephemeral/push', 'write-only', 'S4 write-only POST /api/v1/ephemeral/push'],
  // read-write: everything else, unknown paths included
  ['GET', '/api/v1/pop/queue/auth-q?wait=false', 'read-write', 'S4 read-write pop'],
  ['GET', '/api/v1/pop?wait=false', 'read-write', 'S4 read-write pop'],
  ['POST', '/api/v1/ack', 'read-write', 'S4 read-write ack'],
  ['POST', '/api/v1/ack/batch', 'read-write', 'S4 read-write ack'],
  ['POST', '/api/v1/transaction', 'read-write', 'S4 read-write transaction'],
  ['POST', '/api/v1/lease/00000000-0000-0000-0000-000000000000/extend', 'read-write', 'S4 read-write lease extension'],
  ['POST', '/api/v1/configure', 'read-write', 'S4 read-write /configure'],
  ['POST', '/api/v1/consumer-groups/g1/seek', 'read-write', 'S4 read-write seeks'],
  ['POST', '/api/v1/consumer-groups/g1/subscription', 'read-write', 'S4 read-write subscription changes'],
  ['POST', '/api/v1/traces', 'read-write', 'S4 read-write POST /api/v1/traces'],
  ['DELETE', '/api/v1/messages/q/p/1', 'read-write', 'S4 read-write message deletes'],
  ['PUT', '/api/v1/kv/ns/k', 'read-write', 'S4 read-write KV writes'],
  ['DELETE', '/api/v1/kv/ns/k', 'read-write', 'S4 read-write KV writes'],
  ['PUT', '/api/v1/timers/q/k', 'read-write', 'S4 read-write timer writes'],
  ['DELETE', '/api/v1/timers/q/k', 'read-write', 'S4 read-write timer cancel'],
  ['POST', '/api/v1/ephemeral/pop', 'read-write', 'S4 read-write remaining ephemeral verbs'],
  ['DELETE', '/api/v1/consumer-groups', 'read-write', 'S4 admin row needs the trailing /'],
  ['HEAD', '/api/v1/status', 'read-write', 'decision 10: HEAD is not GET'],
  ['GET', '/logo.svg', 'read-write', 'S4 unknown root file'],
  ['GET', '/no/such/route', 'read-write', 'S4 unknown path defaults to read-write'],
  ['POST', '/api/v2/anything', 'read-write', 'S4 unknown path defaults to read-write'],
  ['GET', '/healthz', 'read-write', 'S4 exact /health only'],
  ['GET', '/streams/v1/other', 'read-write', 'S4 other stream verbs'],
];

/** "Skipping paths": skip entries, request path, skipped? */
export const SEED_SKIPS: readonly (readonly [entries: string, path: string, skipped: boolean, why: string])[] = [
  ['/health,/metrics/prometheus,/metrics,/', '/health', true, 'default list, exact'],
  ['/health,/metrics/prometheus,/metrics,/', '/metrics', true, 'default list, exact'],
  ['/health,/metrics/prometheus,/metrics,/', '/metrics/prometheus', true, 'default list, exact'],
  ['/health,/metrics/prometheus,/metrics,/', '/', true, '`/` skips only the root document'],
  ['/health,/metrics/prometheus,/metrics,/', '/api/v1/pop', false, '`/` is not a prefix (one character)'],
  ['/health,/metrics/prometheus,/metrics,/', '/health/x', false, 'no trailing slash: exact only'],
  ['/assets/', '/assets/app.js', true, 'entry ending in / matches as a prefix'],
  ['/assets/', '/assets/', true, 'prefix entry also matches exactly'],
  ['/assets/', '/assets', false, 'prefix needs the slash'],
  ['/api/v1/push', '/api/v1/push', true, 'exact'],
  ['/api/v1/push', '/api/v1/push/x', false, 'exact only without a trailing slash'],
  ['/api/v1/system/', '/api/v1/system/maintenance', true, 'a skip opens even an admin route'],
  ['/API/', '/api/v1/x', false, 'case-sensitive'],
];
