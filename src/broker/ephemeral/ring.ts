/**
 * One partition ring of an ephemeral queue (docs/ephemeral.md#engine): the held messages in seq
 * order and, per consumer group, a cursor, a redelivery list, attempts and per-message leases.
 * Memory of a message is freed once every group's low-water mark (cursor, pending redeliveries,
 * live leases) is past it; a ring with no groups keeps everything (the queue's bounds apply).
 */

/** A held message: its local seq, the exact JSON text received, its byte length and enqueue time (epoch ms). */
export interface HeldMessage {
  local: number;
  payload: string;
  bytes: number;
  at: number;
}

/** One group's position in a ring. */
export interface GroupCursor {
  /** The next local seq to deliver forward. */
  next: number;
  /** Local seqs queued for redelivery, ascending. */
  redeliver: number[];
  /**
   * Deliveries so far per outstanding local seq, from the second delivery on: a leased or
   * redelivery-queued seq without an entry was delivered once. Every seq here is also leased or
   * queued for redelivery.
   */
  attempts: Map<number, number>;
  /** Live leases: local seq → expiry (epoch ms), in expiry order (leases only grow with time). */
  leases: Map<number, number>;
  /** Messages the group never saw because bounds or TTL evicted them under it. */
  skipped: number;
  /** The group has an entry in the engine's lease-expiry heap. */
  scheduled: boolean;
}

/** Inserts `v` into the ascending array `a` (no duplicates). */
function insertSorted(a: number[], v: number): void {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  if (a[lo] !== v) a.splice(lo, 0, v);
}

/** A partition ring (see the module comment). */
export class Ring {
  private msgs: HeldMessage[] = [];
  private head = 0;
  /** Local seq of the oldest held message (== nextLocal when empty). */
  headLocal = 0;
  /** Local seq the next push gets. */
  nextLocal = 0;
  /** Payload bytes held. */
  bytes = 0;
  readonly groups = new Map<string, GroupCursor>();
  /** Last push, pop or ack, epoch ms (for idle collection). */
  touchedAt: number;

  constructor(readonly partition: string, readonly incarnation: number, now: number, groupNames: Iterable<string>) {
    this.touchedAt = now;
    for (const g of groupNames) this.group(g);
  }

  /** Messages held. */
  get length(): number {
    return this.msgs.length - this.head;
  }

  /** The held message with local seq `local`, or undefined. */
  at(local: number): HeldMessage | undefined {
    const i = local - this.headLocal;
    return i >= 0 && i < this.length ? this.msgs[this.head + i] : undefined;
  }

  /** The oldest held message. */
  first(): HeldMessage | undefined {
    return this.msgs[this.head];
  }

  append(payload: string, bytes: number, now: number): void {
    this.msgs.push({ local: this.nextLocal++, payload, bytes, at: now });
    this.bytes += bytes;
  }

  /** The group's cursor, created at the ring's head. */
  group(name: string): GroupCursor {
    let g = this.groups.get(name);
    if (!g) this.groups.set(name, (g = { next: this.headLocal, redeliver: [], attempts: new Map(), leases: new Map(), skipped: 0, scheduled: false }));
    return g;
  }

  /** Queues `local` for redelivery to `g`. */
  static redeliver(g: GroupCursor, local: number): void {
    insertSorted(g.redeliver, local);
  }

  /**
   * Removes the oldest message. `evicted` (bounds or TTL): groups that had not consumed it count it
   * as skipped, and leases, redeliveries and attempts on it are voided.
   * @returns the removed message, or undefined when empty
   */
  dropHead(evicted: boolean): HeldMessage | undefined {
    const m = this.msgs[this.head];
    if (!m) return undefined;
    this.msgs[this.head] = undefined as unknown as HeldMessage;
    this.head++;
    this.headLocal = m.local + 1;
    this.bytes -= m.bytes;
    if (evicted) {
      for (const g of this.groups.values()) {
        if (g.next <= m.local) {
          g.next = m.local + 1;
          g.skipped++;
        }
        g.leases.delete(m.local);
        g.attempts.delete(m.local);
        if (g.redeliver[0] === m.local) g.redeliver.shift();
      }
    }
    if (this.head === this.msgs.length) {
      this.msgs = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.msgs.length) {
      this.msgs = this.msgs.slice(this.head);
      this.head = 0;
    }
    return m;
  }

  /** Drops every message and resets every group to the tail (reset); returns how many were held. */
  clear(): number {
    const n = this.length;
    this.msgs = [];
    this.head = 0;
    this.headLocal = this.nextLocal;
    this.bytes = 0;
    for (const g of this.groups.values()) {
      g.next = this.nextLocal;
      g.redeliver = [];
      g.attempts.clear();
      g.leases.clear();
    }
    return n;
  }

  /**
   * Frees messages every group is past (docs/ephemeral.md#engine); a ring without groups keeps all.
   * @returns the removed messages' total bytes and count
   */
  reclaim(): { bytes: number; count: number } {
    if (this.groups.size === 0 || this.length === 0) return { bytes: 0, count: 0 };
    let low = this.nextLocal;
    for (const g of this.groups.values()) {
      low = Math.min(low, g.next);
      if (g.redeliver.length > 0) low = Math.min(low, g.redeliver[0]!);
    }
    // A leased message is kept too: stop at the first one from the head. Leases never sit below the
    // head and attempts only exist on leased or redelivery-queued seqs, so the cost grows with the
    // messages freed, not with the leases or attempts held.
    let bytes = 0;
    let count = 0;
    while (this.length > 0 && this.headLocal < low && !this.leased(this.headLocal)) {
      bytes += this.dropHead(false)!.bytes;
      count++;
    }
    return { bytes, count };
  }

  /** True when some group holds a lease on `local`. */
  private leased(local: number): boolean {
    for (const g of this.groups.values()) if (g.leases.has(local)) return true;
    return false;
  }

  /** Backlog a group owes: cursor → tail plus pending redeliveries (a missing group owes the ring). */
  pending(group: string): number {
    const g = this.groups.get(group);
    if (!g) return this.length;
    return Math.max(0, this.nextLocal - Math.max(g.next, this.headLocal)) + g.redeliver.length;
  }
}
