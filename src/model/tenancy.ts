/**
 * Tenancy constants shared by every layer (docs/proxy.md#tenancy).
 *
 * Every queue, partition, consumer group, KV namespace, lock and timer belongs to a tenant, an
 * opaque lowercase UUID. Requests that name none (tenancy off, or the header absent) act on the
 * default tenant, which also owns everything a data directory held before tenancy existed.
 */

/** The default tenant (Queen MQ's `00000000-0000-0000-0000-000000000001`, public reference `server/src/tenant.rs`). */
export const DEFAULT_TENANT = '00000000-0000-0000-0000-000000000001';

/** An 8-4-4-4-12 hexadecimal UUID, either case (the `x-queen-tenant` rule of docs/proxy.md#tenancy). */
export const TENANT_UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * The key of a tenant's queue in the broker's per-queue bookkeeping (activity series, dead-letter
 * depth, parked pops, metrics labels): the bare name for the default tenant, `tenant \0 name` for
 * another (a queue name never holds NUL), so two tenants' queues of one name never share a counter.
 */
export function queueSlot(tenant: string, queue: string): string {
  return tenant === DEFAULT_TENANT ? queue : `${tenant}\u0000${queue}`;
}

/** The inverse of {@link queueSlot}. */
export function slotQueue(slot: string): { tenant: string; queue: string } {
  const at = slot.indexOf('\u0000');
  return at < 0 ? { tenant: DEFAULT_TENANT, queue: slot } : { tenant: slot.slice(0, at), queue: slot.slice(at + 1) };
}

/**
 * The key under which the embedded proxy stamps the tenant it resolved on a raw request it hands
 * to the broker router in process (src/proxy/forward.ts): the router trusts it whatever
 * `QUEEN_TENANCY_HEADER` says, because no client can set a symbol-keyed property.
 */
export const PROXY_TENANT = Symbol.for('queen-ts.proxy-tenant');
