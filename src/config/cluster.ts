/**
 * The node port's configuration (docs/cluster.md#the-node-port,
 * docs/cluster.md#raft-only-variables):
 * `QUEEN_RAFT_LISTEN` (host:port, off when unset), `QUEEN_RAFT_TOKEN` (blank = unset), and the
 * Raft-only variables Queen-TS reads nothing from (`QUEEN_RAFT_PEERS` and friends, `QUEEN_LINK_*`).
 */
import { hostname } from 'node:os';
import { ConfigError, int, type Env } from './env.js';
import { parseHostPort, type HostPort } from './kafka.js';

/** Names under `QUEEN_RAFT_` that Queen-TS reads; every other one is Raft-only and ignored. */
const READ_RAFT_NAMES = new Set(['QUEEN_RAFT_LISTEN', 'QUEEN_RAFT_TOKEN', 'QUEEN_RAFT_DIR']);

/** The node port's settings (docs/cluster.md#the-node-port). */
export interface ClusterConfig {
  /** Bind address of the node port (`QUEEN_RAFT_LISTEN`, e.g. `0.0.0.0:7400`); undefined = off. Port 0 lets the kernel pick. */
  listen: HostPort | undefined;
  /** `QUEEN_RAFT_TOKEN`, trimmed; undefined when unset or blank. Never logged. */
  token: string | undefined;
  /** This node's name (`QUEEN_SERVER_ID`, default the host name), shown by the node port's health. */
  serverId: string;
  /**
   * True when `QUEEN_SERVER_ID` was set: only then is a second live node with the same id refused at
   * boot (docs/cluster.md#membership). Unset, the membership row is named `<host name>-<pid>`, so
   * several processes on one host never collide.
   */
  serverIdSet: boolean;
  /** `QUEEN_CLUSTER_HEARTBEAT_MS` (default 1000, 50…60000): how often a node refreshes its membership row and its singleton leases, ms. */
  heartbeatMs: number;
  /**
   * `QUEEN_CLUSTER_NODE_TTL_MS` (default 5000, at least twice the heartbeat): a node whose heartbeat
   * is older than this (database clock) is dead, and the singleton jobs it held pass to another node, ms.
   */
  nodeTtlMs: number;
  /**
   * `QUEEN_STANDBY` (PostgreSQL only, docs/cluster.md#standby): `auto` (default) follows
   * `pg_is_in_recovery()`; `true` serves as a standby even on a primary (every write answers 503
   * `standby`); `false` refuses to start on a hot standby.
   */
  standby: 'auto' | 'true' | 'false';
  /** Set variables Queen-TS ignores (Raft-only `QUEEN_RAFT_*`, `QUEEN_LINK_*`), sorted, for one boot warning. */
  ignored: string[];
}

/**
 * Reads the node port's settings.
 * @throws ConfigError for a `QUEEN_RAFT_LISTEN` that is not `host:port`
 */
export function loadClusterConfig(env: Env): ClusterConfig {
  const listenRaw = env.QUEEN_RAFT_LISTEN?.trim();
  if (env.QUEEN_RAFT_LISTEN !== undefined && listenRaw === '') throw new ConfigError('QUEEN_RAFT_LISTEN is set to the empty string — give it host:port (e.g. 0.0.0.0:7400), or unset it to turn the node port off');
  const listen = listenRaw ? parseHostPort('QUEEN_RAFT_LISTEN', listenRaw, true) : undefined;
  const tokenRaw = env.QUEEN_RAFT_TOKEN;
  const token = tokenRaw === undefined || tokenRaw.trim() === '' ? undefined : tokenRaw.trim();
  const ignored = Object.keys(env)
    .filter((k) => env[k] !== undefined && ((k.startsWith('QUEEN_RAFT_') && !READ_RAFT_NAMES.has(k)) || k.startsWith('QUEEN_LINK_')))
    .sort();
  const heartbeatMs = int(env, 'QUEEN_CLUSTER_HEARTBEAT_MS', 1000, 50, 60_000);
  const nodeTtlMs = int(env, 'QUEEN_CLUSTER_NODE_TTL_MS', Math.max(5000, 2 * heartbeatMs), 100, 600_000);
  if (nodeTtlMs < 2 * heartbeatMs) throw new ConfigError(`QUEEN_CLUSTER_NODE_TTL_MS=${nodeTtlMs} must be at least twice QUEEN_CLUSTER_HEARTBEAT_MS=${heartbeatMs}`);
  const standbyRaw = (env.QUEEN_STANDBY ?? '').trim().toLowerCase() || 'auto';
  if (standbyRaw !== 'auto' && standbyRaw !== 'true' && standbyRaw !== 'false') throw new ConfigError(`QUEEN_STANDBY=${JSON.stringify(env.QUEEN_STANDBY)} is not one of auto, true, false`);
  const standby = standbyRaw;
  const serverIdSet = (env.QUEEN_SERVER_ID?.trim() ?? '') !== '';
  return { listen, token, serverId: env.QUEEN_SERVER_ID?.trim() || hostname(), serverIdSet, heartbeatMs, nodeTtlMs, standby, ignored };
}

/** True for a bind host that only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
