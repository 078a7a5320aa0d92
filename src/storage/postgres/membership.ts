/**
 * Membership and singleton leases of the nodes that share one PostgreSQL database
 * (docs/cluster.md#membership, docs/cluster.md#singletons).
 *
 * - `queen.cluster_nodes`: one row per server id. A process joins by upserting its row with
 *   `epoch + 1`; it refreshes `heartbeat_at = now()` (database clock) every heartbeat. A node whose
 *   heartbeat is older than the node TTL is dead. Joining under a server id whose row is live is
 *   refused ({@link DuplicateServerId}) when the id was chosen by the operator.
 * - Each node writes its row and claims its leases on a dedicated session whose backend pid and
 *   start time are recorded in the row: when the process ends, PostgreSQL ends the session, and the
 *   other nodes count the node out and take its leases at their next heartbeat instead of after the
 *   TTL. A node that is alive but silent (frozen, cut off) still loses them only after the TTL.
 * - The heartbeat also measures this process's clock against the database's and re-aims the clock
 *   the broker runs on ({@link MembershipOptions.follow}), so timers, KV expiry, lease checks and
 *   retention of a node whose clock is skewed still follow the database's time.
 * - `queen.maintenance_leases`: one row per cluster-wide job. Each heartbeat a node claims or
 *   renews every job whose lease expired or that it already holds (`lease_expires_at = now() + TTL`,
 *   database clock, `fencing + 1` when the lease changes hands). A node runs a job only while its
 *   own monotonic clock says the lease it renewed has not run out (the renewal's start + TTL − one
 *   heartbeat), so a node whose clock is skewed, or that stopped renewing, stops running it before
 *   another node can take the lease.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { OffsetClock } from '../../util/offset-clock.js';
import type { SchedulerLane, Scheduler } from '../../util/scheduler.js';
import { SINGLETON_TASKS, type ClusterMember, type ClusterView, type LinkView, type SingletonHolder, type SingletonTask } from '../runtime.js';
import { isQueenError, QueenError } from '../../errors.js';
import pg from 'pg';
import { pgTypes, refusalOf, tsToMs, type PgDb, type Row } from './db.js';

/** How a node joins (docs/cluster.md#membership). */
export interface MembershipOptions {
  /** The row's key: `QUEEN_SERVER_ID`, or a name unique to this process when it is unset. */
  serverId: string;
  /** Refuse to join while a live row has this id (true when the operator chose the id). */
  exclusive: boolean;
  /** The HTTP address announced until {@link PgMembership.announce} (e.g. `host:port`). */
  address: string;
  /** Heartbeat period, ms. */
  heartbeatMs: number;
  /** A node silent this long is dead and its leases pass on, ms. */
  nodeTtlMs: number;
  /**
   * The process clock the broker runs on, re-aimed at the database's clock each heartbeat
   * (docs/storage.md#time): a node whose own clock is skewed still schedules, expires and fires on
   * the database's time.
   */
  follow?: OffsetClock | undefined;
}

/** Refusal to join: a live node already runs under this `QUEEN_SERVER_ID`. */
export class DuplicateServerId extends Error {
  constructor(readonly serverId: string, readonly address: string, readonly epoch: number) {
    super(`QUEEN_SERVER_ID=${serverId} is already running at ${address || 'an unknown address'} (epoch ${epoch}); give each node its own QUEEN_SERVER_ID, or wait until the other process stopped`);
  }
}

/** Rows forgotten after this long without a heartbeat, ms (dead nodes that never came back). */
const FORGET_AFTER_MS = 3_600_000;
/** SQLSTATE of a function the role may not call (pg_promote without the grant). */
const INSUFFICIENT_PRIVILEGE = '42501';
/** Offset changes below this are measurement noise and leave the process clock alone, ms. */
const FOLLOW_JITTER_MS = 20;
/** SQL: this session's start time (with its pid, it names the session uniquely). */
const MY_SESSION_START = '(SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())';
/** SQL: the recorded session of cluster_nodes row `n` still exists. */
const SESSION_ALIVE = (n: string) =>
  `EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = ${n}.session_pid AND a.backend_start = ${n}.session_started_at)`;
/** Heartbeats between two clean-ups of forgotten rows. */
const FORGET_EVERY_BEATS = 100;

