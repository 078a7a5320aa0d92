/**
 * One ephemeral queue (docs/ephemeral.md#engine): its rings by partition, the group names it
 * remembers, its options in force, what it holds, its drop counters and its parked pops.
 */
import type { EphemeralOptions } from './options.js';
import { Ring } from './ring.js';

/** Group names a queue remembers for rings created later. */
export const MAX_REMEMBERED_GROUPS = 256;

/** Where a queue came from: a first push/pop, or `configure`. */
export type EphemeralTier = 'implicit' | 'declared';

/** Messages dropped without an ack, by cause. */
export interface Drops {
  bounds: number;
  ttl: number;
  retry: number;
}

/** One ephemeral queue (see the module comment). */
export class EphemeralQueue {
  readonly rings = new Map<string, Ring>();
  readonly groupNames = new Set<string>();
  /** Payload bytes and messages held, all partitions. */
  bytes = 0;
  length = 0;
  readonly drops: Drops = { bounds: 0, ttl: 0, retry: 0 };
  /** Parked pops; each is woken (and removed) by {@link wake}. */
  readonly waiters = new Set<() => void>();
  /** Last push, pop or ack, epoch ms. */
  touchedAt: number;
  /** Requests working on the queue now (it is not collected meanwhile). */
  inUse = 0;
  /** Set once the queue is deleted: a pop parked on it answers with what it has instead of parking again. */
  deleted = false;
  /** {@link sortedRings}' answer until a ring is added or dropped. */
  private sorted: Ring[] | undefined;

  constructor(
    readonly tenant: string,
    readonly name: string,
    public tier: EphemeralTier,
    public options: EphemeralOptions,
    now: number,
  ) {
    this.touchedAt = now;
  }

  /** Remembers a group name (up to {@link MAX_REMEMBERED_GROUPS}). */
  rememberGroup(group: string): void {
    if (this.groupNames.size < MAX_REMEMBERED_GROUPS) this.groupNames.add(group);
  }

  /** The ring of `partition`, created with `incarnation` when missing and `create` is set. */
  ring(partition: string, create: false): Ring | undefined;
  ring(partition: string, create: true, incarnation: () => number, now: number): Ring;
  ring(partition: string, create: boolean, incarnation?: () => number, now?: number): Ring | undefined {
    let r = this.rings.get(partition);
    if (!r && create) {
      this.rings.set(partition, (r = new Ring(partition, incarnation!(), now!, this.groupNames)));
      this.sorted = undefined;
    }
    return r;
  }

  /** Releases every ring. */
  dropRings(): void {
    this.rings.clear();
    this.sorted = undefined;
  }

  /** Releases the ring of `partition`. */
  dropRing(partition: string): void {
    if (this.rings.delete(partition)) this.sorted = undefined;
  }

  /** Rings in partition-name order (sorted once per change of the ring set, not per pop; do not modify). */
  sortedRings(): readonly Ring[] {
    this.sorted ??= [...this.rings.values()].sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0));
    return this.sorted;
  }

  /** Wakes every parked pop. */
  wake(): void {
    if (this.waiters.size === 0) return;
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }
}
