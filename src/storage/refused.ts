/**
 * The refusal of a unit (src/storage/contract.ts `UnitResult`): thrown inside a unit of work (SQLite or PostgreSQL)
 * when a commit op's lease or offset condition, a precondition op or a `refuseDuplicates` append
 * fails, so the backend rolls the unit back. An answer, not a storage failure: the unit runners pass
 * it through unchanged and the backends turn it into `{committed: false, failedIndex}`.
 */
export class UnitRefused extends Error {
  /**
   * @param index the refused op's position in its unit
   * @param item the duplicate item's index, for a `refuseDuplicates` append
   */
  constructor(readonly index: number, readonly item?: number) { super('unit condition failed'); }

  /** The contract's answer for this refusal. */
  result(): { committed: false; failedIndex: number; failedItem?: number } {
    return this.item === undefined ? { committed: false, failedIndex: this.index } : { committed: false, failedIndex: this.index, failedItem: this.item };
  }
}
