/**
 * A deliberately wrong backend for the conformance meta-test: it behaves like the backend it wraps
 * except that cursor commits are dropped (answered as applied, never written), alone or inside a
 * unit. The conformance cases must catch it.
 */
import type { CursorCommit, CommitResult, QueueBackend, UnitOp, UnitResult } from '../../src/storage/contract.js';

/** Wraps `inner`, dropping every cursor commit. */
export function droppingCursorCommits(inner: QueueBackend): QueueBackend {
  const dropped = async (req: CursorCommit): Promise<CommitResult> => ({ applied: true, cursor: await inner.readCursor(req.key) });
  return Object.assign(Object.create(inner) as QueueBackend, {
    commitCursor: dropped,
    unit: async (ops: UnitOp[]): Promise<UnitResult> => {
      const kept = ops.filter((o) => o.op !== 'commit');
      const r = await inner.unit(kept);
      if (!r.committed) return r;
      return { committed: true, results: ops.map((o) => (o.op === 'commit' ? { applied: true, cursor: undefined } : r.results.shift()!)) };
    },
  });
}
