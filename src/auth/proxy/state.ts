/**
 * The proxy's state as operations (docs/proxy.md#state, docs/proxy.md#control-plane; public reference
 * `proxy/src/cp.rs`, `proxy/src/store/*.rs`): tenants, clusters, users, API keys and plans over the
 * proxy sub-store (src/storage/proxy.ts), with the validation messages of the reference, and the
 * lookup that turns a presented key into its cluster.
 *
 * Every refusal is a QueenError with the control plane's codes: `invalid` (400), `conflict`,
 * `system_tenant`, `not_deleting` (409), `tenant_unknown`, `cluster_unknown`, `key_unknown` (404).
 */
import bcrypt from 'bcryptjs';
import { randomUUID } from 'node:crypto';
import { ROLES, type Role } from '../../config/proxy.js';
import { QueenError } from '../../errors.js';
import { DEFAULT_TENANT } from '../../model/tenancy.js';
import { ProxyConflict, type ApiKeyRow, type ClusterRow, type ProxyStore, type TenantRow, type UserRow } from '../../storage/proxy.js';
import type { Clock } from '../../util/clock.js';
import { generateKey, hashKey, SCOPES, type Feature } from './api-keys.js';

export type { ApiKeyRow, ClusterRow, TenantRow, UserRow } from '../../storage/proxy.js';

/** bcrypt cost of stored password hashes. */
export const BCRYPT_COST = 10;
/** A hash no password matches, compared against when the e-mail is unknown (same work either way). */
const NO_USER_HASH = bcrypt.hashSync('no such user', BCRYPT_COST);

/** The proxy's own system tenant (reserved like the broker's default tenant). */
export const SYSTEM_TENANT = '00000000-0000-0000-0000-000000000000';
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const PLAN_CODE = /^[a-z][a-z0-9-]*$/;
/** `last_used_at` is written at most this often per key, ms. */
export const LAST_USED_EVERY_MS = 60_000;

/** Limit names of a plan and of a cluster's overrides (`null` = unlimited). */
export const LIMIT_NAMES = [
  'max_req_per_sec', 'req_burst', 'max_msgs_per_sec', 'msgs_burst', 'max_queues', 'max_partitions_per_queue',
  'max_parked_pops', 'max_payload_bytes', 'max_batch_items', 'max_retained_bytes', 'max_retention_seconds',
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];
export type Limits = Partial<Record<LimitName, number | null>>;

/** Plans present in every store (a plan's missing feature is false). */
const BUILT_IN_PLANS: { code: string; limits: Limits; features: Partial<Record<Feature, boolean>> }[] = [
  { code: 'dev', limits: {}, features: { streams: true, traces: true, kv: true, timers: true } },
  { code: 'free', limits: { max_req_per_sec: 50, req_burst: 100 }, features: { traces: true } },
];

/** What a verified key resolves to. */
export interface KeyGrant {
  key: ApiKeyRow;
  cluster: ClusterRow;
  tenant: TenantRow;
  /** The cluster's effective limits (plan merged with overrides). */
  limits: Limits;
  /** The features of the cluster's plan. */
  features: ReadonlySet<Feature>;
}

/** Answer of {@link ProxyState.bootstrap}; `api_key` is the plaintext, once, `null` on a re-run. */
export interface BootstrapResult {
  tenant_id: string;
  cluster_id: string;
  user_id: string;
  api_key: string | null;
  password_set: boolean;
  can_login: boolean;
}

function invalid(message: string): QueenError {
  return new QueenError('invalid', message);
}

/** Longest display name of a tenant or an API key, characters (after trimming). */
export const MAX_DISPLAY_NAME_CHARS = 200;

/**
 * Refuses a display name longer than {@link MAX_DISPLAY_NAME_CHARS} once trimmed (a name is shown in
 * listings and the console, never an identifier: a megabyte of it is a mistake or an attack).
 * @param where the store operation, for the message (`create_tenant`, `issue_api_key`)
 * @throws QueenError `invalid`
 */
