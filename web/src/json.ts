/**
 * The broker returns client payloads with their numbers exactly as sent (`12345678901234567890`,
 * `1.0`, `1e400`); a plain `JSON.parse` would show them altered. Answers whose text holds such a
 * number are parsed with lossless-json, keeping each one as a `LosslessNumber`, and payload
 * views print them back with {@link showJson}.
 */
import { LosslessNumber, parse, stringify } from 'lossless-json';

const NUMBER_OR_STRING = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

function hasInexactNumber(text: string): boolean {
  NUMBER_OR_STRING.lastIndex = 0;
  for (let m = NUMBER_OR_STRING.exec(text); m !== null; m = NUMBER_OR_STRING.exec(text)) {
    const tok = m[0];
    if (tok.charCodeAt(0) !== 0x22 && String(Number(tok)) !== tok) return true;
  }
  return false;
}

/** `JSON.parse`, except numbers a JS number would alter stay `LosslessNumber`s. @throws SyntaxError */
export function parseJson(text: string): unknown {
  const fast = JSON.parse(text) as unknown;
  if (!hasInexactNumber(text)) return fast;
  return parse(text, null, {
    parseNumber: (tok) => (String(Number(tok)) === tok ? Number(tok) : new LosslessNumber(tok)),
    onDuplicateKey: ({ newValue }) => newValue,
  });
}

/** `JSON.stringify(value, null, indent)` printing each `LosslessNumber` as its exact text. */
export function showJson(value: unknown, indent?: number): string | undefined {
  return stringify(value, null, indent);
}
