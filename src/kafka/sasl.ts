/**
 * SASL/PLAIN (docs/kafka.md#sasl-plain, the rules of the reference's security section 7): the
 * message `authzid NUL username NUL password`, the password being the Queen bearer token, checked
 * in process against the same rules as HTTP. Messages never contain the password.
 */
import { isQueenError } from '../errors.js';
import { ErrorCode } from './errors.js';

/** The answer to a 401 from the credential check. */
export const SASL_401 = 'Queen refused this credential (HTTP 401): it is unknown, revoked or malformed. The password must be the bearer token an SDK would send, and it must be valid for this cluster';

/** Roles a credential holds; `all` when JWT is off (every level passes). */
export type HeldRoles = ReadonlySet<string> | 'all';

/** Checks a bearer token the way an HTTP request with it would be checked; resolves the subject and roles or throws the QueenError of the refusal. */
export type TokenCheck = (token: string) => Promise<{ sub: string | null; roles: HeldRoles }>;

/** The PLAIN message's parts, or a refusal message. */
export function parsePlain(bytes: Buffer): { username: string; password: string } | { error: string } {
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) return { error: 'SASL/PLAIN message is not valid UTF-8' };
  const parts = text.split('\u0000');
  if (parts.length !== 3) return { error: 'SASL/PLAIN message must be authzid NUL username NUL password (exactly two NULs)' };
  const [authzid, username, password] = parts as [string, string, string];
  if (username === '') return { error: 'SASL/PLAIN username is empty' };
  if (password === '') return { error: 'SASL/PLAIN password is empty: it must be a Queen bearer token' };
  if (authzid !== '' && authzid !== username) return { error: 'SASL/PLAIN authzid must be empty or equal to the username' };
  return { username, password };
}

/** Outcome of one authentication: admitted, refused with a SASL error, or closed without an answer. */
export type SaslOutcome = { kind: 'ok'; sub: string | null; roles: HeldRoles; token: string } | { kind: 'refused'; code: number; message: string } | { kind: 'close' };

/** Runs the PLAIN exchange for `authBytes`. */
export async function authenticatePlain(authBytes: Buffer, check: TokenCheck): Promise<SaslOutcome> {
  const parsed = parsePlain(authBytes);
  if ('error' in parsed) return { kind: 'refused', code: ErrorCode.SASL_AUTHENTICATION_FAILED, message: parsed.error };
  try {
    const id = await check(parsed.password);
    return { kind: 'ok', sub: id.sub, roles: id.roles, token: parsed.password };
  } catch (e) {
    if (isQueenError(e) && e.status === 401) return { kind: 'refused', code: ErrorCode.SASL_AUTHENTICATION_FAILED, message: SASL_401 };
    if (isQueenError(e) && e.status === 403) {
      return {
        kind: 'refused', code: ErrorCode.SASL_AUTHENTICATION_FAILED,
        message: `Queen accepted this credential but refused its scope (HTTP 403): the token needs read access (the read-only level) besides produce/consume. Queen said: ${e.message}`,
      };
    }
    return { kind: 'close' };
  }
}
