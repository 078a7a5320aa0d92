/**
 * Reading the roles a token holds. Both claims are read on every token: `JWT_ROLES_CLAIM` (one
 * role string) and `JWT_ROLES_ARRAY_CLAIM` (an array of role strings). Claim names are literal
 * top-level keys, never paths (`realm_access.roles` is invisible). Matching is exact and
 * case-sensitive, with no splitting on spaces.
 *
 * Source: docs/security.md#roles.
 */
import type { Claims } from './claims.js';

/**
 * The set of role strings a token holds: the single claim when a non-empty string, plus the
 * non-empty string items of the array claim when it is an array.
 */
export function rolesOf(claims: Claims, rolesClaim: string, rolesArrayClaim: string): Set<string> {
  const held = new Set<string>();
  const single = Object.hasOwn(claims, rolesClaim) ? claims[rolesClaim] : undefined;
  if (typeof single === 'string' && single !== '') held.add(single);
  const many = Object.hasOwn(claims, rolesArrayClaim) ? claims[rolesArrayClaim] : undefined;
  if (Array.isArray(many)) for (const r of many) if (typeof r === 'string' && r !== '') held.add(r);
  return held;
}