/** A node's membership row and leases (see the module comment). */
export class PgMembership implements ClusterView {
  private readonly lane: SchedulerLane<string>;
  /** Local monotonic deadline (performance.now() ms) until which each held task may run here. */
  private readonly heldUntil = new Map<SingletonTask, number>();
  private readonly runs = new Map<SingletonTask, number>();
  private memberRows: ClusterMember[] = [];
  private holderRows: SingletonHolder[] = [];
  private address: string;
  private beating: Promise<void> | undefined;
  private stopped = false;
  /** False once another process took this row over (this one then holds nothing). */
  private own = true;
  private beats = 0;
  private session: pg.Client | undefined;
  /** Heartbeats that failed in a row (database unreachable); two or more make `/health` answer 503. */
  failures = 0;

  /** This process's epoch (0 until it joined: a standby joins once promoted). */
  epoch = 0;
  /** The last heartbeat's writes were refused as read-only (SQLSTATE 25006) while the database is no standby. */
  readOnly = false;
  /** This clock minus the database's, ms, as of the last heartbeat (half the round trip is the error). */
  clockSkewMs = 0;
  /** The replication follower as of the last heartbeat (standby only), for `queen_link_*` metrics. */
  follower: { state: 'following' | 'waiting' | 'halted'; lagMs: number } | undefined;
  /** Promotions noticed (standby → primary). */
  promotions = 0;

  private constructor(private readonly db: PgDb, private readonly opts: MembershipOptions, private readonly scheduler: Scheduler, private readonly log: Logger) {
    this.address = opts.address;
    this.lane = scheduler.lane<string>('cluster-heartbeat');
  }

  get serverId(): string {
    return this.opts.serverId;
  }

  get runsHere(): ReadonlyMap<SingletonTask, number> {
    return this.runs;
  }

  /**
   * Joins: upserts the row with the next epoch (on a primary; a standby joins once promoted), then
   * runs the first heartbeat (claims leases, reads the members) and keeps beating on `scheduler`.
   * @throws DuplicateServerId when `opts.exclusive` and a live row has the id; the driver's error when the database does not answer
   */
  static async join(db: PgDb, opts: MembershipOptions, scheduler: Scheduler, log: Logger): Promise<PgMembership> {
    const m = new PgMembership(db, opts, scheduler, log);
    if (!db.standby) await m.upsert(opts.exclusive);
    await m.beat();
    m.arm();
    return m;
  }

  /** Writes this process's row with the next epoch. @throws DuplicateServerId when `exclusive` and the id is live */
  private async upsert(exclusive: boolean): Promise<void> {
    const { serverId, nodeTtlMs } = this.opts;
    const rows = await this.onSession(`
      INSERT INTO queen.cluster_nodes AS n (server_id, epoch, address, session_pid, session_started_at) VALUES ($1, 1, $2, pg_backend_pid(), ${MY_SESSION_START})
      ON CONFLICT (server_id) DO UPDATE SET epoch = n.epoch + 1, address = EXCLUDED.address, started_at = now(), heartbeat_at = now(), leaving = false,
                                            session_pid = EXCLUDED.session_pid, session_started_at = EXCLUDED.session_started_at
       WHERE NOT $3::boolean OR n.leaving OR n.heartbeat_at <= now() - make_interval(secs => $4::float8 / 1000) OR NOT ${SESSION_ALIVE('n')}
      RETURNING epoch`, [serverId, this.address, exclusive, nodeTtlMs]);
    if (rows.length === 0) {
      const cur = (await this.db.rows('SELECT address, epoch FROM queen.cluster_nodes WHERE server_id = $1', [serverId]))[0];
      throw new DuplicateServerId(serverId, (cur?.address as string | undefined) ?? '', (cur?.epoch as number | undefined) ?? 0);
    }
    this.epoch = rows[0]!.epoch as number;
    this.own = true;
  }

