/**
 * Tenancy and embedded-proxy settings (docs/proxy.md#configuration), validated at boot with the
 * rest of the configuration, before any listener binds. TLS material is read and parsed here
 * (docs/proxy.md#tls, public reference `proxy/src/harden.rs`), so a bad certificate stops the boot.
 */
import { createHash, createPrivateKey, createPublicKey, createSecretKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bool, ConfigError, int, str, type Env } from './env.js';

/** The broker router's tenancy rules (docs/proxy.md#tenancy). */
export interface TenancyConfig {
  /** `QUEEN_TENANCY_HEADER`: honour `x-queen-tenant` from the network. */
  header: boolean;
  /** `QUEEN_RAFT_TOKEN` (blank = unset): proves a broker-to-broker relay. Never logged. */
  raftToken: string | undefined;
}

/** The first tenant created at boot (`QUEEN_PROXY_BOOTSTRAP_*`), idempotent across restarts. */
export interface ProxyBootstrap {
  /** Tenant and cluster slug. */
  slug: string;
  email: string;
  plan: string;
  /** A plaintext key issued on that cluster with all four scopes; never logged. */
  apiKey: string | undefined;
}

/** `QUEEN_PROXY_*` settings; present only with `QUEEN_PROXY_EMBEDDED=true`. */
export interface ProxyConfig {
  /** `QUEEN_PROXY_PORT`; undefined when unset, empty or equal to `PORT` (the proxy fronts `PORT`). */
  port: number | undefined;
  /** `QUEEN_PROXY_CP_TOKEN` (blank = unset): the control-plane and metrics token. Never logged. */
  cpToken: string | undefined;
  /** `QUEEN_PROXY_ENFORCE` (default true): rate limits and quotas refuse; false = shadow mode (logged and counted only). */
  enforce: boolean;
  /** `QUEEN_PROXY_MAX_BODY_BYTES` (16 MiB): data-plane body cap, always enforced. */
  maxBodyBytes: number;
  /** `QUEEN_PROXY_LONGPOLL_MAX_MS` (90 s) and `QUEEN_PROXY_LONGPOLL_MARGIN_MS` (10 s). */
  longpollMaxMs: number;
  longpollMarginMs: number;
  /** `QUEEN_PROXY_REQUEST_TIMEOUT_MS` (60 s): upstream budget of a request that is not a long-poll pop. */
  requestTimeoutMs: number;
  /** `QUEEN_PROXY_OPERATOR_ENABLED` (default false): operator routes exist on the proxy. */
  operatorEnabled: boolean;
  /** `QUEEN_PROXY_STORAGE_SAMPLE_MS` (30 s): how often a tenant's stored bytes are read again for `max_retained_bytes`, ms. */
  storageSampleMs: number;
  /** Per-IP edge bucket: `QUEEN_EDGE_RATE` requests/s (200) and `QUEEN_EDGE_BURST` (400). */
  edgeRate: number;
  edgeBurst: number;
  /** `QUEEN_EDGE_TRUSTED_PROXIES`: peers whose `X-Forwarded-For` is honoured (exact IPs, comma-separated). */
  trustedProxies: string[];
  /** `QUEEN_TLS_CERT` / `QUEEN_TLS_KEY` contents (PEM), read at boot; undefined = plain HTTP. */
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** Environment of generated keys (`qk_<env>_…`), `QUEEN_PROXY_KEY_ENV` (default `live`). */
  keyEnv: string;
  bootstrap: ProxyBootstrap | undefined;
  /** Bootstrap password (`QUEEN_PROXY_BOOTSTRAP_PASSWORD`); never logged. */
  bootstrapPassword: string | undefined;
  sessions: SessionConfig;
}

/** Roles a user may hold on a cluster (docs/proxy.md#roles). */
export const ROLES = ['admin', 'producer', 'consumer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The session signer: EdDSA from `QUEEN_PROXY_JWT_ED25519_PEM` (private PKCS#8; `kid` = hex of the
 * first 16 bytes of SHA-256 of the raw 32-byte public key), else HS256 from
 * `QUEEN_PROXY_JWT_SECRET` (`kid` = `hs`), else none (logins cannot mint).
 */
export type SessionSigner =
  | { alg: 'EdDSA'; kid: string; privateKey: KeyObject; publicKey: KeyObject }
  | { alg: 'HS256'; kid: 'hs'; secret: KeyObject };

/**
 * The login guard's knobs (docs/proxy.md#login-guard), times in ms: the per-IP throttle
 * (`QUEEN_LOGIN_THROTTLE_ATTEMPTS` per `QUEEN_LOGIN_THROTTLE_WINDOW_MS`), the free failures per IP
 * and per account, the back-off base and the lockout cap.
 */
