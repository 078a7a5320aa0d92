/**
 * Hands a data-plane request to the broker router in process (docs/proxy.md#forwarding; public
 * reference `proxy/src/gateway.rs`): no socket, the same request and response objects. Before
 * that it removes what a client must not be able to say to the broker (hop-by-hop headers,
 * `x-queen-tenant`, `x-queen-raft-token`, `x-queen-eph-fwd`, `x-queen-cp-token`, `Authorization`,
 * cookies), sets the cluster's tenant as `x-queen-tenant` and under {@link PROXY_TENANT}, and sets
 * `x-queen-request-id`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROXY_TENANT } from '../model/tenancy.js';

/** The broker router's entry point (Fastify's `routing` of the broker app, given by main.ts). */
export type BrokerRouter = (req: IncomingMessage, res: ServerResponse) => void;

/** Request headers the proxy never passes on. */
export const STRIPPED_HEADERS = [
  'x-queen-tenant', 'x-queen-raft-token', 'x-queen-eph-fwd', 'x-queen-cp-token', 'authorization', 'cookie',
  'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'upgrade', 'keep-alive',
] as const;

/** Strips and stamps `req` (see the module comment) so the broker router acts for `tenant`. */
export function prepareForBroker(req: IncomingMessage, tenant: string | undefined): void {
  for (const h of STRIPPED_HEADERS) delete req.headers[h];
  if (tenant !== undefined) {
    req.headers['x-queen-tenant'] = tenant;
    (req as unknown as Record<symbol, unknown>)[PROXY_TENANT] = tenant;
  }
  if (req.headers['x-queen-request-id'] === undefined) req.headers['x-queen-request-id'] = randomUUID();
}
