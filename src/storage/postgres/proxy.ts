/**
 * The proxy sub-store (src/storage/proxy.ts) on PostgreSQL (docs/proxy.md#state-on-postgresql):
 * tables `queen.proxy_*` (migration 10, schema.ts), shared by every broker on the database, so a
 * key issued or revoked through one node's control plane holds on all of them.
 *
 * The contract is synchronous (the proxy reads its state on every request), PostgreSQL is not: each
 * node keeps a mirror of the tables in memory and answers reads from it. A write changes the mirror
 * at once and is queued to PostgreSQL, in order, the writes of one operation (one synchronous run)
 * in one transaction; {@link PgProxyStore.settled}
 * resolves when every write queued so far has committed (the proxy answers a request that wrote only
 * after that, so a 2xx means the change is durable) and rejects once when one failed (the mirror is
 * then reloaded from the database). Every write that another node must see (all but `last_used_at`
 * touches and the operations log) also bumps `queen.proxy_meta.version` in its transaction; each node
 * polls that version every `pollMs` (default 1000 ms) and reloads the whole state when it moved, so
 * a change made on one node, a revocation included, is in force on every other node within
 * `pollMs` plus one reload. Listeners of {@link PgProxyStore.onChange} hear of each reload.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { ProxyConflict, type ApiKeyRow, type ClusterRow, type PlanRow, type ProxyStore, type S3SettingsRow, type TenantRow, type UserRow } from '../proxy.js';
import type { PgDb } from './db.js';

/** One queued write: its statements, and whether other nodes must reload after it. */
interface Write {
  run: (c: pg.PoolClient) => Promise<unknown>;
  shared: boolean;
}

/** Operations log entries kept in the mirror (the newest). */
const OPS_KEPT = 1000;

type R = Record<string, unknown>;
const str = (v: unknown) => v as string;
const num = (v: unknown) => Number(v);
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const tenantOf = (r: R): TenantRow => ({ id: str(r.id), slug: str(r.slug), name: str(r.name), status: r.status as TenantRow['status'], createdAt: num(r.created_at_ms) });
const clusterOf = (r: R): ClusterRow => ({
  id: str(r.id), slug: str(r.slug), tenantId: str(r.tenant_id), plan: str(r.plan), cell: str(r.cell), status: r.status as ClusterRow['status'],
  overrides: str(r.overrides), brokerTenantUuid: str(r.broker_tenant_uuid), createdAt: num(r.created_at_ms),
});
const userOf = (r: R): UserRow => ({
  id: str(r.id), email: str(r.email), tenantId: str(r.tenant_id), passwordHash: (r.password_hash as string | null) ?? null, isOperator: r.is_operator === true,
  createdAt: num(r.created_at_ms),
});
const keyOf = (r: R): ApiKeyRow => ({
  id: str(r.id), clusterId: str(r.cluster_id), name: str(r.name), keyHash: str(r.key_hash), scopes: JSON.parse(str(r.scopes)) as string[],
  revokedAt: numOrNull(r.revoked_at_ms), lastUsedAt: numOrNull(r.last_used_at_ms), createdAt: num(r.created_at_ms),
});
const copyKey = (k: ApiKeyRow): ApiKeyRow => ({ ...k, scopes: [...k.scopes] });

/** The whole proxy state of one snapshot. */
class Mirror {
  tenants = new Map<string, TenantRow>();
  clusters = new Map<string, ClusterRow>();
  users = new Map<string, UserRow>();
  /** Role by `user\0cluster`. */
  roles = new Map<string, string>();
  keys = new Map<string, ApiKeyRow>();
  plans = new Map<string, PlanRow>();
  revoked = new Map<string, number>();
  s3 = new Map<string, S3SettingsRow>();
  ops: { kind: string; detail: string; at: number }[] = [];
}

const roleKey = (userId: string, clusterId: string) => `${userId}\u0000${clusterId}`;

/** {@link ProxyStore} over the `queen.proxy_*` tables, read from an in-memory mirror (see the module comment). */
export class PgProxyStore implements ProxyStore {
  private m = new Mirror();
  private version = -1;
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  /** Writes queued since boot (a reload that saw this change while it read is discarded). */
  private writes = 0;
  /** Writes of the current synchronous run, not yet handed to the chain. */
  private batch: Write[] | undefined;
  private failure: Error | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;
  private readonly listeners: (() => void)[] = [];

  private constructor(private readonly db: PgDb, private readonly log: Pick<Logger, 'warn' | 'error'>, private readonly pollMs: number) {}

