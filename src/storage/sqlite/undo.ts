/**
 * Failure containment for the in-memory indexes (docs/storage.md#in-memory-indexes): while a unit of
 * work runs, every index entry it is about to change is recorded here once (its prior value, or
 * "did not exist"). When the store rolls the unit back (the unit threw, or the group commit failed),
 * the recorded entries are restored in reverse order: only what this unit touched, never a reload of
 * every queue, partition and cursor.
 *
 * Derived structures (lease tracking, the lease-expiry heap) are rebuilt from the restored cursor
 * fields, so they can never disagree with them.
 */

/** The inverse actions of one unit of work, run newest first by {@link UndoLog.rollback}. */
export class UndoLog {
  private readonly steps: (() => void)[] = [];
  private readonly seen = new Set<object>();
  private readonly seenReady = new Map<object, Set<object>>();

  /**
   * Records `restore` unless `subject` was already recorded in this unit (the first snapshot is the
   * state before the unit; later ones would be intermediate states).
   * @returns true when recorded
   */
  once(subject: object, restore: () => void): boolean {
    if (this.seen.has(subject)) return false;
    this.seen.add(subject);
    this.steps.push(restore);
    return true;
  }

  /** Records `restore` unconditionally (creations and deletions, each happening once per unit). */
  push(restore: () => void): void {
    this.steps.push(restore);
  }

  /** Records a ready-set membership of (`group`, `partition`) once per unit. */
  onceReady(group: object, partition: object, restore: () => void): void {
    let s = this.seenReady.get(group);
    if (!s) this.seenReady.set(group, (s = new Set()));
    if (s.has(partition)) return;
    s.add(partition);
    this.steps.push(restore);
  }

  /** Number of recorded steps (tests and diagnostics). */
  get size(): number {
    return this.steps.length;
  }

  /** Restores every recorded entry, newest first; runs once. */
  rollback(): void {
    for (let i = this.steps.length - 1; i >= 0; i--) this.steps[i]!();
    this.steps.length = 0;
  }
}
