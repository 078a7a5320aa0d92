/**
 * Prometheus series of the membership and the singleton jobs (docs/cluster.md#observability),
 * read at scrape time from this node's view (src/storage/runtime.ts `ClusterView`).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { SINGLETON_TASKS, type ClusterView } from '../../storage/runtime.js';

/** Registers the cluster series on `registry`: live nodes, who holds each job, runs by this node. */
export function registerClusterMetrics(registry: Registry, cluster: ClusterView): void {
  const registers = [registry];
  new Gauge({
    name: 'queen_cluster_nodes_live', help: 'Nodes whose heartbeat is within the node TTL (database clock), as of this node\'s last heartbeat', registers,
    collect() { this.set(cluster.members().filter((m) => m.live).length); },
  });
  new Gauge({
    name: 'queen_singleton_holder', help: 'Who holds each cluster-wide job: 1 for the holder\'s server_id, as of this node\'s last heartbeat',
    labelNames: ['task', 'server_id'], registers,
    collect() {
      this.reset();
      for (const h of cluster.singletons()) if (h.holder !== null) this.set({ task: h.task, server_id: h.holder }, 1);
    },
  });
  new Gauge({
    name: 'queen_singleton_held', help: 'Whether this node holds the cluster-wide job now (1) or not (0)', labelNames: ['task'], registers,
    collect() { for (const t of SINGLETON_TASKS) this.set({ task: t }, cluster.holds(t) ? 1 : 0); },
  });
  new Gauge({
    name: 'queen_link_lag_seconds', help: 'Replication lag of this node\'s standby database (0 on a primary), as of the last heartbeat', registers,
    collect() { this.set((cluster.follower?.lagMs ?? 0) / 1000); },
  });
  new Gauge({
    name: 'queen_link_follower_state', help: 'State of this node\'s standby database: 1 for the current state (none on a primary)', labelNames: ['state'], registers,
    collect() {
      this.reset();
      if (cluster.follower) this.set({ state: cluster.follower.state }, 1);
    },
  });
  const seen = new Map<string, number>();
  new Counter({
    name: 'queen_singleton_runs_total', help: 'Runs of each cluster-wide job by this node', labelNames: ['task', 'server_id'], registers,
    collect() {
      for (const t of SINGLETON_TASKS) {
        const v = cluster.runsHere.get(t) ?? 0;
        const before = seen.get(t) ?? 0;
        this.inc({ task: t, server_id: cluster.serverId }, Math.max(0, v - before));
        seen.set(t, v);
      }
    },
  });
}
