/**
 * The error registry: every error the broker answers with has a stable `code`, an HTTP status
 * and a default message. Answers are `{"error": message, "code": code}`; tests assert on `code`.
 *
 * Codes are part of the public contract (clients may branch on them) and are listed in
 * docs/http-api.md#error-codes. Add new ones here, never inline elsewhere.
 */

/** Registry entry: HTTP status and default message for a code. */
export interface ErrorSpec {
  readonly status: number;
  readonly message: string;
}

/** Every error code the broker answers with: HTTP status and default message. */
export const ERRORS = {
  // 4xx: the caller's mistake
  bad_json: { status: 400, message: 'bad body: malformed JSON' },
  json_too_deep: { status: 400, message: 'bad body: JSON nested too deeply' },
  invalid_request: { status: 400, message: 'invalid request' },
  invalid_option: { status: 400, message: 'invalid queue option' },
  queue_required: { status: 400, message: 'queue is required' },
  namespace_or_task_required: { status: 400, message: 'namespace or task is required' },
  items_required: { status: 400, message: 'items array is required' },
  operations_required: { status: 400, message: 'operations array is required' },
  batch_too_large: { status: 400, message: 'too many items in one request' },
  payload_too_large: { status: 413, message: 'payload too large' },
  body_too_large: { status: 413, message: 'request body too large' },
  request_headers_too_large: { status: 431, message: 'request headers too large (QUEEN_MAX_HEADER_BYTES)' },
  request_timeout: { status: 408, message: 'request timed out' },
  expectation_failed: { status: 417, message: 'unsupported Expect header: only 100-continue is supported' },
  unsupported_media_type: { status: 415, message: 'unsupported content type' },
  unsupported_encoding: { status: 415, message: 'unsupported Content-Encoding' },
  name_too_long: { status: 400, message: 'name too long' },
  invalid_name: { status: 400, message: 'invalid name' },
  queue_not_found: { status: 404, message: 'Queue not found' },
  partition_not_found: { status: 404, message: 'Partition not found' },
  message_not_found: { status: 404, message: 'Message not found' },
  dlq_not_found: { status: 404, message: 'Dead letter not found' },
  group_not_found: { status: 404, message: 'Consumer group not found' },
  no_such_route: { status: 404, message: 'no such route' },
  invalid_path: { status: 400, message: 'invalid request path' },
  method_not_allowed: { status: 405, message: 'method not allowed' },
  too_many_waiters: { status: 429, message: 'too many parked consumers on this queue' },
  timer_horizon_exceeded: { status: 400, message: 'timer delay exceeds the scheduling horizon' },
  timer_unsupported: { status: 400, message: 'timer payload encoding not supported by this broker' },
  // KV and locks (docs/http-api.md#kv, docs/http-api.md#locks): 400s answer {"error":"kv_bad_request","code":<code>,"reason":…}
  kv_bad_request: { status: 400, message: 'kv_bad_request' },
  kv_unknown_op: { status: 400, message: 'kv_bad_request' },
  kv_bad_namespace: { status: 400, message: 'kv_bad_request' },
  kv_bad_key: { status: 400, message: 'kv_bad_request' },
  kv_value_required: { status: 400, message: 'kv_bad_request' },
  kv_expiry_not_specified: { status: 400, message: 'kv_bad_request' },
  kv_bad_ttl: { status: 400, message: 'kv_bad_request' },
  kv_bad_expect: { status: 400, message: 'kv_bad_request' },
  kv_bad_incr: { status: 400, message: 'kv_bad_request' },
  kv_prefix_required: { status: 400, message: 'kv_bad_request' },
  kv_bad_limit: { status: 400, message: 'kv_bad_request' },
  kv_too_many_operations: { status: 400, message: 'kv_bad_request' },
  kv_query_not_allowed: { status: 400, message: 'kv_bad_request' },
  /** Internal: a `required` precondition was lost; callers answer 200 `{ok:false, reason:"kv_precondition", …}`. */
  kv_precondition: { status: 409, message: 'a required KV precondition was lost; nothing was written' },
  locks_bad_request: { status: 400, message: 'locks_bad_request' },
  // ephemeral queues (docs/ephemeral.md#status-codes)
  ephemeral_bad_request: { status: 400, message: 'bad ephemeral request' },
  feature_gated: { status: 403, message: 'ephemeral queues are not enabled for this tenant' },
  ephemeral_quota_exceeded: { status: 403, message: "the tenant's ephemeral allowance is exhausted" },
  internal_only: { status: 403, message: 'internal route: only a verified relay between nodes may call it' },
  ephemeral_queue_not_found: { status: 404, message: 'no ephemeral queue by that name exists on this broker' },
  queue_full: { status: 429, message: 'the ephemeral queue is full' },
  rate_limited: { status: 429, message: 'ephemeral push rate exceeded' },
  ephemeral_configure_failed: { status: 500, message: 'the declaration could not be stored' },
  ephemeral_delete_failed: { status: 500, message: 'the rings were dropped but the declaration was not' },
  ephemeral_unavailable: { status: 503, message: 'the broker holds as many ephemeral bytes as it may' },
  ephemeral_disabled: { status: 503, message: 'ephemeral queues are switched off on this broker' },
  owner_moved: { status: 503, message: 'the partition is owned by another node now: retry' },
  ephemeral_forward_failed: { status: 503, message: 'the node owning the partition did not answer the relay: retry' },
  leaving: { status: 503, message: 'this node is stopping' },
  encryption_key_missing: {
    status: 400,
    message: 'encryptionEnabled needs QUEEN_ENCRYPTION_KEY to be set on the broker',
  },
  // streams (docs/streams.md#errors): the cycle answers 200 with success:false for its own refusals
  streams_bad_request: { status: 400, message: 'bad streams request' },
  streams_not_found: { status: 404, message: 'not found' },
  streams_config_hash_mismatch: { status: 409, message: 'config_hash mismatch' },
  // auth (messages byte for byte as listed in docs/security.md#refusals)
  auth_required: { status: 401, message: 'Authentication required' },
  bad_token_header: { status: 401, message: 'Bad token header' },
  unsupported_token_algorithm: { status: 401, message: 'Unsupported token algorithm' },
  invalid_token_signature: { status: 401, message: 'Invalid token signature' },
  token_expired: { status: 401, message: 'Token has expired' },
  token_not_yet_valid: { status: 401, message: 'Token not yet valid' },
  token_issued_in_future: { status: 401, message: 'Token issued in the future' },
  invalid_token_issuer: { status: 401, message: 'Invalid token issuer' },
  invalid_token_audience: { status: 401, message: 'Invalid token audience' },
  unknown_key_id: { status: 401, message: 'Unknown key ID' },
  token_no_expiry: { status: 401, message: 'Token has no expiry' },
  token_lifetime_too_long: { status: 401, message: 'Token lifetime too long' },
  insufficient_permissions: { status: 403, message: 'Insufficient permissions' },
  hs_secret_not_configured: { status: 500, message: 'HS secret not configured' },
  invalid_rsa_pem: { status: 500, message: 'invalid RSA public key PEM' },
  invalid_ed_pem: { status: 500, message: 'invalid Ed public key PEM' },
  // tenancy (docs/proxy.md#tenancy)
  invalid_tenant: { status: 400, message: 'invalid x-queen-tenant header (must be a UUID)' },
  tenant_unverified: { status: 403, message: 'a relayed request names a tenant this broker cannot verify: set the same QUEEN_RAFT_TOKEN on every node' },
  not_tenanted: { status: 403, message: 'this route serves the default tenant only on this broker' },
  // the embedded proxy's envelope (docs/proxy.md#errors)
  unauthorized: { status: 401, message: 'unauthorized' },
  forbidden: { status: 403, message: 'operation not permitted for this credential' },
  route_blocked: { status: 404, message: 'not available' },
  not_found: { status: 404, message: 'not found' },
  cluster_suspended: { status: 403, message: 'cluster suspended' },
  push_blocked: { status: 403, message: 'pushes are blocked on this cluster' },
  quota_exceeded: { status: 403, message: 'quota exceeded' },
  storage_quota_exceeded: { status: 403, message: 'storage quota exceeded' },
  invalid: { status: 400, message: 'invalid request' },
  conflict: { status: 409, message: 'conflict' },
  system_tenant: { status: 409, message: 'the system tenants cannot be changed' },
  tenant_unknown: { status: 404, message: 'unknown tenant' },
  cluster_unknown: { status: 404, message: 'unknown cluster' },
  key_unknown: { status: 404, message: 'unknown api key' },
  user_unknown: { status: 404, message: 'unknown user' },
  csrf_rejected: { status: 403, message: 'cross-site request refused: the origin is not allowed' },
  oauth_state_mismatch: { status: 400, message: 'sign-in state does not match this browser' },
  oauth_refused: { status: 403, message: 'sign-in refused' },
  promote_unavailable: { status: 409, message: 'this node cannot promote its database: promote PostgreSQL itself (pg_ctl promote, or your failover manager)' },
  not_purged: { status: 409, message: 'the tenant still holds queues: purge it first (POST /api/cp/tenants/:slug/purge) or use ?force=true' },
  unavailable: { status: 503, message: 'the broker is unavailable' },
  upstream_timeout: { status: 504, message: 'the broker did not answer within the proxy budget' },
  not_deleting: { status: 409, message: 'the tenant is not in status deleting (use ?force=true)' },
  encryption_required: { status: 409, message: 'storing an S3 secret needs QUEEN_ENCRYPTION_KEY on the broker' },
  // 5xx: ours
  encryption_unavailable: {
    status: 503,
    message: 'queue has encryptionEnabled but QUEEN_ENCRYPTION_KEY is not set on the broker',
  },
  payload_integrity_failed: { status: 500, message: 'cannot decrypt message: stored payload failed authentication' },
  shutting_down: { status: 503, message: 'broker is shutting down' },
  // several nodes on PostgreSQL (docs/cluster.md#failures): answered with Retry-After: 1
  db_read_only: { status: 503, message: 'the database refuses writes (read-only); writes resume when it accepts them again' },
  standby: { status: 503, message: 'this cluster is a standby of another; writes are refused until it is promoted' },
  db_unavailable: { status: 503, message: 'the database cannot be reached or ended the session; retry' },
  // answered with Retry-After: 1; nothing was written
  write_contention: { status: 503, message: 'what this call decided on kept changing under it (other writers); nothing was written: retry' },
  maintenance_mode: { status: 503, message: 'push maintenance is on' },
  spool_failed: { status: 500, message: 'push maintenance spool write failed' },
  storage_error: { status: 500, message: 'storage error' },
  internal_error: { status: 500, message: 'internal error' },
} as const satisfies Record<string, ErrorSpec>;

/** A stable error code from the registry. */
export type ErrorCode = keyof typeof ERRORS;

/**
 * The one exception type the domain and HTTP layers throw for client-visible errors.
 * `extra` fields are merged into the JSON answer (e.g. `invalid` on /configure).
 */
export class QueenError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extra: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, extra?: Record<string, unknown>) {
    super(message ?? ERRORS[code].message);
    this.name = 'QueenError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.extra = extra;
  }

  /** The JSON answer body: `{error, code, ...extra}`. */
  toJSON(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.extra };
  }
}

/** True when `e` is a client-visible broker error. */
export function isQueenError(e: unknown): e is QueenError {
  return e instanceof QueenError;
}
