/** The caller's identity as the auth layer stamped it (empty when JWT is off). */
import type { FastifyRequest } from 'fastify';

/** The JWT `sub` of the caller, stamped as the message's `producerSub`; never read from a body. */
export function producerSubOf(request: FastifyRequest): string | null {
  const id = (request as unknown as { identity?: { sub?: unknown } }).identity;
  return typeof id?.sub === 'string' && id.sub !== '' ? id.sub : null;
}
