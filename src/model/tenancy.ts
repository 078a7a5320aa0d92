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
 * The key under which the embedded proxy stamps the tenant it resolved on a raw request it hands
 * to the broker router in process (src/proxy/forward.ts): the router trusts it whatever
 * `QUEEN_TENANCY_HEADER` says, because no client can set a symbol-keyed property.
 */
export const PROXY_TENANT = Symbol.for('queen-ts.proxy-tenant');
