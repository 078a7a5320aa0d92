/**
 * The process-wide budget of request bytes read but not yet handled
 * (`QUEEN_KAFKA_QUEUED_MAX_REQUEST_BYTES`, docs/kafka.md#connection-layer), like Apache Kafka's
 * `queued.max.request.bytes` memory pool: a connection reserves a frame's whole size when its
 * length prefix arrives, before the body is buffered; when the budget cannot cover it the
 * connection stops reading until enough is given back (first come, first served).
 */
export class RequestBytes {
  private free: number;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  /** @param capacity bytes that may be reserved at once across every connection */
  constructor(readonly capacity: number) {
    this.free = capacity;
  }

  /** Bytes reserved now. */
  get inUse(): number {
    return this.capacity - this.free;
  }

  /**
   * Reserves `bytes` now, or queues the reservation and calls `grant` once it is made (in order of
   * asking). `bytes` must not exceed the capacity.
   * @returns true when reserved at once (then `grant` is not called); false when queued
   */
  reserve(bytes: number, grant: () => void): boolean {
    if (this.waiting.length === 0 && bytes <= this.free) {
      this.free -= bytes;
      return true;
    }
    this.waiting.push({ bytes, grant });
    return false;
  }

  /** Withdraws a queued reservation whose `grant` is no longer wanted (its connection closed). */
  cancel(grant: () => void): void {
    const i = this.waiting.findIndex((w) => w.grant === grant);
    if (i >= 0) this.waiting.splice(i, 1);
    this.pump();
  }

  /** Gives back `bytes` reserved earlier, granting queued reservations that now fit. */
  give(bytes: number): void {
    this.free = Math.min(this.capacity, this.free + bytes);
    this.pump();
  }

  private pump(): void {
    while (this.waiting.length > 0 && this.waiting[0]!.bytes <= this.free) {
      const w = this.waiting.shift()!;
      this.free -= w.bytes;
      w.grant();
    }
  }
}
