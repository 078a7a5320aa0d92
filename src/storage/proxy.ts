/**
 * The embedded proxy's own state (docs/proxy.md#state; public reference `proxy/src/store/*.rs`):
 * tenants, clusters, users, cluster roles, API keys (their SHA-256 only), plans, revoked session
 * tokens and an operations log. A sub-store of its own, apart from the queues: the SQLite
 * implementation keeps it in `<dataDir>/proxy.db` (src/storage/sqlite/proxy.ts), the PostgreSQL one
 * in the `queen.proxy_*` tables shared by every node (src/storage/postgres/proxy.ts).
 *
 * Every call is synchronous (the proxy's writes are rare: issuing or revoking a key, creating a
 * tenant). On SQLite a write is durable when it returns; a store shared by several nodes
 * (src/storage/postgres/proxy.ts) makes it durable by `settled()`, which the proxy awaits before it
 * answers. Ids are UUIDs, times epoch ms.
 */

/** A customer organisation. */
export interface TenantRow {
  id: string;
  /** DNS label, unique. */
  slug: string;
  name: string;
  status: 'active' | 'grace' | 'suspended' | 'deleting';
  createdAt: number;
}

/** A logical broker of one tenant: what an API key is bound to. */
export interface ClusterRow {
  id: string;
  slug: string;
  tenantId: string;
  plan: string;
  cell: string;
  status: 'active' | 'push_blocked' | 'suspended' | 'deleting';
  /** Limit overrides as JSON text (`{}` = the plan's). */
  overrides: string;
  /** The tenant the proxy sends to the broker router as `x-queen-tenant`. */
  brokerTenantUuid: string;
  createdAt: number;
}

/** A person who may sign in (docs/proxy.md#sessions). */
export interface UserRow {
  id: string;
  email: string;
  tenantId: string;
  passwordHash: string | null;
  isOperator: boolean;
  createdAt: number;
}

/** An API key: its hash only, never the key. */
export interface ApiKeyRow {
  id: string;
  clusterId: string;
  name: string;
  /** SHA-256 of the whole key string, 64 lowercase hex. */
  keyHash: string;
  scopes: string[];
  revokedAt: number | null;
  lastUsedAt: number | null;
  createdAt: number;
}

/** A plan: limits (JSON text, `null` = unlimited) and feature flags (JSON text). */
export interface PlanRow {
  code: string;
  limits: string;
  features: string;
}

/**
 * A cluster's S3 settings (docs/proxy.md#s3-settings): the non-secret fields as JSON text, and the
 * secret access key sealed (src/crypto/envelope.ts; `null` = none stored). Never holds a clear secret.
 */
export interface S3SettingsRow {
  clusterId: string;
  /** JSON text of the non-secret fields (bucket, region, endpoint, prefix, access_key_id, force_path_style). */
  settings: string;
  /** The sealed secret access key, or null. */
  sealedSecret: Buffer | null;
  updatedAt: number;
}

/** The proxy sub-store contract. Unique-key violations throw {@link ProxyConflict}. */
export interface ProxyStore {
  tenantBySlug(slug: string): TenantRow | undefined;
  tenantById(id: string): TenantRow | undefined;
  insertTenant(row: TenantRow): void;
  setTenantStatus(id: string, status: TenantRow['status']): void;
  /** Deletes a tenant with its clusters, users, roles and keys. */
  deleteTenant(id: string): void;
  clusters(plan?: string): ClusterRow[];
  clustersOfTenant(tenantId: string): ClusterRow[];
  clusterBySlug(slug: string): ClusterRow | undefined;
  clusterById(id: string): ClusterRow | undefined;
  insertCluster(row: ClusterRow): void;
  setClusterStatus(id: string, status: ClusterRow['status']): void;
  setClusterOverrides(id: string, overrides: string): void;
  userByEmail(email: string): UserRow | undefined;
  insertUser(row: UserRow): void;
  userById(id: string): UserRow | undefined;
  /** Replaces the bcrypt hash (null = no password). */
  setUserPassword(id: string, hash: string | null): void;
  /** Deletes a user with their cluster roles; false when there is no such user. */
  deleteUser(id: string): boolean;
  setClusterRole(userId: string, clusterId: string, role: string): void;
  /** The user's role on the cluster, undefined when none. */
  roleOf(userId: string, clusterId: string): string | undefined;
  /** Every (cluster, role) of a user. */
  rolesOfUser(userId: string): { clusterId: string; role: string }[];
  /** Every member of a cluster with their role, by e-mail. */
  membersOfCluster(clusterId: string): { userId: string; email: string; role: string }[];
  /** Removes a role; false when there was none. */
  deleteClusterRole(userId: string, clusterId: string): boolean;
  keyByHash(hash: string): ApiKeyRow | undefined;
  keyById(id: string): ApiKeyRow | undefined;
  keysOfCluster(clusterId: string): ApiKeyRow[];
  insertKey(row: ApiKeyRow): void;
  /** Sets `revoked_at` once; false when there is no such key. */
  revokeKey(id: string, at: number): boolean;
  touchKey(id: string, at: number): void;
  plan(code: string): PlanRow | undefined;
  upsertPlan(row: PlanRow): void;
  revokeToken(jti: string, expiresAt: number): void;
  isTokenRevoked(jti: string, now: number): boolean;
  /** Drops deny-list entries whose token has expired; the number dropped. */
  pruneRevokedTokens(now: number): number;
  /** The cluster's S3 settings, undefined when none. */
  s3Settings(clusterId: string): S3SettingsRow | undefined;
  /** Stores (replacing) a cluster's S3 settings. */
  putS3Settings(row: S3SettingsRow): void;
  /** Removes a cluster's S3 settings; false when there were none. */
  deleteS3Settings(clusterId: string): boolean;
  /** Appends to the operations log (`detail` JSON text; never a secret). */
  logOperation(kind: string, detail: string, at: number): void;
  operations(limit: number): { kind: string; detail: string; at: number }[];
  /**
   * Resolves when every write made so far is durable (a store whose writes are durable when they
   * return has none); rejects once with the error of a write that failed.
   */
  settled?(): Promise<void>;
  /** Calls `fn` whenever the state changed by another process was loaded (a shared store has it). */
  onChange?(fn: () => void): void;
  /** Loads the shared state again now (a shared store has it). */
  refresh?(): Promise<void>;
  close(): void;
}

/** A write that would break a unique key (slug, email, key hash). */
export class ProxyConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProxyConflict';
  }
}
