/**
 * Shared set-up of the multi-node ephemeral tests (docs/ephemeral.md#multi-node): broker
 * environments on one PostgreSQL database, rendezvous owners, per-node reads of what a node holds
 * itself (the depth read does not relay), and the wait until every node relays to every owner.
 */
import assert from 'node:assert/strict';
import { rendezvous } from '../../../src/broker/ephemeral/nodes.js';
import { DEFAULT_TENANT } from '../../../src/model/tenancy.js';
import type { BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';

/** The environment of node `id` on database `dbUrl` with node-port token `token`; membership heartbeats every 200 ms, a node gone after 1 s. */
export const nodeEnv = (dbUrl: string, id: string, token: string): Record<string, string> => ({
  QUEEN_STORAGE: 'postgres', DATABASE_URL: dbUrl, QUEEN_SERVER_ID: id, QUEEN_RAFT_TOKEN: token,
  QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1000',
});

/** The owner of `queue`/`partition` (default tenant) among the server ids `among`. */
export const ownerAmong = (among: readonly string[], queue: string, partition: string): string =>
  rendezvous(among.map((serverId) => ({ serverId })), DEFAULT_TENANT, queue, partition)!.serverId;

/** The first partition `p-<i>` of `queue` whose owner among `among` is `owner`. */
export function partitionOwnedBy(owner: string, among: readonly string[], queue: string): string {
  for (let i = 0; ; i++) if (ownerAmong(among, queue, `p-${i}`) === owner) return `p-${i}`;
}

/** Messages each partition of `queue` holds on `node` (its own share). */
export async function partitionsOn(node: BrokerHandle, queue: string): Promise<Map<string, number>> {
  const r = await call(node.url, 'GET', `/api/v1/ephemeral/queues/${queue}/depth`);
  const out = new Map<string, number>();
  if (r.status !== 200) return out;
  for (const p of r.body.partitions as { partition: string; pending: number }[]) out.set(p.partition, p.pending);
  return out;
}

/** A node that is not a broker process of the test (a scripted peer): whether it received a relayed push of `queue`. */
export interface ExternalOwner {
  serverId: string;
  receivedPush(queue: string): boolean;
}

/**
 * Waits until every node of `from` relays a push for a partition that another node of `among`
 * owns to that owner (each node's view of the membership has settled), then deletes the probe
 * queues. `nodes` maps server ids to the brokers; an `external` owner is checked through its own record.
 */
export async function converged(nodes: ReadonlyMap<string, BrokerHandle>, among: readonly string[], from: readonly string[] = among, external?: ExternalOwner): Promise<void> {
  for (const owner of among) {
    for (const sender of from) {
      if (sender === owner) continue;
      const queue = uniqueName('conv');
      const partition = partitionOwnedBy(owner, among, queue);
      await waitFor(async () => {
        const r = await call(nodes.get(sender)!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: 1 }] });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        if (owner === external?.serverId) return external.receivedPush(queue);
        return ((await partitionsOn(nodes.get(sender)!, queue)).get(partition) ?? 0) === 0 && ((await partitionsOn(nodes.get(owner)!, queue)).get(partition) ?? 0) > 0;
      }, { what: `${sender} relays ${queue}/${partition} to ${owner}`, timeoutMs: 20_000, intervalMs: 100 });
      if (owner !== external?.serverId) await call(nodes.get(owner)!.url, 'DELETE', `/api/v1/ephemeral/queue/${queue}`);
    }
  }
}
