/**
 * The token on the wire: extraction from `Authorization` and the protected-header decode that runs
 * before any key lookup.
 *
 * Source: docs/security.md#the-token.
 */
import { QueenError } from '../errors.js';
import { DECODABLE_ALGS } from '../model/jwt-algorithms.js';

/** Only visible ASCII (and tab) counts as a header value; anything else is treated as absent. */
const VISIBLE_ASCII = /^[\t\x20-\x7e]*$/;

/**
 * The bearer token from an `Authorization` header value: a `Bearer ` prefix is stripped
 * case-insensitively (the rest is not trimmed), and a bare token is accepted as is.
 * @returns undefined when the header is absent or not visible ASCII (→ `Authentication required`);
 *   a present but empty value yields `""` (→ `Bad token header`).
 */
export function extractToken(header: string | readonly string[] | undefined): string | undefined {
  const value = typeof header === 'string' || header === undefined ? header : header[0];
  if (typeof value !== 'string' || !VISIBLE_ASCII.test(value)) return undefined;
  if (value.length > 7 && value.slice(0, 7).toLowerCase() === 'bearer ') return value.slice(7);
  return value;
}

/** The fields of a protected header the broker reads. */
export interface TokenHeader {
  /** One of the twelve decodable names; not necessarily accepted. */
  readonly alg: string;
  /** The `kid`, `""` when absent. */
  readonly kid: string;
  /** The full decoded header object. */
  readonly raw: Readonly<Record<string, unknown>>;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Decodes strict unpadded base64url.
 * @returns undefined when `s` is not unpadded base64url.
 */
export function decodeB64url(s: string): Buffer | undefined {
  if (!B64URL.test(s) || s.length % 4 === 1) return undefined;
  return Buffer.from(s, 'base64url');
}

/**
 * Decodes a compact JWS's protected header.
 * @throws QueenError `bad_token_header` (401) when the token is not three `.`-separated segments,
 *   the header is not base64url JSON object, `alg` is missing, not a string or not one of the
 *   twelve decodable names (so `none` in any casing never gets further), or `kid` is present, not null and not a string.
 */
export function decodeHeader(token: string): TokenHeader {
  const parts = token.split('.');
  if (parts.length !== 3) throw new QueenError('bad_token_header');
  const bytes = decodeB64url(parts[0]!);
  if (bytes === undefined || bytes.length === 0) throw new QueenError('bad_token_header');
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new QueenError('bad_token_header');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new QueenError('bad_token_header');
  const h = parsed as Record<string, unknown>;
  const alg = Object.hasOwn(h, 'alg') ? h.alg : undefined;
  if (typeof alg !== 'string' || !DECODABLE_ALGS.has(alg)) throw new QueenError('bad_token_header');
  const kid = Object.hasOwn(h, 'kid') && h.kid !== null ? h.kid : undefined;
  if (kid !== undefined && typeof kid !== 'string') throw new QueenError('bad_token_header');
  return { alg, kid: kid ?? '', raw: h };
}
