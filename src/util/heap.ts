/**
 * A binary min-heap of items keyed by a number (here: due times in epoch ms). Used for lease
 * expiry and retention due times, so background work scales with what is due, not with what exists.
 */
export class MinHeap<T> {
  private readonly a: { at: number; item: T }[] = [];

  get size(): number {
    return this.a.length;
  }

  /** The smallest key, or undefined when empty. */
  peekAt(): number | undefined {
    return this.a[0]?.at;
  }

  push(at: number, item: T): void {
    const a = this.a;
    a.push({ at, item });
    let i = a.length - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (a[up]!.at <= a[i]!.at) break;
      [a[up], a[i]] = [a[i]!, a[up]!];
      i = up;
    }
  }

  /** Removes and returns the item with the smallest key. */
  pop(): T | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]!.at < a[m]!.at) m = l;
        if (r < a.length && a[r]!.at < a[m]!.at) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top?.item;
  }

  /** Removes and returns every item whose key is ≤ `now`, smallest first. */
  popDue(now: number): T[] {
    const out: T[] = [];
    while (this.a.length > 0 && this.a[0]!.at <= now) out.push(this.pop()!);
    return out;
  }

  clear(): void {
    this.a.length = 0;
  }
}