export interface LoginGuardConfig {
  throttleAttempts: number;
  throttleWindowMs: number;
  ipFreeFailures: number;
  accountFreeFailures: number;
  backoffBaseMs: number;
  lockoutMaxMs: number;
}

/** OAuth providers (docs/proxy.md#oauth); a provider is on when its client id and secret are set. */
export interface OAuthConfig {
  /** Tenant (slug) that first sign-ins are provisioned into: `QUEEN_PROXY_OAUTH_TENANT`, else the bootstrap tenant. */
  provisionTenant: string | undefined;
  google: { clientId: string; clientSecret: string; issuer: string; allowedDomains: string[] } | undefined;
  github: { clientId: string; clientSecret: string; baseUrl: string; apiUrl: string } | undefined;
}

/** Sessions for people (docs/proxy.md#sessions). */
export interface SessionConfig {
  signer: SessionSigner | undefined;
  /** `QUEEN_PROXY_JWT_ISS` (default `queen-proxy`). */
  issuer: string;
  /** `QUEEN_PROXY_JWT_AUD` (optional). */
  audience: string | undefined;
  /** `QUEEN_PROXY_JWT_TTL_S` (default 86400), seconds. */
  ttlS: number;
  /** `QUEEN_PROXY_COOKIE_NAME` (default `queen_session`). */
  cookieName: string;
  /** `QUEEN_PROXY_COOKIE_DOMAIN` (optional). */
  cookieDomain: string | undefined;
  /** `QUEEN_PROXY_PUBLIC_ORIGIN`: origins (comma-separated, exact `scheme://host[:port]`) allowed besides the Host's own. */
  publicOrigins: string[];
  /** `QUEEN_PROXY_DEFAULT_ROLE` (default `viewer`; an invalid value falls back to `viewer` with a warning). */
  defaultRole: Role;
  /** Set when `QUEEN_PROXY_DEFAULT_ROLE` held an invalid value (for the boot warning). */
  defaultRoleInvalid: boolean;
  guard: LoginGuardConfig;
  oauth: OAuthConfig;
}

/**
 * Reads the session signer.
 * @throws ConfigError when `QUEEN_PROXY_JWT_ED25519_PEM` is not an Ed25519 private key
 */