  /**
   * A statement on this node's dedicated session (connected on first use). Its backend pid and start
   * time are recorded in the row, so other nodes see at once when this process is gone (its
   * session ends with it) instead of waiting for the TTL. Losing the session drops every lease
   * held here at once.
   */
  private async onSession(sql: string, params: unknown[] = []): Promise<Row[]> {
    let c = this.session;
    if (!c) {
      c = new pg.Client({ ...this.db.sessionConfig, types: pgTypes });
      const lost = () => {
        if (this.session !== c) return;
        this.session = undefined;
        this.heldUntil.clear();
        void c!.end().catch(() => undefined);
      };
      c.on('error', lost);
      c.on('end', lost);
      try {
        await c.connect();
      } catch (e) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
        throw refusalOf(e, this.db.standby);
      }
      this.session = c;
    }
    try {
      return (await c.query<Row>(sql, params)).rows;
    } catch (e) {
      throw refusalOf(e, this.db.standby);
    }
  }

  /** What the database lets this node do now (docs/cluster.md#failures). */
  get role(): 'primary' | 'standby' | 'read_only' {
    return this.db.standby ? 'standby' : this.readOnly ? 'read_only' : 'primary';
  }

  holds(task: SingletonTask): boolean {
    const until = this.heldUntil.get(task);
    return until !== undefined && performance.now() < until;
  }

  ran(task: SingletonTask): void {
    this.runs.set(task, (this.runs.get(task) ?? 0) + 1);
    this.db.rows('UPDATE queen.maintenance_leases SET runs = runs + 1, last_run_at = now() WHERE task = $1 AND holder = $2 AND holder_epoch = $3',
      [task, this.opts.serverId, this.epoch]).catch((e: unknown) => this.log.warn({ err: e, task }, 'cannot record a singleton run'));
  }

  members(): readonly ClusterMember[] {
    return this.memberRows;
  }

  singletons(): readonly SingletonHolder[] {
    return this.holderRows;
  }

  announce(address: string): void {
    this.address = address;
  }

  async link(): Promise<LinkView> {
    const r = (await this.db.rows(`SELECT pg_is_in_recovery() AS standby`))[0]!;
    if (this.db.forcedStandby && !(r.standby as boolean)) {
      const lsn = (await this.db.rows(`SELECT pg_current_wal_lsn()::text AS lsn`))[0]?.lsn as string | undefined;
      return { role: 'standby', source: null, position: { lsn: lsn ?? null }, follower: { state: 'halted', lagMs: 0, error: 'QUEEN_STANDBY=true on a primary database: writes refused by configuration' } };
    }
    if (r.standby as boolean) {
      const w = (await this.db.rows(`
        SELECT (SELECT sender_host || ':' || sender_port FROM pg_stat_wal_receiver LIMIT 1) AS source,
               (SELECT status FROM pg_stat_wal_receiver LIMIT 1) AS status,
               pg_last_wal_replay_lsn()::text AS lsn,
               pg_is_wal_replay_paused() AS paused,
               CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
                    ELSE COALESCE(${tsToMs('(now() - pg_last_xact_replay_timestamp())')}, 0) END AS lag_ms`))[0]!;
      const state = (w.paused as boolean) ? 'halted' : w.status === 'streaming' ? 'following' : 'waiting';
      return {
        role: 'standby', source: (w.source as string | null) ?? null, position: { lsn: (w.lsn as string | null) ?? null },
        follower: { state, lagMs: Math.max(0, w.lag_ms as number), error: null },
      };
    }
    const [pos, readers] = await Promise.all([
      this.db.rows(`SELECT pg_current_wal_lsn()::text AS lsn`),
      this.db.rows(`SELECT application_name AS name, replay_lsn::text AS after, state, ${tsToMs('(now() - reply_time)')} AS idle_ms FROM pg_stat_replication ORDER BY application_name`),
    ]);
    return {
      role: this.promotions > 0 ? 'promoted' : 'primary', position: { lsn: (pos[0]?.lsn as string | null) ?? null },
      readers: readers.map((x) => ({ name: x.name as string, after: (x.after as string | null) ?? null, idleMs: (x.idle_ms as number | null) ?? null, state: x.state as string })),
    };
  }

  async promote(): Promise<LinkView> {
    if (this.db.forcedStandby) throw new QueenError('promote_unavailable', 'QUEEN_STANDBY=true keeps this node a standby: restart it with QUEEN_STANDBY=auto');
    if (!this.db.standby && !(await this.db.rows('SELECT pg_is_in_recovery() AS r'))[0]!.r) throw new QueenError('promote_unavailable', 'the database is no standby: nothing to promote');
    try {
      const done = (await this.db.rows('SELECT pg_promote(true, 60) AS ok'))[0]!.ok as boolean;
      if (!done) throw new QueenError('promote_unavailable', 'pg_promote did not finish within 60 s: check the database server');
    } catch (e) {
      if ((e as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE) throw new QueenError('promote_unavailable');
      throw e;
    }
    // Notice it now rather than at the next heartbeat.
    this.lane.cancel('beat');
    await this.beating;
    await this.beat();
    this.arm();
    return this.link();
  }

  /** Live members as of the last heartbeat. */
  get liveCount(): number {
    return this.memberRows.filter((m) => m.live).length;
  }

  private arm(): void {
    if (this.stopped) return;
    this.lane.schedule('beat', this.scheduler.clock.now() + this.opts.heartbeatMs, () => {
      this.beating = this.beat().finally(() => {
        this.beating = undefined;
        this.arm();
      });
    });
  }

  /**
   * One heartbeat (never throws): read the role and the database clock, refresh the row, claim or
   * renew the leases, read members and holders. A standby writes nothing.
   */
  private async beat(): Promise<void> {
    const { serverId, nodeTtlMs, heartbeatMs } = this.opts;
    try {
      const before = Date.now();
      const probe = (await this.db.rows(`SELECT pg_is_in_recovery() AS standby, ${tsToMs('clock_timestamp()')} AS now`))[0]!;
      const after = Date.now();
      this.clockSkewMs = Math.round((before + after) / 2 - (probe.now as number));
      const follow = this.opts.follow;
      // Re-aim the process clock at the database's only when it drifted by more than the jitter of one round trip.
      if (follow && Math.abs(follow.offsetMs - this.clockSkewMs) > Math.max(FOLLOW_JITTER_MS, after - before)) follow.offsetMs = this.clockSkewMs;
      const wasStandby = this.db.standby;
      this.db.standby = this.db.forcedStandby || (probe.standby as boolean);
      if (wasStandby && !this.db.standby) {
        this.promotions++;
        this.log.warn({ serverId }, 'the database was promoted: this node serves writes');
      }
      const t0 = performance.now();
      if (this.db.standby) {
        this.heldUntil.clear();
        const l = await this.link();
        this.follower = l.role === 'standby' ? l.follower : undefined;
      } else {
        this.follower = undefined;
        // Joins once promoted; a row another process took over is taken back only when the id is
        // this process's own (`<host>-<pid>`): under a chosen QUEEN_SERVER_ID the newer process keeps it.
        if (this.epoch === 0 || (!this.own && !this.opts.exclusive)) await this.upsert(false);
        const mine = !this.own ? [] : await this.onSession(`UPDATE queen.cluster_nodes SET heartbeat_at = now(), address = $3, session_pid = pg_backend_pid(), session_started_at = ${MY_SESSION_START}
                                              WHERE server_id = $1 AND epoch = $2 RETURNING 1`, [serverId, this.epoch, this.address]);
        this.readOnly = false;
        if (mine.length === 0) {
          if (this.own) this.log.error({ serverId, epoch: this.epoch }, 'this node\'s membership row was taken over by another process; it runs no cluster-wide job');
          this.own = false;
          this.heldUntil.clear();
        } else {
          // Claimable: the lease ran out, or it is this process's, or its holder's session is gone (the holder process ended).
          const got = await this.onSession(`
            INSERT INTO queen.maintenance_leases AS l (task, holder, holder_epoch, lease_expires_at, fencing)
            SELECT t, $2, $3, now() + make_interval(secs => $4::float8 / 1000), 1 FROM unnest($1::text[]) AS t
            ON CONFLICT (task) DO UPDATE SET holder = EXCLUDED.holder, holder_epoch = EXCLUDED.holder_epoch, lease_expires_at = EXCLUDED.lease_expires_at,
              fencing = l.fencing + CASE WHEN l.holder = EXCLUDED.holder AND l.holder_epoch = EXCLUDED.holder_epoch THEN 0 ELSE 1 END
             WHERE l.lease_expires_at < now() OR (l.holder = EXCLUDED.holder AND l.holder_epoch = EXCLUDED.holder_epoch)
                OR NOT EXISTS (SELECT 1 FROM queen.cluster_nodes h WHERE h.server_id = l.holder AND h.epoch = l.holder_epoch AND NOT h.leaving AND ${SESSION_ALIVE('h')})
            RETURNING task`, [[...SINGLETON_TASKS], serverId, this.epoch, nodeTtlMs]);
          const until = t0 + nodeTtlMs - heartbeatMs;
          const held = new Set(got.map((r) => r.task as SingletonTask));
          for (const t of SINGLETON_TASKS) {
            if (held.has(t)) {
              if (!this.heldUntil.has(t)) this.log.info({ task: t, serverId, epoch: this.epoch }, 'singleton job taken');
              this.heldUntil.set(t, until);
            } else {
              this.heldUntil.delete(t);
            }
          }
        }
      }
      const [members, holders] = await Promise.all([
        this.db.rows(`SELECT server_id, epoch, address, leaving, ${tsToMs('(now() - heartbeat_at)')} AS since_ms,
                             (NOT leaving AND heartbeat_at > now() - make_interval(secs => $1::float8 / 1000) AND (pg_is_in_recovery() OR ${SESSION_ALIVE('n')})) AS live
                        FROM queen.cluster_nodes n ORDER BY server_id`, [nodeTtlMs]),
        this.db.rows(`SELECT task, CASE WHEN lease_expires_at > now() THEN holder END AS holder, CASE WHEN lease_expires_at > now() THEN holder_epoch END AS epoch,
                             fencing, runs, ${tsToMs('last_run_at')} AS last_run_at FROM queen.maintenance_leases ORDER BY task`),
      ]);
      this.memberRows = members.map((r) => ({
        serverId: r.server_id as string, epoch: r.epoch as number, address: r.address as string, live: r.live as boolean,
        lastSeenMs: Math.max(0, r.since_ms as number), leaving: r.leaving as boolean,
      }));
      this.holderRows = holders.filter((r) => (SINGLETON_TASKS as readonly string[]).includes(r.task as string)).map((r) => ({
        task: r.task as SingletonTask, holder: (r.holder as string | null) ?? null, epoch: (r.epoch as number | null) ?? null,
        fencing: r.fencing as number, runs: r.runs as number, lastRunAt: (r.last_run_at as number | null) ?? null,
      }));
      if (++this.beats % FORGET_EVERY_BEATS === 0 && !this.db.standby) {
        await this.db.rows(`DELETE FROM queen.cluster_nodes WHERE heartbeat_at < now() - make_interval(secs => $1::float8 / 1000)`, [FORGET_AFTER_MS]);
      }
      if (this.failures > 0) this.log.info({ failures: this.failures }, 'the database answers again');
      this.failures = 0;
    } catch (e) {
      if (isQueenError(e) && e.code === 'db_read_only') {
        if (!this.readOnly) this.log.warn('the database refuses writes (read-only): writes answer 503 db_read_only until it accepts them again');
        this.readOnly = true;
        this.heldUntil.clear();
        return;
      }
      this.failures++;
      if (this.failures === 1) this.log.warn({ err: e }, 'cluster heartbeat failed');
    }
  }

  /**
   * Leaves: stops beating, gives up the leases (another node takes them on its next heartbeat) and
   * marks the row leaving (the next start under this id gets the next epoch). Best effort: a database that does not answer leaves the row to expire.
   */
  async leave(): Promise<void> {
    this.stopped = true;
    this.lane.cancel('beat');
    await this.beating;
    this.heldUntil.clear();
    try {
      if (this.epoch === 0 || this.db.standby) return;
      await this.db.rows(`UPDATE queen.maintenance_leases SET lease_expires_at = '-infinity' WHERE holder = $1 AND holder_epoch = $2`, [this.opts.serverId, this.epoch]);
      await this.db.rows('UPDATE queen.cluster_nodes SET leaving = true WHERE server_id = $1 AND epoch = $2', [this.opts.serverId, this.epoch]);
    } catch (e) {
      this.log.warn({ err: e }, 'cannot leave the cluster cleanly; the row expires by itself');
    } finally {
      const c = this.session;
      this.session = undefined;
      await c?.end().catch(() => undefined);
    }
  }
}
