/**
 * Deterministic transaction ids for the sink messages of an idle-flush cycle (docs/streams.md#idle-flush):
 * the official SDK sends none, so the broker derives one from the state operation that closes the
 * window (query id, source partition, window state key). A replayed idle-flush cycle then carries
 * the same ids, and the sink queue's dedup window drops its messages even if it got that far.
 */
import { createHash } from 'node:crypto';

/**
 * One id per sink item: item `i` pairs with the `i`-th deleted state key when the cycle deletes
 * exactly one key per item (the SDK's shape: one emitted window per deleted row); otherwise every
 * item's id covers all the deleted keys and its index.
 * @param deletedKeys the cycle's `delete` state keys, in order (non-empty)
 * @returns `sw:` + 64 hex chars per item
 */
export function flushTransactionIds(queryId: string, partitionId: string, deletedKeys: readonly string[], items: number): string[] {
  const h = (...parts: string[]): string => `sw:${createHash('sha256').update(parts.join('\u001f')).digest('hex')}`;
  if (deletedKeys.length === items) return deletedKeys.map((k) => h(queryId, partitionId, k));
  const all = deletedKeys.join('\u001e');
  return Array.from({ length: items }, (_, i) => h(queryId, partitionId, all, String(i)));
}
