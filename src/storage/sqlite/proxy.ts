/**
 * The proxy sub-store on SQLite (src/storage/proxy.ts): `<dataDir>/proxy.db`, WAL,
 * `synchronous=FULL`, one statement per operation. Schema version in `user_version` (1: the first
 * tables; 2: `s3_settings`).
 */
import Database from 'better-sqlite3';
import type { Database as Db, Statement } from 'better-sqlite3';
import path from 'node:path';
import { ProxyConflict, type ApiKeyRow, type ClusterRow, type PlanRow, type ProxyStore, type S3SettingsRow, type TenantRow, type UserRow } from '../proxy.js';

const SCHEMA = [
  `CREATE TABLE tenants (id TEXT PRIMARY KEY, slug TEXT NOT NULL UNIQUE, name TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL)`,
  `CREATE TABLE clusters (id TEXT PRIMARY KEY, slug TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL, plan TEXT NOT NULL, cell TEXT NOT NULL,
     status TEXT NOT NULL, overrides TEXT NOT NULL, broker_tenant_uuid TEXT NOT NULL, created_at INTEGER NOT NULL)`,
  `CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, tenant_id TEXT NOT NULL, password_hash TEXT, is_operator INTEGER NOT NULL, created_at INTEGER NOT NULL)`,
  `CREATE TABLE cluster_roles (user_id TEXT NOT NULL, cluster_id TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (user_id, cluster_id))`,
  `CREATE TABLE api_keys (id TEXT PRIMARY KEY, cluster_id TEXT NOT NULL, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL,
     revoked_at INTEGER, last_used_at INTEGER, created_at INTEGER NOT NULL)`,
  `CREATE TABLE plans (code TEXT PRIMARY KEY, limits TEXT NOT NULL, features TEXT NOT NULL)`,
  `CREATE TABLE revoked_tokens (jti TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)`,
  `CREATE TABLE operations (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, detail TEXT NOT NULL, at INTEGER NOT NULL)`,
];

/** Schema steps after version 1, applied in order; version n + 2 after step n. */
const UPGRADES: string[][] = [
  [`CREATE TABLE s3_settings (cluster_id TEXT PRIMARY KEY, settings TEXT NOT NULL, sealed_secret BLOB, updated_at INTEGER NOT NULL)`],
];

type R = Record<string, unknown>;
const tenant = (r: R): TenantRow => ({ id: r.id as string, slug: r.slug as string, name: r.name as string, status: r.status as TenantRow['status'], createdAt: r.created_at as number });
const cluster = (r: R): ClusterRow => ({
  id: r.id as string, slug: r.slug as string, tenantId: r.tenant_id as string, plan: r.plan as string, cell: r.cell as string,
  status: r.status as ClusterRow['status'], overrides: r.overrides as string, brokerTenantUuid: r.broker_tenant_uuid as string, createdAt: r.created_at as number,
});
const user = (r: R): UserRow => ({
  id: r.id as string, email: r.email as string, tenantId: r.tenant_id as string, passwordHash: (r.password_hash as string | null) ?? null,
  isOperator: r.is_operator === 1, createdAt: r.created_at as number,
});
const key = (r: R): ApiKeyRow => ({
  id: r.id as string, clusterId: r.cluster_id as string, name: r.name as string, keyHash: r.key_hash as string, scopes: JSON.parse(r.scopes as string) as string[],
  revokedAt: (r.revoked_at as number | null) ?? null, lastUsedAt: (r.last_used_at as number | null) ?? null, createdAt: r.created_at as number,
});

/** {@link ProxyStore} in `<dataDir>/proxy.db`. */
export class SqliteProxyStore implements ProxyStore {
  /** Prepared statements by SQL text, compiled once. */
  private readonly statements = new Map<string, Statement>();

  private constructor(private readonly db: Db) {}

