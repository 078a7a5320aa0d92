/**
 * The node port (docs/cluster.md#the-node-port): a plain-HTTP listener on
 * `QUEEN_RAFT_LISTEN` for node-to-node calls. Every request's `x-queen-raft-token` is checked in an
 * `onRequest` hook, which sees the request head only: a refused request gets `401 bad raft token`
 * (text/plain, docs/cluster.md#the-node-token) and its connection is closed without
 * reading its body. Serves `GET /health` and `GET /cluster/v1/health` (`{serverId, epoch, leaving}`);
 * durable messages never cross this port (they are database rows).
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { ClusterConfig } from '../config/cluster.js';
import { isLoopback } from '../config/cluster.js';
import type { HostPort } from '../config/kafka.js';
import type { FrontDoor } from '../broker/services.js';
import type { Logger } from '../observability/logger.js';
import { ClosingResponse, clientErrorAnswer } from '../util/http-head.js';
import { RAFT_TOKEN_HEADER, raftTokenCheck } from './token.js';

/** Header bytes at most on the node port (Node's `maxHeaderSize`); a larger head gets 431. */
export const NODE_PORT_MAX_HEADER_BYTES = 16 * 1024;
/** Body bytes at most on the node port (the reference's control-RPC cap, 1 MiB); larger gets 413. */
export const NODE_PORT_MAX_BODY_BYTES = 1024 * 1024;

/** The boot warning when the token is unset and the listener is beyond loopback (docs/cluster.md#the-node-token). */
export const OPEN_NODE_PORT_WARNING = 'the raft RPC listener is reachable beyond loopback without QUEEN_RAFT_TOKEN: anyone who can reach it can vote, append and install snapshots';

const healthSchema = {
  response: {
    200: {
      type: 'object',
      required: ['serverId', 'epoch', 'leaving'],
      properties: { serverId: { type: 'string' }, epoch: { type: 'string' }, leaving: { type: 'boolean' } },
    },
  },
} as const;

/** The node port as a front door of the services (opened after the domain starts, closed before it stops). */
export class NodePort implements FrontDoor<number> {
  readonly name = 'cluster';
  /** This process start's epoch (random), as the health answer shows it. */
  readonly epoch = randomUUID();
  private leaving = false;
  private app: FastifyInstance | undefined;
  private bound = 0;

  constructor(private readonly config: ClusterConfig & { listen: HostPort }, private readonly log: Logger) {}

  /**
   * Binds `QUEEN_RAFT_LISTEN` and serves; logs the open-port warning when the token is unset and the
   * host is not loopback.
   * @returns the bound port (the kernel's pick for port 0)
   * @throws Error `cannot bind <host:port> (QUEEN_RAFT_LISTEN): …`
   */
  async start(): Promise<number> {
    const { host, port } = this.config.listen;
    if (this.config.token === undefined && !isLoopback(host)) this.log.warn({ listen: `${host}:${port}` }, OPEN_NODE_PORT_WARNING);
    const accepted = raftTokenCheck(this.config.token);
    const app = Fastify({
      logger: false,
      bodyLimit: NODE_PORT_MAX_BODY_BYTES,
      forceCloseConnections: true,
      // Malformed framing, oversized heads and timeouts are answered in the {"error","code"} shape.
      clientErrorHandler: clientErrorAnswer(),
      serverFactory: (handler) => http.createServer({
        // An answer written before the request's body arrived closes the connection with a lingering
        // close (src/util/http-head.ts): the client reads it instead of a reset, and the body is not kept.
        ServerResponse: ClosingResponse,
        maxHeaderSize: NODE_PORT_MAX_HEADER_BYTES, requireHostHeader: false, headersTimeout: 10_000, requestTimeout: 30_000,
        // Node checks the two timeouts at this period (its default, 30 s, let a head linger ~30 s).
        connectionsCheckingInterval: 1000,
      }, handler),
    });
    // The request head only: no body byte has been read when this runs.
    app.addHook('onRequest', (req, reply, done) => {
      if (!accepted(req.headers[RAFT_TOKEN_HEADER])) {
        void reply.code(401).header('connection', 'close').type('text/plain; charset=utf-8').send('bad raft token');
        return;
      }
      if (Number(req.headers['content-length'] ?? 0) > NODE_PORT_MAX_BODY_BYTES) {
        void reply.code(413).header('connection', 'close').send({ error: `request body over ${NODE_PORT_MAX_BODY_BYTES} bytes`, code: 'body_too_large' });
        return;
      }
      done();
    });
    const health = async () => ({ serverId: this.config.serverId, epoch: this.epoch, leaving: this.leaving });
    app.get('/health', { schema: healthSchema }, health);
    app.get('/cluster/v1/health', { schema: healthSchema }, health);
    app.setNotFoundHandler((_req, reply) => { void reply.code(404).send({ error: 'not found on the node port', code: 'not_found' }); });
    app.setErrorHandler((e: Error & { statusCode?: number; code?: string }, _req, reply) => {
      const status = e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : 500;
      void reply.code(status).send({ error: status === 500 ? 'internal error' : e.message, code: status === 413 ? 'body_too_large' : status === 500 ? 'internal' : 'bad_request' });
    });
    try {
      await app.listen({ host, port });
    } catch (e) {
      throw new Error(`cannot bind ${host.includes(':') ? `[${host}]` : host}:${port} (QUEEN_RAFT_LISTEN): ${(e as Error).message}`, { cause: e });
    }
    const a = app.server.address();
    this.bound = a !== null && typeof a === 'object' ? a.port : port;
    this.app = app;
    this.log.info({ port: this.bound, host, guarded: this.config.token !== undefined }, 'node port listening'); // `guarded`: a field named token is redacted in logs
    return this.bound;
  }

  /** Marks the node leaving (health shows it), closes the listener and its connections. */
  async stop(): Promise<void> {
    this.leaving = true;
    const app = this.app;
    this.app = undefined;
    if (app) await app.close();
  }

  /** `GET /status` block: the bound port and whether a token guards it. */
  status(): { listen: string; port: number; token: boolean } {
    return { listen: `${this.config.listen.host}:${this.config.listen.port}`, port: this.bound, token: this.config.token !== undefined };
  }
}
