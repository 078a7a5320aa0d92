/**
 * Roles per cluster for people (docs/proxy.md#roles; public reference `proxy/src/auth.rs`): which
 * role a session holds on the cluster a request resolved to, and which route classes each role may
 * use.
 *
 * | class | roles |
 * |---|---|
 * | Produce | admin, producer |
 * | Consume | admin, consumer |
 * | QueueAdmin | admin |
 * | Read, gated read | any |
 * | other gated ops | admin, producer, consumer |
 * | Operator | a live operator only |
 * | Blocked | never |
 *
 * A live operator (`is_operator` and `QUEEN_PROXY_OPERATOR_ENABLED=true`) is admin on every cluster.
 */
import type { Role } from '../../config/proxy.js';
import type { ClusterRow, ProxyStore, UserRow } from '../../storage/proxy.js';
import type { RouteClass } from './api-keys.js';
import type { SessionClaims } from './sessions.js';

/** True when `role` may use a route of class `cls` (Operator is decided by {@link isLiveOperator}). */
export function roleAllows(role: Role, cls: RouteClass): boolean {
  switch (cls.kind) {
    case 'produce': return role === 'admin' || role === 'producer';
    case 'consume': return role === 'admin' || role === 'consumer';
    case 'queue_admin': return role === 'admin';
    case 'read': return true;
    case 'gated': return cls.op === 'read' || role !== 'viewer';
    default: return false;
  }
}

/** True for an operator while `QUEEN_PROXY_OPERATOR_ENABLED` is on. */
export function isLiveOperator(user: UserRow, operatorEnabled: boolean): boolean {
  return operatorEnabled && user.isOperator;
}

/** The outcome of resolving a session's role on a cluster. */
export type RoleResolution =
  | { ok: true; role: Role }
  | { ok: false; status: 401 | 403; error: 'session no longer valid' | 'token not valid for this cluster' | 'no role on this cluster' };

/**
 * The role of a session on `cluster`: a token `cluster` claim equal to it → the token's `role`; a
 * different cluster → refused; no claim → the user's stored role (a live operator: admin); none →
 * refused; the user gone → `401 session no longer valid`.
 */
export function resolveRole(claims: SessionClaims, user: UserRow | undefined, cluster: ClusterRow, store: ProxyStore, operatorEnabled: boolean): RoleResolution {
  if (!user) return { ok: false, status: 401, error: 'session no longer valid' };
  if (claims.cluster !== undefined) {
    if (claims.cluster !== cluster.id) return { ok: false, status: 403, error: 'token not valid for this cluster' };
    return { ok: true, role: isLiveOperator(user, operatorEnabled) ? 'admin' : claims.role };
  }
  if (isLiveOperator(user, operatorEnabled)) return { ok: true, role: 'admin' };
  const role = store.roleOf(user.id, cluster.id);
  if (role === undefined) return { ok: false, status: 403, error: 'no role on this cluster' };
  return { ok: true, role: role as Role };
}

/** The clusters a user may select, with their role (a live operator: every cluster, admin). */
export function selectableClusters(user: UserRow, store: ProxyStore, operatorEnabled: boolean): { cluster: ClusterRow; role: Role }[] {
  if (isLiveOperator(user, operatorEnabled)) return store.clusters().map((cluster) => ({ cluster, role: 'admin' as Role }));
  const out: { cluster: ClusterRow; role: Role }[] = [];
  for (const r of store.rolesOfUser(user.id)) {
    const cluster = store.clusterById(r.clusterId);
    if (cluster) out.push({ cluster, role: r.role as Role });
  }
  return out.sort((a, b) => a.cluster.slug.localeCompare(b.cluster.slug));
}