export function loadSigner(env: Env): SessionSigner | undefined {
  const pem = secret(env, 'QUEEN_PROXY_JWT_ED25519_PEM');
  if (pem !== undefined) {
    let privateKey: KeyObject;
    try {
      privateKey = createPrivateKey(pem.replace(/\\n/g, '\n'));
    } catch (e) {
      throw new ConfigError(`QUEEN_PROXY_JWT_ED25519_PEM: not a PEM private key (${(e as Error).message})`);
    }
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new ConfigError(`QUEEN_PROXY_JWT_ED25519_PEM: an Ed25519 key is required, got ${privateKey.asymmetricKeyType ?? 'unknown'}`);
    const publicKey = createPublicKey(privateKey);
    const raw = Buffer.from((publicKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url');
    return { alg: 'EdDSA', kid: createHash('sha256').update(raw).digest().subarray(0, 16).toString('hex'), privateKey, publicKey };
  }
  const hs = secret(env, 'QUEEN_PROXY_JWT_SECRET');
  return hs === undefined ? undefined : { alg: 'HS256', kid: 'hs', secret: createSecretKey(Buffer.from(hs, 'utf8')) };
}

function loadSessions(env: Env): SessionConfig {
  const roleRaw = str(env, 'QUEEN_PROXY_DEFAULT_ROLE', 'viewer').trim().toLowerCase();
  const roleOk = (ROLES as readonly string[]).includes(roleRaw);
  const list = (name: string) => str(env, name, '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const googleId = secret(env, 'GOOGLE_CLIENT_ID');
  const googleSecret = secret(env, 'GOOGLE_CLIENT_SECRET');
  const githubId = secret(env, 'GITHUB_CLIENT_ID');
  const githubSecret = secret(env, 'GITHUB_CLIENT_SECRET');
  const trimSlash = (u: string) => u.replace(/\/+$/, '');
  // An origin as browsers send it in `Origin`: scheme and host lower-cased, the default port dropped
  // (WHATWG URL serialisation), so `https://Q.example:443/` matches `Origin: https://q.example`.
  const webOrigin = (raw: string): string => {
    let u: URL | undefined;
    try {
      u = new URL(trimSlash(raw));
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.pathname !== '/' || u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') {
      throw new ConfigError(`QUEEN_PROXY_PUBLIC_ORIGIN: ${JSON.stringify(raw)} is not an origin (http[s]://host[:port], no path)`);
    }
    return u.origin;
  };
  return {
    signer: loadSigner(env),
    issuer: str(env, 'QUEEN_PROXY_JWT_ISS', 'queen-proxy'),
    audience: secret(env, 'QUEEN_PROXY_JWT_AUD'),
    ttlS: int(env, 'QUEEN_PROXY_JWT_TTL_S', 86_400, 60, 365 * 86_400),
    cookieName: str(env, 'QUEEN_PROXY_COOKIE_NAME', 'queen_session'),
    cookieDomain: secret(env, 'QUEEN_PROXY_COOKIE_DOMAIN'),
    publicOrigins: list('QUEEN_PROXY_PUBLIC_ORIGIN').map(webOrigin),
    defaultRole: roleOk ? roleRaw as Role : 'viewer',
    defaultRoleInvalid: !roleOk,
    guard: {
      throttleAttempts: int(env, 'QUEEN_LOGIN_THROTTLE_ATTEMPTS', 10, 1, 1_000_000),
      throttleWindowMs: int(env, 'QUEEN_LOGIN_THROTTLE_WINDOW_MS', 60_000, 1, 86_400_000),
      ipFreeFailures: int(env, 'QUEEN_LOGIN_IP_FREE_FAILURES', 10, 0, 1_000_000),
      accountFreeFailures: int(env, 'QUEEN_LOGIN_ACCOUNT_FREE_FAILURES', 5, 0, 1_000_000),
      backoffBaseMs: int(env, 'QUEEN_LOGIN_BACKOFF_BASE_MS', 1000, 1, 86_400_000),
      lockoutMaxMs: int(env, 'QUEEN_LOGIN_LOCKOUT_MAX_MS', 15 * 60_000, 1, 86_400_000),
    },
    oauth: {
      provisionTenant: (secret(env, 'QUEEN_PROXY_OAUTH_TENANT') ?? secret(env, 'QUEEN_PROXY_BOOTSTRAP_TENANT'))?.toLowerCase(),
      google: googleId && googleSecret ? {
        clientId: googleId, clientSecret: googleSecret, issuer: trimSlash(str(env, 'QUEEN_PROXY_GOOGLE_ISSUER', 'https://accounts.google.com')),
        allowedDomains: list('GOOGLE_ALLOWED_DOMAINS').map((d) => d.toLowerCase()),
      } : undefined,
      github: githubId && githubSecret ? {
        clientId: githubId, clientSecret: githubSecret,
        baseUrl: trimSlash(str(env, 'QUEEN_PROXY_GITHUB_BASE_URL', 'https://github.com')), apiUrl: trimSlash(str(env, 'QUEEN_PROXY_GITHUB_API_URL', 'https://api.github.com')),
      } : undefined,
    },
  };
}

function secret(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/**
 * Reads `QUEEN_TLS_CERT` / `QUEEN_TLS_KEY`: both or neither; each file readable and valid PEM.
 * @throws ConfigError `QUEEN_TLS_CERT set without QUEEN_TLS_KEY`, `read <path>: <error>`, `QUEEN_TLS_CERT <path>: not a PEM certificate…`,
 *   `QUEEN_TLS_KEY <path>: the key does not belong to the certificate…` (any key type; checked on the first certificate of the file)
 */
export function loadTls(env: Env): { cert: Buffer; key: Buffer } | undefined {
  const certPath = secret(env, 'QUEEN_TLS_CERT');
  const keyPath = secret(env, 'QUEEN_TLS_KEY');
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (keyPath === undefined) throw new ConfigError('QUEEN_TLS_CERT set without QUEEN_TLS_KEY');
  if (certPath === undefined) throw new ConfigError('QUEEN_TLS_KEY set without QUEEN_TLS_CERT');
  const read = (p: string): Buffer => {
    try {
      return readFileSync(p);
    } catch (e) {
      throw new ConfigError(`read ${p}: ${(e as Error).message}`);
    }
  };
  const cert = read(certPath);
  const key = read(keyPath);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (e) {
    throw new ConfigError(`QUEEN_TLS_CERT ${certPath}: not a PEM certificate (${(e as Error).message})`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    throw new ConfigError(`QUEEN_TLS_KEY ${keyPath}: not a PEM private key (${(e as Error).message})`);
  }
  // A key of another certificate (or of another type: an EC key for an RSA certificate) would
  // boot a listener on which every handshake fails.
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new ConfigError(`QUEEN_TLS_KEY ${keyPath}: the key does not belong to the certificate in QUEEN_TLS_CERT ${certPath} (its first certificate)`);
  }
  return { cert, key };
}

/**
 * Tenancy settings, with the boot interlock of docs/proxy.md#tenancy.
 * @throws ConfigError when `QUEEN_TENANCY_HEADER` is on without `QUEEN_KV_TRUSTED_PROXY`
 */
export function loadTenancyConfig(env: Env): TenancyConfig {
  const header = bool(env, 'QUEEN_TENANCY_HEADER', false);
  const trusted = bool(env, 'QUEEN_KV_TRUSTED_PROXY', false); // read (validated) even when unused
  if (header && !trusted) {
    throw new ConfigError('QUEEN_TENANCY_HEADER=1 without QUEEN_KV_TRUSTED_PROXY=1: the broker would trust x-queen-tenant from anyone who reaches PORT; '
      + 'only a proxy in front that sets the header and strips the client\'s may make it true (set QUEEN_KV_TRUSTED_PROXY=1 to confirm)');
  }
  return { header, raftToken: secret(env, 'QUEEN_RAFT_TOKEN') };
}

/**
 * `QUEEN_PROXY_BOOTSTRAP_PASSWORD`: unset or empty = none; else 8 to 72 bytes, the rule of
 * `POST /api/cp/users` (bcrypt reads only the first 72 bytes, so a longer password would accept any
 * password sharing them). The message never holds the value.
 * @throws ConfigError outside 8–72 bytes
 */
function bootstrapPassword(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 8 || Buffer.byteLength(raw) > 72) throw new ConfigError(`QUEEN_PROXY_BOOTSTRAP_PASSWORD must be 8 to 72 bytes (got ${Buffer.byteLength(raw)})`);
  return raw;
}

/**
 * The embedded proxy's settings, undefined unless `QUEEN_PROXY_EMBEDDED=true`.
 * @param port the broker's `PORT`, to tell the two layouts apart
 * @throws ConfigError on a bad value or bad TLS material
 */
export function loadProxyConfig(env: Env, port: number): ProxyConfig | undefined {
  const tls = loadTls(env); // validated even when the proxy is off, so a typo is never silently ignored
  const enforce = bool(env, 'QUEEN_PROXY_ENFORCE', true);
  const operatorEnabled = bool(env, 'QUEEN_PROXY_OPERATOR_ENABLED', false);
  if (!bool(env, 'QUEEN_PROXY_EMBEDDED', false)) {
    if (tls) throw new ConfigError('QUEEN_TLS_CERT/QUEEN_TLS_KEY are set but QUEEN_PROXY_EMBEDDED is not true: TLS is served on the proxy listener only, PORT stays plain HTTP');
    return undefined;
  }
  const portRaw = (env.QUEEN_PROXY_PORT ?? '').trim();
  const proxyPort = portRaw === '' ? undefined : int(env, 'QUEEN_PROXY_PORT', port, 0, 65_535);
  const slug = secret(env, 'QUEEN_PROXY_BOOTSTRAP_TENANT');
  return {
    port: proxyPort === undefined || (proxyPort === port && port !== 0) ? undefined : proxyPort,
    cpToken: secret(env, 'QUEEN_PROXY_CP_TOKEN'),
    enforce,
    maxBodyBytes: int(env, 'QUEEN_PROXY_MAX_BODY_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    longpollMaxMs: int(env, 'QUEEN_PROXY_LONGPOLL_MAX_MS', 90_000, 0, 3_600_000),
    longpollMarginMs: int(env, 'QUEEN_PROXY_LONGPOLL_MARGIN_MS', 10_000, 0, 600_000),
    requestTimeoutMs: int(env, 'QUEEN_PROXY_REQUEST_TIMEOUT_MS', 60_000, 1, 3_600_000),
    operatorEnabled,
    storageSampleMs: int(env, 'QUEEN_PROXY_STORAGE_SAMPLE_MS', 30_000, 100, 3_600_000),
    edgeRate: int(env, 'QUEEN_EDGE_RATE', 200, 1, 10_000_000),
    edgeBurst: int(env, 'QUEEN_EDGE_BURST', 400, 1, 10_000_000),
    trustedProxies: str(env, 'QUEEN_EDGE_TRUSTED_PROXIES', '').split(',').map((s) => s.trim()).filter((s) => s !== ''),
    tls,
    keyEnv: str(env, 'QUEEN_PROXY_KEY_ENV', 'live'),
    bootstrap: slug === undefined ? undefined : {
      slug: slug.toLowerCase(),
      email: str(env, 'QUEEN_PROXY_BOOTSTRAP_EMAIL', 'admin@localhost').trim().toLowerCase(),
      plan: str(env, 'QUEEN_PROXY_BOOTSTRAP_PLAN', 'dev'),
      apiKey: secret(env, 'QUEEN_PROXY_BOOTSTRAP_API_KEY'),
    },
    bootstrapPassword: bootstrapPassword(env.QUEEN_PROXY_BOOTSTRAP_PASSWORD),
    sessions: loadSessions(env),
  };
}
