/**
 * Idempotent-producer windows (docs/kafka.md#idempotent-producer): per (producer id, topic,
 * partition) the last 5 appended batches, in memory. An exact resend answers the original base
 * offset and writes nothing; the next sequence appends; a producer we hold no window for starts a
 * new window from whatever sequence it sends (never OUT_OF_ORDER for unknown state); a real gap
 * inside a held window is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH.
 */
import { ErrorCode } from './errors.js';

interface Appended {
  firstSeq: number;
  lastSeq: number;
  baseOffset: number;
}

interface Window {
  epoch: number;
  batches: Appended[];
}

/** What to do with one idempotent batch. */
export type SequenceCheck =
  | { kind: 'append' }
  | { kind: 'duplicate'; baseOffset: number }
  | { kind: 'error'; code: number };

const KEPT = 5;

export class ProducerWindows {
  private readonly windows = new Map<string, Window>();
  private nextId: number;

  constructor(private readonly maxStates = 4_194_304) {
    // Unique per process incarnation: high bits from the start time, a counter below.
    this.nextId = (Date.now() % 2 ** 20) * 2 ** 20;
  }

  /** Mints a producer id (epoch 0). */
  mint(): number {
    return this.nextId++;
  }

  /** Forgets every window of `producerId` (InitProducerId epoch bump). */
  reset(producerId: number): void {
    const prefix = `${producerId}\u0000`;
    for (const k of this.windows.keys()) if (k.startsWith(prefix)) this.windows.delete(k);
  }

  private key(producerId: number, topic: string, partition: number): string {
    return `${producerId}\u0000${topic}\u0000${partition}`;
  }

  /** Decides on a batch of `count` records with sequences `firstSeq..`. */
  check(producerId: number, epoch: number, topic: string, partition: number, firstSeq: number, count: number): SequenceCheck {
    const w = this.windows.get(this.key(producerId, topic, partition));
    if (!w) return { kind: 'append' };
    if (epoch < w.epoch) return { kind: 'error', code: ErrorCode.INVALID_PRODUCER_EPOCH };
    if (epoch > w.epoch) return { kind: 'append' };
    const lastSeq = (firstSeq + count - 1) % 2 ** 31;
    const same = w.batches.find((b) => b.firstSeq === firstSeq && b.lastSeq === lastSeq);
    if (same) return { kind: 'duplicate', baseOffset: same.baseOffset };
    const last = w.batches[w.batches.length - 1]!;
    if (firstSeq === (last.lastSeq + 1) % 2 ** 31) return { kind: 'append' };
    if (firstSeq <= last.lastSeq) return { kind: 'error', code: ErrorCode.DUPLICATE_SEQUENCE_NUMBER };
    return { kind: 'error', code: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER };
  }

  /** Records an appended batch. */
  appended(producerId: number, epoch: number, topic: string, partition: number, firstSeq: number, count: number, baseOffset: number): void {
    const k = this.key(producerId, topic, partition);
    let w = this.windows.get(k);
    if (!w || w.epoch !== epoch) {
      w = { epoch, batches: [] };
      this.windows.delete(k);
      this.windows.set(k, w);
      if (this.windows.size > this.maxStates) this.windows.delete(this.windows.keys().next().value!);
    }
    w.batches.push({ firstSeq, lastSeq: (firstSeq + count - 1) % 2 ** 31, baseOffset });
    if (w.batches.length > KEPT) w.batches.shift();
  }
}
