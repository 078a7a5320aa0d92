/**
 * Proxy API keys (docs/proxy.md#api-keys; public reference `proxy/src/auth.rs`, `proxy/src/store/data.rs`):
 * the format, the hash that is stored, how a request presents a key, and the authorization
 * matrix from a key's scopes to the route classes of the proxy's classification table.
 */
import { hash, randomBytes } from 'node:crypto';

/** The four key scopes. */
export const SCOPES = ['produce', 'consume', 'admin', 'read'] as const;
export type Scope = (typeof SCOPES)[number];

/** Features a plan may grant; a gated route needs its feature. */
export type Feature = 'streams' | 'traces' | 'kv' | 'timers' | 'ephemeral';

/**
 * A route class (docs/proxy.md#route-classification). `gated` routes name their feature and whether
 * the operation only reads (`read`), grows stored data (`grow`, refused while pushes are blocked)
 * or is otherwise open to producers and consumers (`open`).
 */
export type RouteClass =
  | { kind: 'operator' } | { kind: 'blocked' } | { kind: 'produce' } | { kind: 'consume' }
  | { kind: 'queue_admin' } | { kind: 'read' }
  | { kind: 'gated'; feature: Feature; op: 'read' | 'grow' | 'open' };

/**
 * A new key: `qk_<env>_` then 32 CSPRNG bytes in unpadded base64url (43 characters). Shown once,
 * never stored (store {@link hashKey} of it).
 */
export function generateKey(env: string): string {
  return `qk_${env}_${randomBytes(32).toString('base64url')}`;
}

/**
 * SHA-256 of the whole key string (UTF-8), 64 lowercase hex: what the store keeps. Runs on every
 * request with an API key, so it uses the one-shot `crypto.hash` (no Hash object per call).
 */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/**
 * The API key a request presents: `Authorization: Bearer <key>` (prefix case-insensitive) or the
 * bare key, trimmed; any value starting `qk_` is a key. Cookies are never read.
 * @returns the key, or undefined when the header holds none
 */
export function presentedKey(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  let v = authorization.trim();
  if (/^bearer /i.test(v)) v = v.slice(7).trim();
  return v.startsWith('qk_') ? v : undefined;
}

/**
 * The authorization matrix for API keys (docs/proxy.md#authorization-matrix): Produce ← `produce`;
 * Consume ← `consume`; QueueAdmin ← `admin`; Read ← `read` or `admin`; gated read ← any scope;
 * other gated ops ← `produce` or `consume`; Operator and Blocked ← never.
 */
export function keyAllows(scopes: readonly string[], cls: RouteClass): boolean {
  const has = (s: Scope) => scopes.includes(s);
  switch (cls.kind) {
    case 'produce': return has('produce');
    case 'consume': return has('consume');
    case 'queue_admin': return has('admin');
    case 'read': return has('read') || has('admin');
    case 'gated': return cls.op === 'read' ? scopes.some((s) => (SCOPES as readonly string[]).includes(s)) : has('produce') || has('consume');
    default: return false;
  }
}
