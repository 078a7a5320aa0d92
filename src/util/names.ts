/**
 * The one rule for client-chosen identifiers stored as text (queue, partition, group, KV namespace
 * and key, lock name and owner, timer key, trace name, worker id, …): no NUL and no lone UTF-16
 * surrogate. Such text cannot be stored as UTF-8 unchanged (a lone surrogate comes back as U+FFFD)
 * and no URL can carry it back, so it is refused rather than silently renamed.
 */
import { QueenError } from '../errors.js';

/** NUL, or a surrogate half without its partner. */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this pattern refuses
const BAD_NAME_CHARS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when `text` holds a NUL character or a lone UTF-16 surrogate. */
export function hasBadNameChars(text: string): boolean {
  return BAD_NAME_CHARS.test(text);
}

/**
 * Refuses text with a NUL or a lone UTF-16 surrogate.
 * @param kind what the text is, for the message (`queue`, `key`, `operations[0].name`, …)
 * @throws QueenError `invalid_name` (400)
 */
export function checkNameText(kind: string, text: string): void {
  if (BAD_NAME_CHARS.test(text)) {
    throw new QueenError('invalid_name', `${kind} contains a NUL character or a lone UTF-16 surrogate`);
  }
}