  /**
   * Loads the state from the database (migration 10 applied by the backend) and starts polling its version.
   * @param pollMs how often the version is read, ms (the bound on seeing another node's change)
   */
  static async open(db: PgDb, log: Pick<Logger, 'warn' | 'error'>, pollMs = 1000): Promise<PgProxyStore> {
    const s = new PgProxyStore(db, log, pollMs);
    await s.reload();
    s.schedule();
    return s;
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.poll().finally(() => this.schedule()), this.pollMs);
    this.timer.unref();
  }

  /** Reloads when another node changed the state (the version moved) and no local write is pending. */
  private async poll(): Promise<void> {
    if (this.polling || this.pending > 0) return;
    this.polling = true;
    try {
      const v = num((await this.db.rows<R>('SELECT version FROM queen.proxy_meta WHERE id = 0'))[0]?.version ?? 0);
      if (v !== this.version && this.pending === 0) await this.reload();
    } catch (e) {
      this.log.warn({ err: e }, 'proxy state: cannot read its version from PostgreSQL; retrying');
    } finally {
      this.polling = false;
    }
  }

  /** Replaces the mirror with one consistent snapshot of the tables and tells the listeners. */
  private async reload(): Promise<void> {
    const writesBefore = this.writes;
    const c = await this.db.pool.connect();
    try {
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const q = async (sql: string) => (await c.query<R>(sql)).rows;
      const version = num((await q('SELECT version FROM queen.proxy_meta WHERE id = 0'))[0]?.version ?? 0);
      const m = new Mirror();
      for (const r of await q('SELECT * FROM queen.proxy_tenants')) m.tenants.set(str(r.id), tenantOf(r));
      for (const r of await q('SELECT * FROM queen.proxy_clusters')) m.clusters.set(str(r.id), clusterOf(r));
      for (const r of await q('SELECT * FROM queen.proxy_users')) m.users.set(str(r.id), userOf(r));
      for (const r of await q('SELECT * FROM queen.proxy_cluster_roles')) m.roles.set(roleKey(str(r.user_id), str(r.cluster_id)), str(r.role));
      for (const r of await q('SELECT * FROM queen.proxy_api_keys')) m.keys.set(str(r.id), keyOf(r));
      for (const r of await q('SELECT * FROM queen.proxy_plans')) m.plans.set(str(r.code), { code: str(r.code), limits: str(r.limits), features: str(r.features) });
      for (const r of await q('SELECT * FROM queen.proxy_revoked_tokens')) m.revoked.set(str(r.jti), num(r.expires_at_ms));
      for (const r of await q('SELECT * FROM queen.proxy_s3_settings')) {
        m.s3.set(str(r.cluster_id), { clusterId: str(r.cluster_id), settings: str(r.settings), sealedSecret: (r.sealed_secret as Buffer | null) ?? null, updatedAt: num(r.updated_at_ms) });
      }
      m.ops = (await q(`SELECT kind, detail, at_ms FROM queen.proxy_operations ORDER BY seq DESC LIMIT ${OPS_KEPT}`)).map((r) => ({ kind: str(r.kind), detail: str(r.detail), at: num(r.at_ms) }));
      await c.query('COMMIT');
      if (this.pending > 0 || this.writes !== writesBefore) return; // a local write arrived meanwhile: the next poll reloads after it
      this.m = m;
      const changed = this.version !== -1;
      this.version = version;
      if (changed) for (const l of this.listeners) l();
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
    }
  }

  /**
   * Queues a write (the mirror already changed by the caller). The writes made in one synchronous
   * run (one operation of the proxy state: a bootstrap's tenant, cluster, user, role and key) go to
   * PostgreSQL in one transaction, so another node loads all of them or none.
   */
  private write(shared: boolean, run: (c: pg.PoolClient) => Promise<unknown>): void {
    this.pending++;
    this.writes++;
    if (!this.batch) {
      const batch: Write[] = [];
      this.batch = batch;
      queueMicrotask(() => this.flush(batch));
    }
    this.batch.push({ run, shared });
  }

  /** Hands the open batch (if it is `batch`, or any when omitted) to the write chain. */
  private flush(batch?: Write[]): void {
    const ws = this.batch;
    if (!ws || (batch !== undefined && ws !== batch)) return;
    this.batch = undefined;
    this.chain = this.chain.then(async () => {
      const c = await this.db.pool.connect();
      try {
        await c.query('BEGIN');
        for (const w of ws) await w.run(c);
        if (ws.some((w) => w.shared)) {
          const v = num((await c.query<R>('UPDATE queen.proxy_meta SET version = version + 1 WHERE id = 0 RETURNING version')).rows[0]?.version);
          // Our own change needs no reload, unless another node changed the state since ours was read.
          this.version = v === this.version + 1 ? v : -2;
        }
        await c.query('COMMIT');
      } catch (e) {
        await c.query('ROLLBACK').catch(() => undefined);
        this.failure ??= e as Error;
        this.version = -2; // the mirror may hold what the database refused: reloaded by settled() or the next poll
        this.log.error({ err: e }, 'proxy state: a write to PostgreSQL failed; reloading the state');
      } finally {
        c.release();
        this.pending -= ws.length;
      }
    });
  }

  /**
   * Resolves when every write queued so far is committed.
   * @throws the first write error since the last call (reported once, after the state was reloaded)
   */
  async settled(): Promise<void> {
    this.flush();
    await this.chain;
    const f = this.failure;
    if (!f) return;
    this.failure = undefined;
    // The copy may hold what the database refused: load the database's rows before the caller
    // answers, so a retry sees them (not the refused write).
    await this.refresh().catch((e: unknown) => this.log.warn({ err: e }, 'proxy state: reload after a refused write failed; the next poll retries'));
    throw f;
  }

  /** Loads the state from the database now (after the queued writes). */
  async refresh(): Promise<void> {
    this.flush();
    await this.chain;
    this.version = -2;
    await this.reload();
  }

  /** Calls `fn` after each reload that brought changes made elsewhere. */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  private uniqueOr(conflict: boolean, what: string): void {
    if (conflict) throw new ProxyConflict(`duplicate key value violates unique constraint (${what})`);
  }

  tenantBySlug(slug: string) {
    for (const t of this.m.tenants.values()) if (t.slug === slug) return { ...t };
    return undefined;
  }
  tenantById(id: string) { const t = this.m.tenants.get(id); return t && { ...t }; }
  insertTenant(t: TenantRow): void {
    this.uniqueOr(this.m.tenants.has(t.id) || this.tenantBySlug(t.slug) !== undefined, 'proxy_tenants');
    this.m.tenants.set(t.id, { ...t });
    this.write(true, (c) => c.query('INSERT INTO queen.proxy_tenants VALUES ($1, $2, $3, $4, $5)', [t.id, t.slug, t.name, t.status, t.createdAt]));
  }
  setTenantStatus(id: string, status: TenantRow['status']): void {
    const t = this.m.tenants.get(id);
    if (t) t.status = status;
    this.write(true, (c) => c.query('UPDATE queen.proxy_tenants SET status = $1 WHERE id = $2', [status, id]));
  }
  deleteTenant(id: string): void {
    const clusters = [...this.m.clusters.values()].filter((c) => c.tenantId === id).map((c) => c.id);
    for (const k of [...this.m.keys.values()]) if (clusters.includes(k.clusterId)) this.m.keys.delete(k.id);
    for (const cid of clusters) { this.m.s3.delete(cid); this.m.clusters.delete(cid); }
    for (const [rk] of [...this.m.roles]) if (clusters.includes(rk.split('\u0000')[1]!)) this.m.roles.delete(rk);
    for (const u of [...this.m.users.values()]) if (u.tenantId === id) this.m.users.delete(u.id);
    this.m.tenants.delete(id);
    this.write(true, async (c) => {
      const sub = 'SELECT id FROM queen.proxy_clusters WHERE tenant_id = $1';
      await c.query(`DELETE FROM queen.proxy_api_keys WHERE cluster_id IN (${sub})`, [id]);
      await c.query(`DELETE FROM queen.proxy_s3_settings WHERE cluster_id IN (${sub})`, [id]);
      await c.query(`DELETE FROM queen.proxy_cluster_roles WHERE cluster_id IN (${sub})`, [id]);
      await c.query('DELETE FROM queen.proxy_clusters WHERE tenant_id = $1', [id]);
      await c.query('DELETE FROM queen.proxy_users WHERE tenant_id = $1', [id]);
      await c.query('DELETE FROM queen.proxy_tenants WHERE id = $1', [id]);
    });
  }
  clusters(plan?: string) {
    return [...this.m.clusters.values()].filter((c) => plan === undefined || c.plan === plan).sort((a, b) => (a.slug < b.slug ? -1 : 1)).map((c) => ({ ...c }));
  }
  clustersOfTenant(tenantId: string) { return this.clusters().filter((c) => c.tenantId === tenantId); }
  clusterBySlug(slug: string) {
    for (const c of this.m.clusters.values()) if (c.slug === slug) return { ...c };
    return undefined;
  }
  clusterById(id: string) { const c = this.m.clusters.get(id); return c && { ...c }; }
  insertCluster(c: ClusterRow): void {
    this.uniqueOr(this.m.clusters.has(c.id) || this.clusterBySlug(c.slug) !== undefined, 'proxy_clusters');
    this.m.clusters.set(c.id, { ...c });
    this.write(true, (x) => x.query('INSERT INTO queen.proxy_clusters VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [c.id, c.slug, c.tenantId, c.plan, c.cell, c.status, c.overrides, c.brokerTenantUuid, c.createdAt]));
  }
  setClusterStatus(id: string, status: ClusterRow['status']): void {
    const c = this.m.clusters.get(id);
    if (c) c.status = status;
    this.write(true, (x) => x.query('UPDATE queen.proxy_clusters SET status = $1 WHERE id = $2', [status, id]));
  }
  setClusterOverrides(id: string, overrides: string): void {
    const c = this.m.clusters.get(id);
    if (c) c.overrides = overrides;
    this.write(true, (x) => x.query('UPDATE queen.proxy_clusters SET overrides = $1 WHERE id = $2', [overrides, id]));
  }
  userByEmail(email: string) {
    for (const u of this.m.users.values()) if (u.email === email) return { ...u };
    return undefined;
  }
  insertUser(u: UserRow): void {
    this.uniqueOr(this.m.users.has(u.id) || this.userByEmail(u.email) !== undefined, 'proxy_users');
    this.m.users.set(u.id, { ...u });
    this.write(true, (c) => c.query('INSERT INTO queen.proxy_users VALUES ($1, $2, $3, $4, $5, $6)', [u.id, u.email, u.tenantId, u.passwordHash, u.isOperator, u.createdAt]));
  }
  userById(id: string) { const u = this.m.users.get(id); return u && { ...u }; }
  setUserPassword(id: string, hash: string | null): void {
    const u = this.m.users.get(id);
    if (u) u.passwordHash = hash;
    this.write(true, (c) => c.query('UPDATE queen.proxy_users SET password_hash = $1 WHERE id = $2', [hash, id]));
  }
  deleteUser(id: string): boolean {
    if (!this.m.users.has(id)) return false;
    this.m.users.delete(id);
    for (const [rk] of [...this.m.roles]) if (rk.startsWith(`${id}\u0000`)) this.m.roles.delete(rk);
    this.write(true, async (c) => {
      await c.query('DELETE FROM queen.proxy_cluster_roles WHERE user_id = $1', [id]);
      await c.query('DELETE FROM queen.proxy_users WHERE id = $1', [id]);
    });
    return true;
  }
  setClusterRole(userId: string, clusterId: string, role: string): void {
    this.m.roles.set(roleKey(userId, clusterId), role);
    this.write(true, (c) => c.query(`INSERT INTO queen.proxy_cluster_roles VALUES ($1, $2, $3)
      ON CONFLICT (user_id, cluster_id) DO UPDATE SET role = excluded.role`, [userId, clusterId, role]));
  }
  roleOf(userId: string, clusterId: string) { return this.m.roles.get(roleKey(userId, clusterId)); }
  rolesOfUser(userId: string) {
    const out: { clusterId: string; role: string }[] = [];
    for (const [rk, role] of this.m.roles) {
      const [u, c] = rk.split('\u0000') as [string, string];
      if (u === userId) out.push({ clusterId: c, role });
    }
    return out.sort((a, b) => (a.clusterId < b.clusterId ? -1 : 1));
  }
  membersOfCluster(clusterId: string) {
    const out: { userId: string; email: string; role: string }[] = [];
    for (const [rk, role] of this.m.roles) {
      const [u, c] = rk.split('\u0000') as [string, string];
      const user = this.m.users.get(u);
      if (c === clusterId && user) out.push({ userId: u, email: user.email, role });
    }
    return out.sort((a, b) => (a.email < b.email ? -1 : 1));
  }
  deleteClusterRole(userId: string, clusterId: string): boolean {
    if (!this.m.roles.delete(roleKey(userId, clusterId))) return false;
    this.write(true, (c) => c.query('DELETE FROM queen.proxy_cluster_roles WHERE user_id = $1 AND cluster_id = $2', [userId, clusterId]));
    return true;
  }
  keyByHash(hash: string) {
    for (const k of this.m.keys.values()) if (k.keyHash === hash) return copyKey(k);
    return undefined;
  }
  keyById(id: string) { const k = this.m.keys.get(id); return k && copyKey(k); }
  keysOfCluster(clusterId: string) {
    return [...this.m.keys.values()].filter((k) => k.clusterId === clusterId).sort((a, b) => a.createdAt - b.createdAt).map(copyKey);
  }
  insertKey(k: ApiKeyRow): void {
    this.uniqueOr(this.m.keys.has(k.id) || this.keyByHash(k.keyHash) !== undefined, 'proxy_api_keys');
    this.m.keys.set(k.id, copyKey(k));
    this.write(true, (c) => c.query('INSERT INTO queen.proxy_api_keys VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [k.id, k.clusterId, k.name, k.keyHash, JSON.stringify(k.scopes), k.revokedAt, k.lastUsedAt, k.createdAt]));
  }
  revokeKey(id: string, at: number): boolean {
    const k = this.m.keys.get(id);
    if (!k) return false;
    if (k.revokedAt === null) k.revokedAt = at;
    this.write(true, (c) => c.query('UPDATE queen.proxy_api_keys SET revoked_at_ms = $1 WHERE id = $2 AND revoked_at_ms IS NULL', [at, id]));
    return true;
  }
  touchKey(id: string, at: number): void {
    const k = this.m.keys.get(id);
    if (k) k.lastUsedAt = at;
    this.write(false, (c) => c.query('UPDATE queen.proxy_api_keys SET last_used_at_ms = $1 WHERE id = $2', [at, id]));
  }
  plan(code: string) { const p = this.m.plans.get(code); return p && { ...p }; }
  upsertPlan(p: PlanRow): void {
    this.m.plans.set(p.code, { ...p });
    this.write(true, (c) => c.query(`INSERT INTO queen.proxy_plans VALUES ($1, $2, $3)
      ON CONFLICT (code) DO UPDATE SET limits = excluded.limits, features = excluded.features`, [p.code, p.limits, p.features]));
  }
  revokeToken(jti: string, expiresAt: number): void {
    this.m.revoked.set(jti, expiresAt);
    this.write(true, (c) => c.query(`INSERT INTO queen.proxy_revoked_tokens VALUES ($1, $2)
      ON CONFLICT (jti) DO UPDATE SET expires_at_ms = excluded.expires_at_ms`, [jti, expiresAt]));
  }
  isTokenRevoked(jti: string, now: number): boolean {
    const e = this.m.revoked.get(jti);
    return e !== undefined && e > now;
  }
  pruneRevokedTokens(now: number): number {
    let n = 0;
    for (const [jti, e] of [...this.m.revoked]) if (e <= now) { this.m.revoked.delete(jti); n++; }
    this.write(false, (c) => c.query('DELETE FROM queen.proxy_revoked_tokens WHERE expires_at_ms <= $1', [now]));
    return n;
  }
  s3Settings(clusterId: string) { const r = this.m.s3.get(clusterId); return r && { ...r }; }
  putS3Settings(r: S3SettingsRow): void {
    this.m.s3.set(r.clusterId, { ...r });
    this.write(true, (c) => c.query(`INSERT INTO queen.proxy_s3_settings VALUES ($1, $2, $3, $4)
      ON CONFLICT (cluster_id) DO UPDATE SET settings = excluded.settings, sealed_secret = excluded.sealed_secret, updated_at_ms = excluded.updated_at_ms`,
    [r.clusterId, r.settings, r.sealedSecret, r.updatedAt]));
  }
  deleteS3Settings(clusterId: string): boolean {
    if (!this.m.s3.delete(clusterId)) return false;
    this.write(true, (c) => c.query('DELETE FROM queen.proxy_s3_settings WHERE cluster_id = $1', [clusterId]));
    return true;
  }
  logOperation(kind: string, detail: string, at: number): void {
    this.m.ops.unshift({ kind, detail, at });
    if (this.m.ops.length > OPS_KEPT) this.m.ops.length = OPS_KEPT;
    this.write(false, (c) => c.query('INSERT INTO queen.proxy_operations (kind, detail, at_ms) VALUES ($1, $2, $3)', [kind, detail, at]));
  }
  operations(limit: number) { return this.m.ops.slice(0, limit).map((o) => ({ ...o })); }

  /** Stops polling; the queued writes still complete (await {@link settled} first to wait for them). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
