/**
 * The Kafka listener (docs/kafka.md): a TCP (or TLS) server in the broker process that presents
 * itself as a one-broker Kafka cluster and calls the broker services directly. A front door of
 * the services (src/broker/services.ts): opened after the domain has started, closed (every
 * connection answered and ended) before the domain stops and the store closes.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { levelRoleSets, passes, type AccessLevel } from '../auth/access-levels.js';
import { jwksInUse } from '../auth/index.js';
import { JwksCache } from '../auth/jwks.js';
import { loadKeyMaterial } from '../auth/keys.js';
import { createAuthenticator } from '../auth/verifier.js';
import type { Services } from '../broker/services.js';
import type { JwtConfig } from '../config/jwt.js';
import type { KafkaConfig } from '../config/kafka.js';
import { KafkaConnection } from './connection.js';
import type { KafkaContext } from './context.js';
import { GroupCoordinator } from './groups/coordinator.js';
import { KafkaMetrics } from './metrics.js';
import { ProducerWindows } from './producers.js';
import { RequestBytes } from './request-bytes.js';
import type { HeldRoles, TokenCheck } from './sasl.js';
import { Topics } from './topics.js';
import { FetchWakeups } from './wakeups.js';

/** Boot warning: SASL/PLAIN on a cleartext socket (docs/kafka.md#sasl-plain). */
export const SASL_CLEARTEXT_WARNING = 'QUEEN_KAFKA_SASL=plain without TLS: Kafka passwords (Queen tokens) cross the network in clear; keep the port private or set QUEEN_KAFKA_TLS_CERT/QUEEN_KAFKA_TLS_KEY';
/** Boot warning: JWT on, no SASL and no process token: every produce and fetch would be refused. */
export const NO_CREDENTIAL_WARNING = 'JWT_ENABLED=true with the Kafka port on but neither QUEEN_TOKEN nor QUEEN_KAFKA_SASL set: Kafka clients have no credential';

/** How long shutdown waits for a connection's request in hand and its peer's close, ms. */
const SHUTDOWN_GRACE_MS = 5000;

export class KafkaServer {
  readonly name = 'kafka';
  private server: net.Server | undefined;
  private readonly open = new Set<KafkaConnection>();
  private readonly ctx: KafkaContext;
  private readonly metrics: KafkaMetrics;
  private jwks: JwksCache | undefined;
  private boundPort: number | undefined;

  constructor(private readonly services: Services, private readonly config: KafkaConfig, private readonly jwt: JwtConfig, private readonly log: Logger) {
    this.ctx = {
      services, config, log,
      topics: new Topics(services, config),
      groups: new GroupCoordinator({ joinDelayMs: config.groupJoinDelayMs, minSessionMs: config.minSessionTimeoutMs, maxSessionMs: config.maxSessionTimeoutMs }),
      producers: new ProducerWindows(),
      wakeups: new FetchWakeups(services.logs),
      requestBytes: new RequestBytes(config.queuedMaxRequestBytes),
    };
    this.metrics = new KafkaMetrics(services.jobs.metrics.registry, () => this.open.size, () => this.ctx.wakeups.parked);
  }

  /** Open connections. */
  get connections(): number {
    return this.open.size;
  }

  /**
   * The `kafka` block of `GET /status` (docs/kafka.md#configuration): mode, the bound and
   * advertised `host:port`, open connections.
   */
  status(): { mode: 'in-process'; listen: string; advertised: string; connections: number } {
    const c = this.config;
    const host = (h: string) => (h.includes(':') ? `[${h}]` : h);
    return { mode: 'in-process', listen: `${host(c.listen.host)}:${this.boundPort ?? c.listen.port}`, advertised: `${host(c.advertised.host)}:${c.advertised.port}`, connections: this.open.size };
  }

