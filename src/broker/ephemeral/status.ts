/**
 * The ephemeral status reads (docs/ephemeral.md#status-reads): in memory only, cheap enough to
 * poll every second. Each node reports only what it holds.
 */
import type { EphemeralEngine } from './engine.js';
import { QUEUE_MODE } from './engine.js';
import type { EphemeralQueue } from './queue.js';
import { DEFAULT_TENANT } from '../../model/tenancy.js';

/**
 * One row of `GET /api/v1/ephemeral/queues`: `depth` messages held, `bytes` held, `parked` pops
 * waiting on the queue, `inFlight` live leases over every partition and group.
 */
export function queueRow(q: EphemeralQueue): Record<string, unknown> {
  const groups = new Set<string>(q.groupNames);
  let inFlight = 0;
  for (const r of q.rings.values()) {
    for (const [name, g] of r.groups) {
      groups.add(name);
      inFlight += g.leases.size;
    }
  }
  return {
    queue: q.name, tier: q.tier, depth: q.length, bytes: q.bytes, partitions: q.rings.size, groups: groups.size,
    parked: q.waiters.size, inFlight,
    drops: { ...q.drops }, options: { ...q.options, windowBuffer: { ...q.options.windowBuffer } },
  };
}

/**
 * `GET /api/v1/ephemeral/queues` for a tenant. `cellBytes` is the node's ephemeral bytes for the
 * default tenant (the operator's) and the tenant's own bytes for any other: the node's total would
 * tell one tenant how much the others hold.
 */
export function listing(engine: EphemeralEngine, tenant: string): Record<string, unknown> {
  const held = engine.list(tenant);
  const queues = held.map(queueRow);
  let own = 0;
  for (const q of held) own += q.bytes;
  return { queues, count: queues.length, cellBytes: tenant === DEFAULT_TENANT ? engine.cellBytes : own };
}

/**
 * `GET /api/v1/ephemeral/queues/:queue/depth`: backlog per partition for `group`, or without one
 * the worst named group, else queue mode, else the ring length.
 */
export function depth(q: EphemeralQueue, group: string | undefined): Record<string, unknown> {
  const rings = q.sortedRings();
  const partitions = rings.map((r) => {
    let pending: number;
    if (group !== undefined) pending = r.pending(group);
    else {
      const named = [...r.groups.keys()].filter((g) => g !== QUEUE_MODE);
      if (named.length > 0) pending = Math.max(...named.map((g) => r.pending(g)));
      else pending = r.groups.has(QUEUE_MODE) ? r.pending(QUEUE_MODE) : r.length;
    }
    return { partition: r.partition, pending, bytes: r.bytes };
  });
  const names = new Set<string>(q.groupNames);
  for (const r of rings) for (const g of r.groups.keys()) names.add(g);
  const groups = [...names].sort().map((g) => ({
    group: g,
    pending: rings.reduce((n, r) => n + r.pending(g), 0),
    skipped: rings.reduce((n, r) => n + (r.groups.get(g)?.skipped ?? 0), 0),
  }));
  return {
    queue: q.name, group: group ?? null, tier: q.tier,
    pending: partitions.reduce((n, p) => n + p.pending, 0),
    partitionsPending: partitions.filter((p) => p.pending > 0).length,
    bytes: q.bytes, partitions, groups,
  };
}
