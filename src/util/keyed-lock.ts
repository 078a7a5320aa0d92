/**
 * First-come, first-served exclusion per key within this process: {@link KeyedLock.run} runs its
 * function once it holds every key it names, each key held by one caller at a time, waiters served
 * in arrival order. A caller naming several keys takes them in sorted order, so two callers can
 * never wait on each other. Memory follows what is held or awaited: a key with nobody left is
 * forgotten.
 *
 * Used where an optimistic decide-then-commit loop would otherwise spin under contention
 * (src/broker/coordination/kv.ts: writes to one KV row; docs/http-api.md#kv).
 */

/** The tail of a key's queue: resolves when the last caller that took the key lets it go. */
interface Tail {
  done: Promise<void>;
}

/** Per-key exclusion in arrival order (see the module comment). */
export class KeyedLock {
  private readonly tails = new Map<string, Tail>();

  /** Keys currently held or awaited (for tests of the bookkeeping). */
  get size(): number {
    return this.tails.size;
  }

  /**
   * Runs `fn` while holding every key of `keys` (none: at once); releases them when `fn` settles,
   * whatever it did.
   * @returns what `fn` resolved with
   * @throws what `fn` threw
   */
  async run<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    if (keys.length === 0) return fn();
    const sorted = [...new Set(keys)].sort();
    const releases: (() => void)[] = [];
    try {
      for (const key of sorted) releases.push(await this.take(key));
      return await fn();
    } finally {
      for (const release of releases) release();
    }
  }

  /** Waits for `key`, then holds it; resolves with the function that lets it go. */
  private async take(key: string): Promise<() => void> {
    const before = this.tails.get(key);
    let release!: () => void;
    const tail: Tail = { done: new Promise<void>((resolve) => { release = resolve; }) };
    this.tails.set(key, tail);
    if (before) await before.done;
    return () => {
      if (this.tails.get(key) === tail) this.tails.delete(key); // nobody queued behind: forget the key
      release();
    };
  }
}
