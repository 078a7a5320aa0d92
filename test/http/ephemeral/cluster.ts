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
 * Waits until the placement has settled for every owner of `among`: the owner's own view makes it
 * the owner (a relayed push straight to it is accepted, not answered `503 owner_moved`), and every
 * node of `from` relays a push for that owner's partition to it, so that the sender holds nothing
 * and the owner holds it, and a pop through the sender (relayed too) returns that very message.
 * Then deletes the probe queues. `nodes` maps server ids to the brokers; an `external` owner is
 * checked through its own record. `token` is the node-port token (`QUEEN_RAFT_TOKEN`).
 */
export async function converged(nodes: ReadonlyMap<string, BrokerHandle>, token: string, among: readonly string[], from: readonly string[] = among, external?: ExternalOwner): Promise<void> {
  for (const owner of among) for (const sender of from) {
    if (sender === owner) continue;
    const queue = uniqueName('conv');
    const partition = partitionOwnedBy(owner, among, queue);
    if (owner !== external?.serverId) {
      const own = uniqueName('own');
      const p = partitionOwnedBy(owner, among, own);
      await waitFor(async () => {
        const r = await call(nodes.get(owner)!.url, 'POST', '/api/v1/ephemeral/push', { queue: own, partition: p, messages: [{ payload: 1 }] },
          { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': token });
        if (r.status === 503 && r.body.code === 'owner_moved') return false;
        assert.equal(r.status, 201, JSON.stringify(r.body));
        return true;
      }, { what: `${owner} takes ${own}/${p} as its own`, timeoutMs: 20_000, intervalMs: 100 });
      await call(nodes.get(owner)!.url, 'DELETE', `/api/v1/ephemeral/queue/${own}`);
    }
    await waitFor(async () => {
      const mark = uniqueName('mark');
      const r = await call(nodes.get(sender)!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: [{ payload: mark }] });
      if (r.status === 503 && r.body.code === 'owner_moved') return false;
      assert.equal(r.status, 201, JSON.stringify(r.body));
      if (owner === external?.serverId) return external.receivedPush(queue);
      if (((await partitionsOn(nodes.get(sender)!, queue)).get(partition) ?? 0) !== 0) return false;
      if (((await partitionsOn(nodes.get(owner)!, queue)).get(partition) ?? 0) === 0) return false;
      // Everything queued so far comes back through the sender; the latest push must be among it.
      const pop = await call(nodes.get(sender)!.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&batch=1000`);
      if (pop.status !== 200) return false;
      return (pop.body.messages as { payload: unknown }[]).some((m) => m.payload === mark);
    }, { what: `${sender} relays ${queue}/${partition} to ${owner}`, timeoutMs: 20_000, intervalMs: 100 });
    if (owner !== external?.serverId) await call(nodes.get(owner)!.url, 'DELETE', `/api/v1/ephemeral/queue/${queue}`);
  }
}
