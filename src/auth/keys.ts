/**
 * Verification-key selection, per token, from the token's own `alg` (docs/security.md#verification-keys):
 *
 *
 * | token alg     | key                                                     | failure                          |
 * | HS256/384/512 | JWT_SECRET, raw UTF-8 bytes                              | empty → 500 HS secret not configured |
 * | RS256/384/512 | JWT_PUBLIC_KEY as RSA PEM; only if empty, JWKS by kid    | 500 invalid RSA public key PEM / 401 Unknown key ID |
 * | EdDSA         | JWT_PUBLIC_KEY as Ed25519 PEM; only if empty, JWKS by kid | 500 invalid Ed public key PEM / 401 Unknown key ID |
 *
 * A set PEM always wins over JWKS, with no fallback from a bad PEM. The HS key is never derived from
 * the public key (algorithm confusion is impossible by construction). Key material is parsed once
 * at boot; per request only the cached result (or the cached parse failure) is used.
 *
 * Source: docs/security.md#verification-keys.
 */
import { createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { JwtConfig } from '../config/jwt.js';
import { QueenError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { familyOf, type TokenAlg } from '../model/jwt-algorithms.js';
import type { JwksCache } from './jwks.js';

/** Anything `jose.compactVerify` accepts as a verification key. */
export type VerifyKey = CryptoKey | KeyObject | JWK;

const HMAC_HASH: Partial<Record<TokenAlg, string>> = { HS256: 'SHA-256', HS384: 'SHA-384', HS512: 'SHA-512' };

/** The PEM as parsed at boot: a key of the right family, or a marker that it is set but unusable. */
type PemSlot = KeyObject | 'invalid' | undefined;

/** The broker's key material, built once at boot by {@link loadKeyMaterial}. */
export interface KeyMaterial {
  /** HMAC keys per HS alg; undefined when `JWT_SECRET` is empty. */
  readonly hs: ReadonlyMap<TokenAlg, CryptoKey> | undefined;
  /** `JWT_PUBLIC_KEY` as RSA; undefined when the variable is empty. */
  readonly rsa: PemSlot;
  /** `JWT_PUBLIC_KEY` as Ed25519; undefined when the variable is empty. */
  readonly ed: PemSlot;
  /** The JWKS cache, when `JWT_JWKS_URL` is in use. */
  readonly jwks: JwksCache | undefined;
}

/**
 * Parses a PEM public key (SPKI `PUBLIC KEY`, PKCS#1 `RSA PUBLIC KEY`, or an X.509 certificate).
 * A value without real newlines but with literal `\n` sequences is unescaped first.
 * @returns undefined when unparseable.
 */
export function parsePublicPem(pem: string): KeyObject | undefined {
  const text = !pem.includes('\n') && pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem;
  try {
    const k = createPublicKey(text);
    return k.type === 'public' ? k : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Builds the key material from the configuration: imports the HMAC keys, parses `JWT_PUBLIC_KEY`
 * (a parse failure is logged as a warning without the PEM and answered 500 per request; boot goes on).
 */
export async function loadKeyMaterial(cfg: JwtConfig, jwks: JwksCache | undefined, log: Logger): Promise<KeyMaterial> {
  let hs: Map<TokenAlg, CryptoKey> | undefined;
  if (cfg.secret !== '') {
    hs = new Map();
    const bytes = Buffer.from(cfg.secret, 'utf8');
    for (const [alg, hash] of Object.entries(HMAC_HASH) as [TokenAlg, string][]) {
      hs.set(alg, await webcrypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash }, false, ['verify']));
    }
  }
  let rsa: PemSlot;
  let ed: PemSlot;
  if (cfg.publicKey !== '') {
    const key = parsePublicPem(cfg.publicKey);
    rsa = key?.asymmetricKeyType === 'rsa' ? key : 'invalid';
    ed = key?.asymmetricKeyType === 'ed25519' ? key : 'invalid';
    if (key === undefined) {
      log.warn('JWT_PUBLIC_KEY is not a parseable RSA or Ed25519 public key PEM: RS*/EdDSA tokens will be answered 500');
    } else if (rsa === 'invalid' && ed === 'invalid') {
      log.warn({ keyType: key.asymmetricKeyType }, 'JWT_PUBLIC_KEY is neither an RSA nor an Ed25519 key: RS*/EdDSA tokens will be answered 500');
    }
  }
  return { hs, rsa, ed, jwks };
}

/**
 * The verification key for a token.
 * @param alg the token's `alg`, already in the accepted set
 * @param kid the token's `kid` (`""` when absent)
 * @throws QueenError `hs_secret_not_configured` (500), `invalid_rsa_pem` (500), `invalid_ed_pem` (500),
 *   or `unknown_key_id` (401) after the JWKS cache's one throttled re-fetch.
 */
export async function selectKey(km: KeyMaterial, alg: TokenAlg, kid: string): Promise<VerifyKey> {
  const family = familyOf(alg);
  if (family === 'hs') {
    const key = km.hs?.get(alg);
    if (key === undefined) throw new QueenError('hs_secret_not_configured');
    return key;
  }
  const pem = family === 'rsa' ? km.rsa : km.ed;
  if (pem === 'invalid') throw new QueenError(family === 'rsa' ? 'invalid_rsa_pem' : 'invalid_ed_pem');
  if (pem !== undefined) return pem;
  const hit = km.jwks === undefined ? undefined : await km.jwks.lookup(kid);
  if (hit === undefined) throw new QueenError('unknown_key_id');
  return hit.jwk as JWK;
}