function checkDisplayName(v: unknown, where: string): void {
  if (typeof v === 'string' && v.length > MAX_DISPLAY_NAME_CHARS && [...v.trim()].length > MAX_DISPLAY_NAME_CHARS) {
    throw invalid(`${where}: name must be at most ${MAX_DISPLAY_NAME_CHARS} characters`);
  }
}

function slugOf(v: unknown, what: string): string {
  if (typeof v !== 'string') throw invalid(`${what} is required`);
  const s = v.trim().toLowerCase();
  if (!DNS_LABEL.test(s)) throw invalid(`new row for relation "${what === 'slug' ? 'tenants' : 'clusters'}" violates check constraint "${what === 'slug' ? 'tenants' : 'clusters'}_slug_check"`);
  return s;
}

/** Tenant, cluster and key operations over a {@link ProxyStore}. */
export class ProxyState {
  /**
   * Live grants by key hash. Every write of this state goes through this class, which empties the
   * cache, so a revocation or a status change is seen by the next request on this node; a shared
   * store's reload (a change made on another node) empties it too.
   */
  private readonly grants = new Map<string, KeyGrant>();

  constructor(readonly store: ProxyStore, private readonly clock: Clock, private readonly keyEnv = 'live') {
    store.onChange?.(() => this.grants.clear()); // a change made on another node (a revocation) ends the cached grants
    for (const p of BUILT_IN_PLANS) {
      if (!store.plan(p.code)) store.upsertPlan({ code: p.code, limits: JSON.stringify(p.limits), features: JSON.stringify(p.features) });
    }
  }

  private now(): number {
    return this.clock.now();
  }

  private log(kind: string, detail: Record<string, unknown>): void {
    this.grants.clear(); // every logged operation is a write
    this.store.logOperation(kind, JSON.stringify(detail), this.now());
  }

  /** The tenant by slug. @throws QueenError `tenant_unknown`, `system_tenant` */
  tenant(slug: string): TenantRow {
    const t = this.store.tenantBySlug(slug.trim().toLowerCase());
    if (!t) throw new QueenError('tenant_unknown', `no tenant ${slug}`);
    return t;
  }

  /**
   * Creates a tenant (idempotent: an existing slug answers the existing tenant, `created:false`).
   * @throws QueenError `invalid`
   */
  createTenant(body: { slug?: unknown; name?: unknown }): { tenant: TenantRow; created: boolean } {
    const slug = slugOf(body.slug, 'slug');
    const existing = this.store.tenantBySlug(slug);
    if (existing) return { tenant: existing, created: false }; // a re-run: the name is not read again
    checkDisplayName(body.name, 'create_tenant');
    const row: TenantRow = { id: randomUUID(), slug, name: typeof body.name === 'string' && body.name.trim() !== '' ? body.name.trim() : slug, status: 'active', createdAt: this.now() };
    this.store.insertTenant(row);
    this.log('tenant.create', { slug });
    return { tenant: row, created: true };
  }

  /** @throws QueenError `invalid`, `tenant_unknown`, `system_tenant` */
  setTenantStatus(slug: string, status: unknown): TenantRow {
    const t = this.tenant(slug);
    this.guardSystem(t.id);
    if (status !== 'active' && status !== 'grace' && status !== 'suspended' && status !== 'deleting') throw invalid('status must be one of active, grace, suspended, deleting');
    this.store.setTenantStatus(t.id, status);
    this.log('tenant.status', { slug: t.slug, status });
    return { ...t, status };
  }

  /** Deletes a tenant in status `deleting` (or any with `force`). @throws QueenError `tenant_unknown`, `not_deleting`, `system_tenant` */
  deleteTenant(slug: string, force: boolean): { deleted: true; slug: string } {
    const t = this.tenant(slug);
    this.guardSystem(t.id);
    if (t.status !== 'deleting' && !force) throw new QueenError('not_deleting');
    this.store.deleteTenant(t.id);
    this.log('tenant.delete', { slug: t.slug, force });
    return { deleted: true, slug: t.slug };
  }