  private stmt(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Opens (creating when missing) `<dataDir>/proxy.db` and applies the schema. */
  static open(dataDir: string): SqliteProxyStore {
    const db = new Database(path.join(dataDir, 'proxy.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    if ((db.pragma('user_version', { simple: true }) as number) === 0) {
      db.transaction(() => {
        for (const s of SCHEMA) db.exec(s);
        db.pragma('user_version = 1');
      })();
    }
    for (let v = db.pragma('user_version', { simple: true }) as number; v < 1 + UPGRADES.length; v++) {
      db.transaction(() => {
        for (const s of UPGRADES[v - 1]!) db.exec(s);
        db.pragma(`user_version = ${v + 1}`);
      })();
    }
    return new SqliteProxyStore(db);
  }

  private run(sql: string, ...args: unknown[]): number {
    try {
      return this.stmt(sql).run(...args).changes;
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new ProxyConflict((e as Error).message);
      throw e;
    }
  }

  private one<T>(map: (r: R) => T, sql: string, ...args: unknown[]): T | undefined {
    const r = this.stmt(sql).get(...args) as R | undefined;
    return r === undefined ? undefined : map(r);
  }

  private all<T>(map: (r: R) => T, sql: string, ...args: unknown[]): T[] {
    return (this.stmt(sql).all(...args) as R[]).map(map);
  }

  tenantBySlug(slug: string) { return this.one(tenant, 'SELECT * FROM tenants WHERE slug = ?', slug); }
  tenantById(id: string) { return this.one(tenant, 'SELECT * FROM tenants WHERE id = ?', id); }
  insertTenant(t: TenantRow): void { this.run('INSERT INTO tenants VALUES (?, ?, ?, ?, ?)', t.id, t.slug, t.name, t.status, t.createdAt); }
  setTenantStatus(id: string, status: TenantRow['status']): void { this.run('UPDATE tenants SET status = ? WHERE id = ?', status, id); }
  deleteTenant(id: string): void {
    this.db.transaction(() => {
      this.run('DELETE FROM api_keys WHERE cluster_id IN (SELECT id FROM clusters WHERE tenant_id = ?)', id);
      this.run('DELETE FROM s3_settings WHERE cluster_id IN (SELECT id FROM clusters WHERE tenant_id = ?)', id);
      this.run('DELETE FROM cluster_roles WHERE cluster_id IN (SELECT id FROM clusters WHERE tenant_id = ?)', id);
      this.run('DELETE FROM clusters WHERE tenant_id = ?', id);
      this.run('DELETE FROM users WHERE tenant_id = ?', id);
      this.run('DELETE FROM tenants WHERE id = ?', id);
    })();
  }
  clusters(plan?: string) {
    return plan === undefined ? this.all(cluster, 'SELECT * FROM clusters ORDER BY slug') : this.all(cluster, 'SELECT * FROM clusters WHERE plan = ? ORDER BY slug', plan);
  }
  clustersOfTenant(tenantId: string) { return this.all(cluster, 'SELECT * FROM clusters WHERE tenant_id = ? ORDER BY slug', tenantId); }
  clusterBySlug(slug: string) { return this.one(cluster, 'SELECT * FROM clusters WHERE slug = ?', slug); }
  clusterById(id: string) { return this.one(cluster, 'SELECT * FROM clusters WHERE id = ?', id); }
  insertCluster(c: ClusterRow): void {
    this.run('INSERT INTO clusters VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', c.id, c.slug, c.tenantId, c.plan, c.cell, c.status, c.overrides, c.brokerTenantUuid, c.createdAt);
  }
  setClusterStatus(id: string, status: ClusterRow['status']): void { this.run('UPDATE clusters SET status = ? WHERE id = ?', status, id); }
  setClusterOverrides(id: string, overrides: string): void { this.run('UPDATE clusters SET overrides = ? WHERE id = ?', overrides, id); }
  userByEmail(email: string) { return this.one(user, 'SELECT * FROM users WHERE email = ?', email); }
  insertUser(u: UserRow): void { this.run('INSERT INTO users VALUES (?, ?, ?, ?, ?, ?)', u.id, u.email, u.tenantId, u.passwordHash, u.isOperator ? 1 : 0, u.createdAt); }
  userById(id: string) { return this.one(user, 'SELECT * FROM users WHERE id = ?', id); }
  setUserPassword(id: string, hash: string | null): void { this.run('UPDATE users SET password_hash = ? WHERE id = ?', hash, id); }
  deleteUser(id: string): boolean {
    return this.db.transaction(() => {
      this.run('DELETE FROM cluster_roles WHERE user_id = ?', id);
      return this.run('DELETE FROM users WHERE id = ?', id) > 0;
    })();
  }
  roleOf(userId: string, clusterId: string): string | undefined {
    const r = this.stmt('SELECT role FROM cluster_roles WHERE user_id = ? AND cluster_id = ?').get(userId, clusterId) as { role: string } | undefined;
    return r?.role;
  }
  rolesOfUser(userId: string) {
    return this.all((r) => ({ clusterId: r.cluster_id as string, role: r.role as string }), 'SELECT cluster_id, role FROM cluster_roles WHERE user_id = ? ORDER BY cluster_id', userId);
  }
  membersOfCluster(clusterId: string) {
    return this.all((r) => ({ userId: r.id as string, email: r.email as string, role: r.role as string }),
      'SELECT u.id, u.email, r.role FROM cluster_roles r JOIN users u ON u.id = r.user_id WHERE r.cluster_id = ? ORDER BY u.email', clusterId);
  }
  deleteClusterRole(userId: string, clusterId: string): boolean { return this.run('DELETE FROM cluster_roles WHERE user_id = ? AND cluster_id = ?', userId, clusterId) > 0; }
  pruneRevokedTokens(now: number): number { return this.run('DELETE FROM revoked_tokens WHERE expires_at <= ?', now); }
  setClusterRole(userId: string, clusterId: string, role: string): void {
    this.run('INSERT INTO cluster_roles VALUES (?, ?, ?) ON CONFLICT (user_id, cluster_id) DO UPDATE SET role = excluded.role', userId, clusterId, role);
  }
  keyByHash(hash: string) { return this.one(key, 'SELECT * FROM api_keys WHERE key_hash = ?', hash); }
  keyById(id: string) { return this.one(key, 'SELECT * FROM api_keys WHERE id = ?', id); }
  keysOfCluster(clusterId: string) { return this.all(key, 'SELECT * FROM api_keys WHERE cluster_id = ? ORDER BY created_at', clusterId); }
  insertKey(k: ApiKeyRow): void {
    this.run('INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?, ?, ?)', k.id, k.clusterId, k.name, k.keyHash, JSON.stringify(k.scopes), k.revokedAt, k.lastUsedAt, k.createdAt);
  }
  revokeKey(id: string, at: number): boolean {
    if (this.keyById(id) === undefined) return false;
    this.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', at, id);
    return true;
  }
  touchKey(id: string, at: number): void { this.run('UPDATE api_keys SET last_used_at = ? WHERE id = ?', at, id); }
  plan(code: string) { return this.one((r): PlanRow => ({ code: r.code as string, limits: r.limits as string, features: r.features as string }), 'SELECT * FROM plans WHERE code = ?', code); }
  upsertPlan(p: PlanRow): void {
    this.run('INSERT INTO plans VALUES (?, ?, ?) ON CONFLICT (code) DO UPDATE SET limits = excluded.limits, features = excluded.features', p.code, p.limits, p.features);
  }
  revokeToken(jti: string, expiresAt: number): void { this.run('INSERT OR REPLACE INTO revoked_tokens VALUES (?, ?)', jti, expiresAt); }
  isTokenRevoked(jti: string, now: number): boolean {
    return this.stmt('SELECT 1 FROM revoked_tokens WHERE jti = ? AND expires_at > ?').get(jti, now) !== undefined;
  }
  s3Settings(clusterId: string) {
    return this.one((r): S3SettingsRow => ({
      clusterId: r.cluster_id as string, settings: r.settings as string, sealedSecret: (r.sealed_secret as Buffer | null) ?? null, updatedAt: r.updated_at as number,
    }), 'SELECT * FROM s3_settings WHERE cluster_id = ?', clusterId);
  }
  putS3Settings(r: S3SettingsRow): void {
    this.run(`INSERT INTO s3_settings VALUES (?, ?, ?, ?) ON CONFLICT (cluster_id) DO UPDATE SET settings = excluded.settings,
              sealed_secret = excluded.sealed_secret, updated_at = excluded.updated_at`, r.clusterId, r.settings, r.sealedSecret, r.updatedAt);
  }
  deleteS3Settings(clusterId: string): boolean { return this.run('DELETE FROM s3_settings WHERE cluster_id = ?', clusterId) > 0; }
  logOperation(kind: string, detail: string, at: number): void { this.run('INSERT INTO operations (kind, detail, at) VALUES (?, ?, ?)', kind, detail, at); }
  operations(limit: number) {
    return this.all((r) => ({ kind: r.kind as string, detail: r.detail as string, at: r.at as number }), 'SELECT kind, detail, at FROM operations ORDER BY seq DESC LIMIT ?', limit);
  }
  close(): void { this.db.close(); }
}