  /** The credential check (JWT verifier), or a check that admits every token when JWT is off. */
  private async tokenCheck(): Promise<TokenCheck> {
    if (!this.jwt.enabled) return () => Promise.resolve({ sub: null, roles: 'all' });
    const cfg = this.jwt;
    if (jwksInUse(cfg)) {
      this.jwks = new JwksCache({ url: cfg.jwksUrl, timeoutMs: cfg.jwksTimeoutMs, refreshIntervalSec: cfg.jwksRefreshIntervalSec, log: this.log, now: () => this.services.clock.now() });
      await this.jwks.prefetch();
      this.jwks.start();
    }
    const auth = createAuthenticator(this.jwt, await loadKeyMaterial(this.jwt, this.jwks, this.log), this.services.clock);
    return async (token) => {
      const id = await auth.authenticate('GET', '/api/v1/resources/queues', `Bearer ${token}`);
      return { sub: id.sub ?? null, roles: id.roles };
    };
  }

  /**
   * Roles of connections without SASL: everything with JWT off; with JWT on, those of `QUEEN_TOKEN`
   * (checked once at boot, a refused token logged and treated as none), else none.
   */
  private async processRoles(check: TokenCheck): Promise<HeldRoles> {
    if (!this.jwt.enabled) return 'all';
    if (this.config.processToken === undefined) return new Set();
    try {
      return (await check(this.config.processToken)).roles;
    } catch (e) {
      this.log.warn({ target: 'boot', err: (e as Error).message }, 'QUEEN_TOKEN was refused by the JWT settings; Kafka connections without SASL have no access');
      return new Set();
    }
  }

  /**
   * Binds and serves.
   * @returns the bound port (the configured one, or the kernel's pick for port 0)
   * @throws Error `cannot bind QUEEN_KAFKA_ADDR=<addr>: <os error>`
   */
  async start(): Promise<number> {
    const c = this.config;
    await this.ctx.topics.load(); // moves topic records of earlier builds into kafka_topics
    const check = await this.tokenCheck();
    const processRoles = this.config.sasl ? new Set<string>() : await this.processRoles(check);
    const sets = levelRoleSets(this.jwt.roles);
    const levels = (roles: HeldRoles, level: AccessLevel) => roles === 'all' || passes(level, roles, sets);
    this.log.info({
      target: 'boot', listen: `${c.listen.host}:${c.listen.port}`, advertised: `${c.advertised.host}:${c.advertised.port}`,
      default_partitions: c.defaultPartitions, group_join_delay_ms: c.groupJoinDelayMs, tls: c.tls !== undefined,
      sasl: c.sasl ? 'plain' : 'none', node_id: 0, cluster: null, authenticated: c.processToken !== undefined,
    }, 'queen-kafka starting');
    if (c.sasl && !c.tls) this.log.warn({ target: 'boot' }, SASL_CLEARTEXT_WARNING);
    if (this.jwt.enabled && !c.sasl && c.processToken === undefined) this.log.warn({ target: 'boot' }, NO_CREDENTIAL_WARNING);
    const onSocket = (socket: net.Socket) => {
      if (this.open.size >= c.maxConnections) {
        socket.destroy();
        return;
      }
      const conn = new KafkaConnection(socket, this.ctx, this.metrics, this.config.sasl ? check : undefined, levels, processRoles);
      this.open.add(conn);
      socket.on('close', () => this.open.delete(conn));
    };
    const server = c.tls ? tls.createServer({ cert: c.tls.cert, key: c.tls.key }, onSocket) : net.createServer(onSocket);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: Error) => reject(new Error(`cannot bind QUEEN_KAFKA_ADDR=${c.listen.host}:${c.listen.port}: ${e.message}`)));
      server.listen(c.listen.port, c.listen.host, () => resolve());
    });
    const addr = server.address();
    const port = addr !== null && typeof addr === 'object' ? addr.port : c.listen.port;
    this.boundPort = port;
    this.log.info({ target: 'boot', port, host: c.listen.host }, 'queen-kafka listening');
    return port;
  }

  /**
   * Stops accepting, answers parked fetches (empty), lets each connection's request in hand finish
   * and ends every connection (FIN); logs `queen-kafka stopped` with the count closed.
   */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    const closing = s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();
    this.ctx.wakeups.wakeAll();
    this.ctx.groups.stop();
    const conns = [...this.open];
    await Promise.all(conns.map((c) => c.shutdown(SHUTDOWN_GRACE_MS)));
    this.open.clear();
    this.jwks?.stop();
    await closing;
    this.log.info({ target: 'shutdown', connections: conns.length }, 'queen-kafka stopped');
  }
}
