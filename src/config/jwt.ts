/**
 * Broker JWT configuration: environment → typed {@link JwtConfig}, read once at boot, never reloaded.
 * Boot validation is fatal ({@link ConfigError}) for exactly the three cases listed in docs/configuration.md#jwt;
 * everything else boots and fails per request.
 *
 * Source: docs/configuration.md#jwt.
 */
import { ACCEPTED_ALGS, ALGORITHM_SETTINGS, isAlgorithmSetting, type TokenAlg } from '../model/jwt-algorithms.js';
import { bool, ConfigError, int, type Env } from './env.js';

/** The role values that mean each role (docs/security.md#roles). */
export interface RoleNames {
  readonly admin: string;
  readonly readWrite: string;
  readonly readOnly: string;
  readonly writeOnly: string;
}

export interface JwtConfig {
  /** `JWT_ENABLED` (default false). Off: every request gets an empty identity. */
  readonly enabled: boolean;
  /** `JWT_ALGORITHM` exactly as configured (default `HS256`). */
  readonly algorithm: string;
  /** Token `alg` values accepted (docs/security.md#algorithms); empty when JWT is off. */
  readonly acceptedAlgs: ReadonlySet<TokenAlg>;
  /** `JWT_SECRET`: HMAC key, its UTF-8 bytes as given. Never log it. */
  readonly secret: string;
  /** `JWT_PUBLIC_KEY`: RSA or Ed25519 PEM (or X.509 certificate). Never log it. */
  readonly publicKey: string;
  /** `JWT_JWKS_URL` (empty: no JWKS). */
  readonly jwksUrl: string;
  /** `JWT_JWKS_REFRESH_INTERVAL`, seconds between background refreshes (default 3600, min 1). */
  readonly jwksRefreshIntervalSec: number;
  /** `JWT_JWKS_TIMEOUT_MS`, per-fetch timeout in ms (default 5000, min 1). */
  readonly jwksTimeoutMs: number;
  /** `JWT_ISSUER`: exact `iss` required when non-empty. */
  readonly issuer: string;
  /** `JWT_AUDIENCE` split on `,` (trimmed, empties dropped): one match with `aud` required when non-empty. */
  readonly audiences: readonly string[];
  /** `JWT_CLOCK_SKEW`, seconds applied to exp, nbf and iat (default 30). */
  readonly clockSkewSec: number;
  /** `JWT_SKIP_PATHS` entries (default `/health,/metrics/prometheus,/metrics,/`). */
  readonly skipPaths: readonly string[];
  /** `JWT_ROLES_CLAIM`: top-level claim holding one role string (default `role`). */
  readonly rolesClaim: string;
  /** `JWT_ROLES_ARRAY_CLAIM`: top-level claim holding an array of role strings (default `roles`). */
  readonly rolesArrayClaim: string;
  /** `JWT_ROLE_ADMIN`, `JWT_ROLE_READ_WRITE`, `JWT_ROLE_READ_ONLY`, `JWT_ROLE_WRITE_ONLY`. */
  readonly roles: RoleNames;
  /** Stricter option (docs/security.md#claims): `JWT_REQUIRE_EXP` (default false) rejects tokens without `exp`. */
  readonly requireExp: boolean;
  /** Stricter option (docs/security.md#claims): `JWT_MAX_LIFETIME`, seconds; rejects `exp - iat` above it. 0 = off (default). */
  readonly maxLifetimeSec: number;
}

/** Default of `JWT_SKIP_PATHS`. */
export const DEFAULT_SKIP_PATHS = '/health,/metrics/prometheus,/metrics,/';

/** Prefix of every fatal JWT boot message (docs/configuration.md#jwt). */
export const JWT_CONFIG_ERROR_PREFIX = 'invalid JWT auth configuration: ';

/** A string variable: the default only when unset; a variable set to `""` is the empty string. */
function s(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined ? fallback : v;
}

/** A comma list: split on `,`, trim each entry, drop empty entries. */
function list(v: string): string[] {
  return v.split(',').map((e) => e.trim()).filter((e) => e !== '');
}

function fail(reason: string): never {
  throw new ConfigError(JWT_CONFIG_ERROR_PREFIX + reason);
}

/**
 * Reads the broker JWT configuration. With `JWT_ENABLED` off nothing else is read or validated
 * (an invalid `JWT_ALGORITHM` is inert) and the defaults are returned.
 * @throws ConfigError (`invalid JWT auth configuration: …`) when JWT is on and: the algorithm is
 *   outside the eight valid settings (the message names the whole set); an HS setting or `auto` has
 *   none of JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URL; an RS setting or `EdDSA` has neither
 *   JWT_PUBLIC_KEY nor JWT_JWKS_URL. Also when a boolean or integer variable is malformed.
 */
