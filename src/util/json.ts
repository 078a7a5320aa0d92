/**
 * Client JSON values kept exactly as sent. A client's numbers must come back digit for digit:
 * `12345678901234567890`, `9007199254740993`, `1e400`, `-0`, `1.0` and `1E-400` all lose their
 * text in a JS number. The reference broker keeps a payload's raw JSON text; so do we:
 *
 * - In: {@link parseClientJson} is `JSON.parse` plus a cheap scan of the text for number tokens
 *   (outside strings) whose text a JS number would not reproduce. Only such bodies take a second,
 *   lossless parse, where every such number becomes a {@link RawJson} holding its source text.
 * - Stored: {@link stringifyClientJson} writes a value back to text, each {@link RawJson} as its
 *   exact text.
 * - Out: a stored payload is never parsed again; it travels as a {@link RawJson} and
 *   {@link stringifyClientJson} (the HTTP reply serializer) splices its text into the answer.
 *
 * Leaf module: imported by the broker domain and by the HTTP layer, imports neither.
 */
import { randomBytes } from 'node:crypto';
import { parse as losslessParse } from 'lossless-json';

/**
 * A JSON value held as its exact source text (a whole stored payload, or one number of a request
 * body that a JS number would alter). The text must be valid JSON; it is never re-parsed on the
 * way out.
 */
export class RawJson {
  /** @param text valid JSON text, emitted verbatim by {@link stringifyClientJson} */
  constructor(readonly text: string) {}

  /**
   * Inside {@link stringifyClientJson}: a placeholder string later replaced by {@link text}.
   * Anywhere else (a logger, a plain `JSON.stringify`): the parsed value, which may be lossy;
   * no answer or stored value goes through that path.
   */
  toJSON(): unknown {
    if (active === undefined) return JSON.parse(this.text) as unknown;
    active.raws.push(this.text);
    return active.tag + (active.raws.length - 1);
  }
}

interface Frame {
  tag: string;
  raws: string[];
}

/** The serialization in progress (JSON.stringify is synchronous, so one at a time, nestable). */
let active: Frame | undefined;

const NUMBER_OR_STRING = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * True when `text` holds a number token outside strings whose text `String(Number(token))` does
 * not reproduce (`1.0`, `-0`, `1e2`, `9007199254740993`, `1e400` …). Conservative: invalid JSON
 * may answer either way (the parser decides validity).
 */
export function hasInexactNumber(text: string): boolean {
  NUMBER_OR_STRING.lastIndex = 0;
  for (let m = NUMBER_OR_STRING.exec(text); m !== null; m = NUMBER_OR_STRING.exec(text)) {
    const tok = m[0];
    if (tok.charCodeAt(0) === 0x22) continue; // a string
    if (String(Number(tok)) !== tok) return true;
  }
  return false;
}

function keepNumber(tok: string): unknown {
  return String(Number(tok)) === tok ? Number(tok) : new RawJson(tok);
}

/**
 * Parses a request body: the value `JSON.parse` gives, except that every number whose text a JS
 * number would alter is a {@link RawJson} of its text. Duplicate keys keep the last value and
 * `__proto__` is an ordinary own key, as with `JSON.parse`.
 * @throws SyntaxError (from `JSON.parse`, with its message) when `text` is not JSON
 */
export function parseClientJson(text: string): unknown {
  const fast = JSON.parse(text) as unknown;
  if (!hasInexactNumber(text)) return fast;
  return losslessParse(text, null, { parseNumber: keepNumber, onDuplicateKey: ({ newValue }) => newValue });
}

/** Where the placeholders of each serialization come from (tests inject a colliding one). */
export type TagSource = () => string;

const randomTag: TagSource = () => `rawjson${randomBytes(9).toString('hex')}_`;

/** Attempts with fresh tags before giving up (a collision needs a client guessing 72 random bits). */
const MAX_TAG_ATTEMPTS = 8;

/**
 * `JSON.stringify(value)` with every {@link RawJson} emitted as its exact text. With no RawJson in
 * `value` this is one native `JSON.stringify` and a length check. Otherwise each RawJson is
 * stringified as a per-call placeholder, which is then replaced by the raw text; a placeholder tag
 * that also occurs elsewhere in the output (a client string that happens to contain it) is
 * detected and the call retried with a fresh tag.
 * @returns the JSON text (`undefined` exactly when `JSON.stringify` returns it)
 * @throws Error when no collision-free tag is found (practically never), TypeError on cycles/BigInt
 */
export function stringifyClientJson(value: unknown, tags: TagSource = randomTag): string {
  if (value instanceof RawJson) return value.text;
  for (let attempt = 0; attempt < MAX_TAG_ATTEMPTS; attempt++) {
    const frame: Frame = { tag: tags(), raws: [] };
    const outer = active;
    active = frame;
    let out: string;
    try {
      out = JSON.stringify(value);
    } finally {
      active = outer;
    }
    if (frame.raws.length === 0) return out;
    if (out.split(frame.tag).length - 1 !== frame.raws.length) continue; // the tag collides: retry
    const placeholder = new RegExp(`"${frame.tag}(\\d+)"`, 'g');
    return out.replace(placeholder, (_m, i: string) => frame.raws[Number(i)]!);
  }
  throw new Error('stringifyClientJson: no collision-free placeholder tag found');
}

/**
 * The integer a control field carries (a count, a ttl, a version, a delta), read exactly:
 * a plain number is returned as is; a {@link RawJson} number (`1.0`, `1e2`) gives its value only
 * when its text denotes exactly a safe integer, else NaN, so range checks refuse it rather than
 * round it. Any other value is returned unchanged for the caller's type check.
 */
export function controlNumber(v: unknown): unknown {
  if (!(v instanceof RawJson)) return v;
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(v.text);
  if (!m) return NaN;
  const frac = m[3] ?? '';
  const exp = Number(m[4] ?? '0') - frac.length;
  const digits = (m[2]! + frac).replace(/^0+(?=\d)/, '');
  if (exp < 0 && !/^0+$/.test(digits.slice(exp))) return NaN; // a fraction
  const n = Number(v.text);
  return Number.isSafeInteger(n) ? n : NaN;
}