  /**
   * The tenant `slug` and its clusters, for a purge of their broker data: only a tenant in status
   * `deleting`, never a system tenant.
   * @throws QueenError `tenant_unknown` (404), `system_tenant` (409), `not_deleting` (409)
   */
  purgeTarget(slug: string): { tenant: TenantRow; clusters: ClusterRow[] } {
    const t = this.tenant(slug);
    this.guardSystem(t.id);
    if (t.status !== 'deleting') throw new QueenError('not_deleting', 'the tenant is not in status deleting: set it first (PUT /api/cp/tenants/:slug/status)');
    return { tenant: t, clusters: this.store.clustersOfTenant(t.id) };
  }

  /** Logs a finished purge of tenant `slug` (`queues` deleted) in the operations log. */
  purged(slug: string, queues: number): void {
    this.log('tenant.purge', { slug, queues });
  }

  private guardSystem(tenantId: string): void {
    if (tenantId === DEFAULT_TENANT || tenantId === SYSTEM_TENANT) throw new QueenError('system_tenant');
  }

  /**
   * Creates a cluster of a tenant with a fresh `broker_tenant_uuid` (idempotent on the slug when it
   * belongs to the same tenant). @throws QueenError `invalid`, `tenant_unknown`, `conflict`
   */
  createCluster(body: { tenant?: unknown; slug?: unknown; plan?: unknown; cell?: unknown }): { cluster: ClusterRow; created: boolean } {
    if (typeof body.tenant !== 'string') throw invalid('tenant is required');
    const t = this.store.tenantById(body.tenant) ?? this.tenant(body.tenant);
    this.guardSystem(t.id);
    const slug = slugOf(body.slug, 'cluster slug');
    const plan = body.plan === undefined ? 'dev' : body.plan;
    if (typeof plan !== 'string' || !PLAN_CODE.test(plan)) throw invalid('plan must match ^[a-z][a-z0-9-]*$');
    if (!this.store.plan(plan)) throw invalid(`unknown plan ${plan}`);
    const existing = this.store.clusterBySlug(slug);
    if (existing) {
      if (existing.tenantId !== t.id) throw new QueenError('conflict', `cluster ${slug} belongs to another tenant`);
      return { cluster: existing, created: false };
    }
    const row: ClusterRow = {
      id: randomUUID(), slug, tenantId: t.id, plan, cell: typeof body.cell === 'string' ? body.cell : 'local', status: 'active',
      overrides: '{}', brokerTenantUuid: randomUUID(), createdAt: this.now(),
    };
    this.store.insertCluster(row);
    this.log('cluster.create', { slug, tenant: t.slug, plan });
    return { cluster: row, created: true };
  }

  /** A cluster by id or slug. @throws QueenError `cluster_unknown` */
  cluster(idOrSlug: string): ClusterRow {
    const c = this.store.clusterById(idOrSlug) ?? this.store.clusterBySlug(idOrSlug);
    if (!c) throw new QueenError('cluster_unknown', `no cluster ${idOrSlug}`);
    return c;
  }

  /** @throws QueenError `invalid`, `cluster_unknown` */
  setClusterStatus(id: string, status: unknown): ClusterRow {
    const c = this.cluster(id);
    if (status !== 'active' && status !== 'push_blocked' && status !== 'suspended' && status !== 'deleting') {
      throw invalid('status must be one of active, push_blocked, suspended, deleting');
    }
    this.store.setClusterStatus(c.id, status);
    this.log('cluster.status', { slug: c.slug, status });
    return { ...c, status };
  }

