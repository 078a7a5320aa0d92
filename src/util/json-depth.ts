/**
 * Nesting depth of JSON text without parsing it: one pass over the characters, skipping string
 * contents. Used to refuse bodies nested deeper than the limit before `JSON.parse`, because a
 * payload that deep cannot be serialised back (the stack overflows) and would poison every read
 * that touches it.
 */

const OPEN_OBJ = 0x7b; // {
const OPEN_ARR = 0x5b; // [
const CLOSE_OBJ = 0x7d; // }
const CLOSE_ARR = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/** True when `text` nests objects/arrays deeper than `max` levels (invalid JSON is left to the parser). */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return false;
}
