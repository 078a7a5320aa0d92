/**
 * The accepted-algorithm table of docs/security.md#algorithms, as data.
 * `JWT_ALGORITHM` does not name the algorithm the broker uses: it names the set of `alg` values a
 * token may declare; the key is then chosen from the token's own `alg` (see `keys.ts`).
 *
 * Source: docs/security.md#algorithms.
 */

/** A token `alg` the broker can verify. */
export type TokenAlg = 'HS256' | 'HS384' | 'HS512' | 'RS256' | 'RS384' | 'RS512' | 'EdDSA';

/** A valid `JWT_ALGORITHM` setting (case-sensitive). */
export type AlgorithmSetting = TokenAlg | 'auto';

/** docs/security.md#algorithms: `JWT_ALGORITHM` → the token `alg` values accepted. One row per line of that table. */
export const ACCEPTED_ALGS: Readonly<Record<AlgorithmSetting, readonly TokenAlg[]>> = {
  auto: ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'EdDSA'],
  HS256: ['HS256'],
  HS384: ['HS384'],
  HS512: ['HS512'],
  RS256: ['RS256', 'RS384', 'RS512'],
  RS384: ['RS384'],
  RS512: ['RS512'],
  EdDSA: ['EdDSA'],
};

/** Every valid `JWT_ALGORITHM` value, in the order the boot error names them. */
export const ALGORITHM_SETTINGS: readonly AlgorithmSetting[] = [
  'HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'EdDSA', 'auto',
];

/**
 * The `alg` names a token header may carry and still be *decodable* (docs/security.md#algorithms): the
 * reference's closed enum. Anything else (`none` in any casing, `hs256`, `ES512`) is
 * `Bad token header`; names here but outside the configured set are `Unsupported token algorithm`.
 */
export const DECODABLE_ALGS: ReadonlySet<string> = new Set([
  'HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA',
]);

/** The key family a token `alg` is verified with. */
export type KeyFamily = 'hs' | 'rsa' | 'ed';

/** Key family of a verifiable `alg` (docs/security.md#verification-keys). */
export function familyOf(alg: TokenAlg): KeyFamily {
  if (alg === 'EdDSA') return 'ed';
  return alg.startsWith('HS') ? 'hs' : 'rsa';
}

/** True when `s` is a valid `JWT_ALGORITHM` setting (exact, case-sensitive). */
export function isAlgorithmSetting(s: string): s is AlgorithmSetting {
  return Object.prototype.hasOwnProperty.call(ACCEPTED_ALGS, s);
}