export function loadJwtConfig(env: Env = process.env): JwtConfig {
  const enabled = bool(env, 'JWT_ENABLED', false);
  if (!enabled) return defaults();

  const algorithm = s(env, 'JWT_ALGORITHM', 'HS256');
  const secret = s(env, 'JWT_SECRET', '');
  const publicKey = s(env, 'JWT_PUBLIC_KEY', '');
  const jwksUrl = s(env, 'JWT_JWKS_URL', '').trim();
  if (!isAlgorithmSetting(algorithm)) {
    fail(`JWT_ALGORITHM=${algorithm} is not supported (use ${ALGORITHM_SETTINGS.slice(0, -1).join(', ')}, or auto)`);
  }
  if (algorithm === 'auto' || algorithm.startsWith('HS')) {
    if (secret === '' && publicKey === '' && jwksUrl === '') {
      fail(
        `JWT_ENABLED=true with JWT_ALGORITHM=${algorithm} but no key material: set JWT_SECRET (HS256/HS384/HS512), ` +
          'or JWT_PUBLIC_KEY / JWT_JWKS_URL (RS256/EdDSA)',
      );
    }
  } else if (publicKey === '' && jwksUrl === '') {
    fail(`JWT_ENABLED=true with JWT_ALGORITHM=${algorithm} but neither JWT_PUBLIC_KEY nor JWT_JWKS_URL is set`);
  }

  return {
    enabled: true,
    algorithm,
    acceptedAlgs: new Set(ACCEPTED_ALGS[algorithm]),
    secret,
    publicKey,
    jwksUrl,
    jwksRefreshIntervalSec: Math.max(1, int(env, 'JWT_JWKS_REFRESH_INTERVAL', 3600, 0, 31_536_000)),
    jwksTimeoutMs: Math.max(1, int(env, 'JWT_JWKS_TIMEOUT_MS', 5000, 0, 600_000)),
    issuer: s(env, 'JWT_ISSUER', ''),
    audiences: list(s(env, 'JWT_AUDIENCE', '')),
    clockSkewSec: int(env, 'JWT_CLOCK_SKEW', 30, 0, 86_400),
    skipPaths: list(s(env, 'JWT_SKIP_PATHS', DEFAULT_SKIP_PATHS)),
    rolesClaim: s(env, 'JWT_ROLES_CLAIM', 'role'),
    rolesArrayClaim: s(env, 'JWT_ROLES_ARRAY_CLAIM', 'roles'),
    roles: {
      admin: s(env, 'JWT_ROLE_ADMIN', 'admin'),
      readWrite: s(env, 'JWT_ROLE_READ_WRITE', 'read-write'),
      readOnly: s(env, 'JWT_ROLE_READ_ONLY', 'read-only'),
      writeOnly: s(env, 'JWT_ROLE_WRITE_ONLY', 'write-only'),
    },
    requireExp: bool(env, 'JWT_REQUIRE_EXP', false),
    maxLifetimeSec: int(env, 'JWT_MAX_LIFETIME', 0, 0, 315_360_000),
  };
}

/** The configuration with JWT off: the defaults of docs/configuration.md#jwt, nothing read from the environment. */
function defaults(): JwtConfig {
  return {
    enabled: false,
    algorithm: 'HS256',
    acceptedAlgs: new Set(),
    secret: '',
    publicKey: '',
    jwksUrl: '',
    jwksRefreshIntervalSec: 3600,
    jwksTimeoutMs: 5000,
    issuer: '',
    audiences: [],
    clockSkewSec: 30,
    skipPaths: list(DEFAULT_SKIP_PATHS),
    rolesClaim: 'role',
    rolesArrayClaim: 'roles',
    roles: { admin: 'admin', readWrite: 'read-write', readOnly: 'read-only', writeOnly: 'write-only' },
    requireExp: false,
    maxLifetimeSec: 0,
  };
}

/**
 * The configuration as it may be logged: secrets replaced by `<unset>` / `<set:N chars>`
 * (docs/security.md#never-logged). Never log a {@link JwtConfig} directly.
 */
export function describeJwtConfig(cfg: JwtConfig): Record<string, unknown> {
  const mask = (v: string): string => (v === '' ? '<unset>' : `<set:${v.length} chars>`);
  return {
    enabled: cfg.enabled,
    algorithm: cfg.algorithm,
    acceptedAlgs: [...cfg.acceptedAlgs],
    secret: mask(cfg.secret),
    publicKey: mask(cfg.publicKey),
    jwksUrl: cfg.jwksUrl || '<unset>',
    jwksRefreshIntervalSec: cfg.jwksRefreshIntervalSec,
    jwksTimeoutMs: cfg.jwksTimeoutMs,
    issuer: cfg.issuer,
    audiences: cfg.audiences,
    clockSkewSec: cfg.clockSkewSec,
    skipPaths: cfg.skipPaths,
    rolesClaim: cfg.rolesClaim,
    rolesArrayClaim: cfg.rolesArrayClaim,
    roles: cfg.roles,
    requireExp: cfg.requireExp,
    maxLifetimeSec: cfg.maxLifetimeSec,
  };
}