  /** Replaces a cluster's limit overrides (`null` = unlimited). @throws QueenError `invalid`, `cluster_unknown` */
  setOverrides(id: string, body: unknown): ClusterRow {
    const c = this.cluster(id);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('overrides must be a JSON object');
    const out: Limits = {};
    for (const [k, v] of Object.entries(body)) {
      if (!(LIMIT_NAMES as readonly string[]).includes(k)) throw invalid(`unknown limit ${k}`);
      if (v !== null && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)) throw invalid(`${k} must be a non-negative integer or null`);
      out[k as LimitName] = v as number | null;
    }
    const overrides = JSON.stringify(out);
    this.store.setClusterOverrides(c.id, overrides);
    this.log('cluster.overrides', { slug: c.slug, overrides: out });
    return { ...c, overrides };
  }

  /** The plan's limits merged with the cluster's overrides. */
  limits(c: ClusterRow): Limits {
    const plan = this.store.plan(c.plan);
    return { ...(plan ? JSON.parse(plan.limits) as Limits : {}), ...(JSON.parse(c.overrides) as Limits) };
  }

  /** True when the cluster's plan grants `feature`. */
  hasFeature(c: ClusterRow, feature: Feature): boolean {
    const plan = this.store.plan(c.plan);
    return plan !== undefined && (JSON.parse(plan.features) as Record<string, unknown>)[feature] === true;
  }

  /**
   * Registers a key the caller hashed (`POST /api/cp/keys`: the plaintext never reaches the proxy).
   * @throws QueenError `invalid` with the store's messages, `cluster_unknown`, `conflict`
   */
  issueKey(body: { cluster_id?: unknown; name?: unknown; key_hash?: unknown; scopes?: unknown }): ApiKeyRow {
    if (typeof body.cluster_id !== 'string') throw invalid('issue_api_key: cluster_id is required');
    const c = this.cluster(body.cluster_id);
    if (typeof body.name !== 'string' || body.name.trim() === '') throw invalid('issue_api_key: name must not be empty');
    checkDisplayName(body.name, 'issue_api_key');
    if (typeof body.key_hash !== 'string' || !/^[0-9a-f]{64}$/.test(body.key_hash)) throw invalid('issue_api_key: key_hash must be 64 lowercase hex chars (sha256)');
    if (!Array.isArray(body.scopes) || body.scopes.length === 0) throw invalid('issue_api_key: at least one scope is required');
    for (const s of body.scopes) if (typeof s !== 'string' || !(SCOPES as readonly string[]).includes(s)) throw invalid(`issue_api_key: invalid scope ${String(s)}`);
    const existing = this.store.keyByHash(body.key_hash);
    if (existing) {
      // A re-run of the same issue answers the key as it is; one that asks for something else (other
      // scopes, another name, a revoked key back) would otherwise look granted while nothing changed.
      const sameScopes = new Set(body.scopes as string[]);
      const same = existing.clusterId === c.id && existing.name === body.name.trim()
        && existing.scopes.length === sameScopes.size && existing.scopes.every((s) => sameScopes.has(s));
      if (same && existing.revokedAt === null) return existing; // idempotent re-run
      if (existing.revokedAt !== null && existing.clusterId === c.id) throw new QueenError('conflict', 'issue_api_key: this key_hash was revoked; issue a new key');
      if (existing.clusterId === c.id) throw new QueenError('conflict', 'issue_api_key: this key_hash is already registered with other scopes or another name; revoke it and issue a new key');
      throw new QueenError('conflict', 'issue_api_key: this key_hash is already registered');
    }
    const row: ApiKeyRow = {
      id: randomUUID(), clusterId: c.id, name: body.name.trim(), keyHash: body.key_hash, scopes: [...new Set(body.scopes as string[])],
      revokedAt: null, lastUsedAt: null, createdAt: this.now(),
    };
    try {
      this.store.insertKey(row);
    } catch (e) {
      if (e instanceof ProxyConflict) throw new QueenError('conflict', 'issue_api_key: this key_hash is already registered');
      throw e;
    }
    this.log('key.issue', { cluster: c.slug, key_id: row.id, scopes: row.scopes });
    return row;
  }

  /** Revokes a key: refused from the next request on. @throws QueenError `key_unknown` */
  revokeKey(id: string): { revoked: true; id: string } {
    if (!this.store.revokeKey(id, this.now())) throw new QueenError('key_unknown', `no api key ${id}`);
    this.log('key.revoke', { key_id: id });
    return { revoked: true, id };
  }

  /** A cluster with its tenant, effective limits and plan features; undefined when its tenant is gone. */
  clusterGrant(cluster: ClusterRow): Omit<KeyGrant, 'key'> | undefined {
    const tenant = this.store.tenantById(cluster.tenantId);
    if (!tenant) return undefined;
    const plan = this.store.plan(cluster.plan);
    const flags = plan ? JSON.parse(plan.features) as Record<string, unknown> : {};
    const features = new Set(Object.keys(flags).filter((f) => flags[f] === true) as Feature[]);
    return { cluster, tenant, limits: this.limits(cluster), features };
  }

  /**
   * The live grant of a presented key: undefined when unknown or revoked. Touches `last_used_at`
   * at most once per {@link LAST_USED_EVERY_MS}.
   */
  verify(key: string): KeyGrant | undefined {
    const hash = hashKey(key);
    let grant = this.grants.get(hash);
    if (!grant) {
      const row = this.store.keyByHash(hash);
      if (!row || row.revokedAt !== null) return undefined;
      const cluster = this.store.clusterById(row.clusterId);
      const tenant = cluster && this.store.tenantById(cluster.tenantId);
      if (!cluster || !tenant) return undefined;
      grant = { key: row, ...this.clusterGrant(cluster)! };
      if (this.grants.size >= 10_000) this.grants.clear();
      this.grants.set(hash, grant);
    }
    const now = this.now();
    const last = grant.key.lastUsedAt;
    if (last === null || now - last >= LAST_USED_EVERY_MS) {
      this.store.touchKey(grant.key.id, now);
      grant.key.lastUsedAt = now;
    }
    return grant;
  }

  /** A user by id, undefined when deleted. */
  user(id: string): UserRow | undefined {
    return this.store.userById(id);
  }

  /**
   * Checks a password: the user when the e-mail (normalised) has a password hash that matches,
   * else undefined (unknown e-mail, no password and wrong password are never told apart; the
   * same bcrypt work is done in each case).
   */
  async checkPassword(email: string, password: string): Promise<UserRow | undefined> {
    const u = this.store.userByEmail(email.trim().toLowerCase());
    const hash = u?.passwordHash ?? NO_USER_HASH;
    const ok = await bcrypt.compare(password, hash);
    return ok && u?.passwordHash ? u : undefined;
  }

  /**
   * Creates a user of a tenant (`POST /api/cp/users`), idempotent on the e-mail within the tenant;
   * a given password replaces the stored hash (bcrypt, cost {@link BCRYPT_COST}).
   * @throws QueenError `invalid`, `tenant_unknown`, `system_tenant`, `conflict`
   */
  async createUser(body: { tenant?: unknown; email?: unknown; password?: unknown; is_operator?: unknown }): Promise<{ user: UserRow; created: boolean }> {
    if (typeof body.tenant !== 'string') throw invalid('tenant is required');
    const t = this.store.tenantById(body.tenant) ?? this.tenant(body.tenant);
    this.guardSystem(t.id);
    if (typeof body.email !== 'string') throw invalid('email is required');
    const email = body.email.trim().toLowerCase();
    if (!email.includes('@') || email.length > 320) throw invalid('email must contain @');
    if (body.password !== undefined && (typeof body.password !== 'string' || body.password.length < 8 || Buffer.byteLength(body.password) > 72)) {
      throw invalid('password must be a string of 8 to 72 bytes');
    }
    if (body.is_operator !== undefined && typeof body.is_operator !== 'boolean') throw invalid('is_operator must be a boolean');
    const hash = typeof body.password === 'string' ? await bcrypt.hash(body.password, BCRYPT_COST) : undefined;
    const existing = this.store.userByEmail(email);
    if (existing) {
      if (existing.tenantId !== t.id) throw new QueenError('conflict', `user ${email} belongs to another tenant`);
      if (hash !== undefined) this.store.setUserPassword(existing.id, hash);
      this.log('user.update', { email, password_set: hash !== undefined });
      return { user: this.store.userById(existing.id)!, created: false };
    }
    const row: UserRow = { id: randomUUID(), email, tenantId: t.id, passwordHash: hash ?? null, isOperator: body.is_operator === true, createdAt: this.now() };
    try {
      this.store.insertUser(row);
    } catch (e) {
      if (e instanceof ProxyConflict) throw new QueenError('conflict', `user ${email} already exists`);
      throw e;
    }
    this.log('user.create', { email, tenant: t.slug, operator: row.isOperator });
    return { user: row, created: true };
  }

  /**
   * A user found by id or e-mail (normalised). @throws QueenError `user_unknown`
   */
  findUser(idOrEmail: string): UserRow {
    const u = this.store.userById(idOrEmail) ?? this.store.userByEmail(idOrEmail.trim().toLowerCase());
    if (!u) throw new QueenError('user_unknown', `no user ${idOrEmail}`);
    return u;
  }

  /** Deletes a user and their roles: their sessions answer `session no longer valid`. @throws QueenError `user_unknown` */
  deleteUser(idOrEmail: string): { deleted: true; id: string } {
    const u = this.findUser(idOrEmail);
    this.store.deleteUser(u.id);
    this.log('user.delete', { email: u.email });
    return { deleted: true, id: u.id };
  }

  /**
   * Grants (or changes) a user's role on a cluster; user and cluster must belong to the same tenant.
   * @throws QueenError `invalid`, `user_unknown`, `cluster_unknown`, `conflict`
   */
  grantRole(userIdOrEmail: string, clusterIdOrSlug: string, role: unknown): { user_id: string; cluster_id: string; role: Role } {
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) throw invalid('role must be one of admin, producer, consumer, viewer');
    const u = this.findUser(userIdOrEmail);
    const c = this.cluster(clusterIdOrSlug);
    if (u.tenantId !== c.tenantId) throw new QueenError('conflict', 'the user and the cluster belong to different tenants');
    this.store.setClusterRole(u.id, c.id, role);
    this.log('role.grant', { email: u.email, cluster: c.slug, role });
    return { user_id: u.id, cluster_id: c.id, role: role as Role };
  }

  /** Removes a user's role on a cluster (idempotent). @throws QueenError `user_unknown`, `cluster_unknown` */
  revokeRole(userIdOrEmail: string, clusterIdOrSlug: string): { revoked: boolean; user_id: string; cluster_id: string } {
    const u = this.findUser(userIdOrEmail);
    const c = this.cluster(clusterIdOrSlug);
    const revoked = this.store.deleteClusterRole(u.id, c.id);
    if (revoked) this.log('role.revoke', { email: u.email, cluster: c.slug });
    return { revoked, user_id: u.id, cluster_id: c.id };
  }

  /**
   * The user behind a verified OAuth e-mail: an existing user as is; else, when `tenantSlug` names a
   * tenant, a new user without a password in it, granted `role` on each of its clusters
   * (auto-provisioning). Undefined when the user is unknown and nothing can be provisioned.
   */
  provisionOAuthUser(email: string, tenantSlug: string | undefined, role: Role, provider: string): { user: UserRow; created: boolean } | undefined {
    const normal = email.trim().toLowerCase();
    const existing = this.store.userByEmail(normal);
    if (existing) return { user: existing, created: false };
    if (tenantSlug === undefined) return undefined;
    const t = this.store.tenantBySlug(tenantSlug);
    if (!t || t.id === DEFAULT_TENANT || t.id === SYSTEM_TENANT) return undefined;
    const row: UserRow = { id: randomUUID(), email: normal, tenantId: t.id, passwordHash: null, isOperator: false, createdAt: this.now() };
    try {
      this.store.insertUser(row);
    } catch (e) {
      if (e instanceof ProxyConflict) return { user: this.store.userByEmail(normal)!, created: false };
      throw e;
    }
    for (const c of this.store.clustersOfTenant(t.id)) this.store.setClusterRole(row.id, c.id, role);
    this.log('user.provision', { email: normal, tenant: t.slug, role, provider });
    return { user: row, created: true };
  }

  /**
   * Sets the bootstrap admin's password when it differs from the stored one (boot with
   * `QUEEN_PROXY_BOOTSTRAP_PASSWORD`, or `password` in `POST /api/cp/bootstrap`); true when the user can log in.
   */
  async setBootstrapPassword(userId: string, password: string): Promise<boolean> {
    const u = this.store.userById(userId);
    if (!u) return false;
    if (u.passwordHash === null || !(await bcrypt.compare(password, u.passwordHash))) {
      this.store.setUserPassword(u.id, await bcrypt.hash(password, BCRYPT_COST));
      this.log('user.password', { email: u.email });
    }
    return true;
  }

  /**
   * Tenant + cluster + admin user + first key, idempotent (`POST /api/cp/bootstrap`,
   * `QUEEN_PROXY_BOOTSTRAP_*`). A plaintext `api_key` in the body is registered (its hash); without
   * one a key is generated on the first run (unless `generate` is false: the boot-time bootstrap,
   * which could show it nowhere). The password, if any, is set by {@link setBootstrapPassword}.
   * @throws QueenError `invalid`, `conflict`
   */
  bootstrap(body: { tenant?: unknown; cluster?: unknown; plan?: unknown; email?: unknown; api_key?: unknown; name?: unknown }, generate = true): BootstrapResult {
    const { tenant } = this.createTenant({ slug: body.tenant, name: body.name });
    this.guardSystem(tenant.id);
    const { cluster } = this.createCluster({ tenant: tenant.id, slug: body.cluster ?? tenant.slug, plan: body.plan });
    const email = (typeof body.email === 'string' ? body.email : 'admin@localhost').trim().toLowerCase();
    if (!email.includes('@')) throw invalid('email must contain @');
    let user = this.store.userByEmail(email);
    if (user && user.tenantId !== tenant.id) throw new QueenError('conflict', `user ${email} belongs to another tenant`);
    if (!user) {
      user = { id: randomUUID(), email, tenantId: tenant.id, passwordHash: null, isOperator: false, createdAt: this.now() };
      this.store.insertUser(user);
    }
    this.store.setClusterRole(user.id, cluster.id, 'admin');
    let apiKey: string | null = null;
    if (typeof body.api_key === 'string' && body.api_key.trim() !== '') {
      const given = body.api_key.trim();
      if (!this.store.keyByHash(hashKey(given))) {
        this.issueKey({ cluster_id: cluster.id, name: 'bootstrap', key_hash: hashKey(given), scopes: [...SCOPES] });
        apiKey = given;
      }
    } else if (generate && this.store.keysOfCluster(cluster.id).length === 0) {
      apiKey = generateKey(this.keyEnv);
      this.issueKey({ cluster_id: cluster.id, name: 'bootstrap', key_hash: hashKey(apiKey), scopes: [...SCOPES] });
    }
    this.log('bootstrap', { tenant: tenant.slug, cluster: cluster.slug });
    const hasPassword = this.store.userById(user.id)?.passwordHash != null;
    return { tenant_id: tenant.id, cluster_id: cluster.id, user_id: user.id, api_key: apiKey, password_set: hasPassword, can_login: hasPassword };
  }
}
