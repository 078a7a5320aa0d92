/**
 * The composition root, loaded by src/main.ts once it has held V8 back (src/util/boot-memory.ts).
 * Boot: config → data directory → store → services (src/broker/services.ts) → HTTP; signals; exit codes.
 * Exit 1 with `fatal: <message>` on any configuration or startup problem, before the listener
 * binds. SIGTERM/SIGINT: stop accepting, answer parked pops with 204, finish in-flight commits,
 * close the store, exit 0.
 */
import { hostname } from 'node:os';
import { ConfigError, loadConfig } from './config/index.js';
import { initEncryption, initEncryptionOn } from './crypto/boot.js';
import { Services } from './broker/services.js';
import { buildApp } from './http/app.js';
import type { FastifyInstance } from 'fastify';
import { trackConnections } from './http/connections.js';
import { createLogger } from './observability/logger.js';
import { prepareDataDir } from './storage/datadir.js';
import { closeStore, openRuntime, openStore, type OpenedStore } from './storage/open.js';
import type { ProxyStore } from './storage/proxy.js';
import { systemClock } from './util/clock.js';
import { OffsetClock } from './util/offset-clock.js';
import { releaseBootMemory } from './util/boot-memory.js';

function fatal(message: string): never {
  process.stderr.write(`fatal: ${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  process.umask(0o077); // every file the broker creates is 0600, every directory 0700
  let config;
  try {
    config = loadConfig(process.env);
    for (const w of prepareDataDir(config.dataDir).warnings) process.stderr.write(`warning: ${w}\n`);
  } catch (e) {
    if (e instanceof ConfigError) fatal(e.message);
    throw e;
  }
  const log = createLogger(config.logLevel, config.logFormat, { bufferBytes: config.logBufferBytes });
  const opened: OpenedStore = await openStore(config, log).catch((e: unknown) => fatal((e as Error).message));
  const codec = await (opened.kind === 'sqlite'
    ? initEncryption({ config: config.encryption, store: opened.store, log, snapshot: opened.snapshot })
    : initEncryptionOn({
      config: config.encryption, log,
      store: { settings: () => opened.backend.views.settings(), payloadHeads: (n) => opened.backend.views.payloadHeads(n), setSetting: (k, v) => opened.backend.admin.setSetting(k, v) },
    })
  ).catch(async (e: unknown) => {
    await closeStore(opened);
    if (e instanceof ConfigError) fatal(e.message);
    throw e;
  });
  // On PostgreSQL this joins the membership table: a live node with the same QUEEN_SERVER_ID is fatal here, before any listener.
  // On PostgreSQL the broker runs on the database's clock (docs/storage.md#time), measured each heartbeat.
  const clock = opened.kind === 'postgres' ? new OffsetClock() : systemClock;
  const storage = await openRuntime(opened, config, codec, log, clock).catch(async (e: unknown) => {
    await closeStore(opened).catch(() => undefined);
    fatal((e as Error).message);
  });
  // One start order (broker, KV sweep, admin jobs, timers) and its reverse at shutdown (docs/operations.md#boot).
  const services = new Services({ storage, config, codec, log, clock });
  services.start();
  await services.loadEphemeral(); // declared ephemeral queues come back empty before the listener opens
  const app = await buildApp(config, services, log);
  const host = config.bindAddr;
  const h = host.includes(':') ? `[${host}]` : host;
  // The embedded proxy (docs/proxy.md#layouts): it fronts PORT, or serves QUEEN_PROXY_PORT while
  // the broker router serves PORT; either way it reaches the broker router in process.
  // The optional front doors (proxy, Kafka port, node port) are loaded only when configured: a
  // broker without them boots without their modules (OAuth, bcrypt, Kafka codecs).
  // Loaded before the listening line, so that they open in the same turn as before it.
  const [kafkaPort, nodePort] = await Promise.all([
    config.kafka ? import('./kafka/server.js') : undefined,
    config.cluster.listen ? import('./cluster/server.js') : undefined,
  ]);
  let proxyStore: ProxyStore | undefined;
  let proxy: FastifyInstance | undefined;
  if (config.proxy) {
    const [{ buildProxy }, { ProxyState }, { SqliteProxyStore }, { PgProxyStore }, { KeyRing }] = await Promise.all([
      import('./proxy/server.js'), import('./auth/proxy/state.js'), import('./storage/sqlite/proxy.js'), import('./storage/postgres/proxy.js'), import('./crypto/keyring.js'),
    ]);
    // On PostgreSQL the proxy's state is in the database every node shares (docs/proxy.md#state-on-postgresql).
    const store: ProxyStore = opened.kind === 'postgres'
      ? await PgProxyStore.open(opened.backend.db, log).catch((e: unknown) => fatal(`cannot load the proxy state from PostgreSQL: ${(e as Error).message}`))
      : SqliteProxyStore.open(config.dataDir);
    proxyStore = store;
    const state = new ProxyState(store, systemClock, config.proxy.keyEnv);
    const b = config.proxy.bootstrap;
    if (b) {
      const proxyConfig = config.proxy;
      const bootstrap = async () => {
        const r = state.bootstrap({ tenant: b.slug, plan: b.plan, email: b.email, api_key: b.apiKey }, false);
        const canLogin = proxyConfig.bootstrapPassword !== undefined ? await state.setBootstrapPassword(r.user_id, proxyConfig.bootstrapPassword) : r.can_login;
        await store.settled?.();
        return { r, canLogin };
      };
      // Two nodes of one database booting together may both create the bootstrap tenant: the one
      // whose write PostgreSQL refused loads the other's and runs the (idempotent) bootstrap again.
      const { r, canLogin } = await bootstrap().catch(async (e: unknown) => {
        if (!store.refresh) throw e;
        await store.refresh();
        return bootstrap();
      });
      log.info({ tenant: b.slug, tenantId: r.tenant_id, clusterId: r.cluster_id, keyRegistered: r.api_key !== null, canLogin }, 'proxy bootstrap tenant ready');
    }
    await store.settled?.(); // the built-in plans
    if (config.proxy.sessions.defaultRoleInvalid) log.warn('QUEEN_PROXY_DEFAULT_ROLE is not one of admin, producer, consumer, viewer: using viewer');
    if (!config.proxy.sessions.signer) log.warn('neither QUEEN_PROXY_JWT_ED25519_PEM nor QUEEN_PROXY_JWT_SECRET is set: people cannot sign in on the proxy (API keys work)');
    await app.ready();
    proxy = (await buildProxy({
      config: config.proxy, state, log, clock: systemClock, maxHeaderBytes: config.limits.maxHeaderBytes, raftToken: config.tenancy.raftToken,
      keyRing: KeyRing.fromConfig(config.encryption),
      router: (req, res) => app.routing(req, res), usage: services.usage,
      brokerMetrics: async () => (await app.inject({ method: 'GET', url: '/metrics/prometheus' })).body,
    })).app;
  }
  const fronted = proxy !== undefined && config.proxy?.port === undefined;
  const publicApp = fronted ? proxy! : app;
  const connections = trackConnections(publicApp.server); // shutdown ends sockets with no request in flight
  try {
    await publicApp.listen({ port: config.port, host });
  } catch (e) {
    fatal(`cannot bind ${h}:${config.port}: ${(e as Error).message}`);
  }
  // The bound port, not the configured one: with PORT=0 the kernel picks it, and tools (the test
  // helpers among them) read it from this line.
  const bound = publicApp.server.address();
  const port = bound !== null && typeof bound === 'object' ? bound.port : config.port;
  const proxyConnections = proxy && !fronted ? trackConnections(proxy.server) : undefined;
  if (proxy && config.proxy) {
    let proxyPort = port;
    if (!fronted) {
      try {
        await proxy.listen({ port: config.proxy.port!, host });
      } catch (e) {
        fatal(`cannot bind ${h}:${config.proxy.port} (QUEEN_PROXY_PORT): ${(e as Error).message}`);
      }
      const pb = proxy.server.address();
      proxyPort = pb !== null && typeof pb === 'object' ? pb.port : config.proxy.port!;
    }
    log.info(fronted ? 'single binary: proxy in-process on the public port' : 'single binary: proxy in-process on its own port; the broker router serves PORT (internal)');
    log.info({ port: proxyPort, tls: config.proxy.tls !== undefined }, 'public listener (hardened)');
  }
  storage.cluster?.announce(`${host === '0.0.0.0' || host === '::' ? hostname() : h}:${port}`);
  log.info({ port, host, dataDir: config.dataDir, sync: config.sync }, 'queen-ts listening');
  releaseBootMemory(); // V8's young generation and compilers back to their defaults (held by src/main.ts)
  // The Kafka port (docs/kafka.md), off unless QUEEN_KAFKA_EMBEDDED=true; a bind failure is fatal.
  // A front door of the services: closed before the domain stops and the store closes.
  if (config.kafka && kafkaPort) await services.openFrontDoor(new kafkaPort.KafkaServer(services, config.kafka, config.jwt, log)).catch((e: unknown) => fatal((e as Error).message));
  // The node port (docs/cluster.md#the-node-port), off unless QUEEN_RAFT_LISTEN is set; a bind failure is fatal.
  const cluster = config.cluster;
  if (cluster.ignored.length > 0) log.warn({ variables: cluster.ignored }, `Raft-only variables are ignored (Queen-TS nodes share one PostgreSQL, docs/cluster.md): ${cluster.ignored.join(', ')}`);
  if (cluster.listen && nodePort) await services.openFrontDoor(new nodePort.NodePort({ ...cluster, listen: cluster.listen }, log)).catch((e: unknown) => fatal((e as Error).message));

  // A log line must never stop the shutdown (e.g. stdout became a closed pipe).
  const say = (fn: () => void) => { try { fn(); } catch { /* logging is best effort here */ } };
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const timer = setTimeout(() => {
      say(() => log.error('shutdown grace period passed; exiting'));
      process.exit(1);
    }, config.shutdownGraceMs + 2000);
    timer.unref();
    let code = 0;
    try {
      say(() => log.info({ signal }, 'shutting down'));
      // Ephemeral partitions held here move to the other nodes first (bounded 15 s, docs/ephemeral.md#multi-node).
      await services.ephemeralNodes?.drain(15_000);
      services.stopAccepting();
      await services.closeFrontDoors(); // the Kafka port (parked fetches answered, connections ended), the node port

      // Parked pops were just answered; keep closing connections as they turn idle (keep-alive)
      // so close() does not wait for the clients' keep-alive timers.
      const sweep = setInterval(() => { connections.closeQuiet(); proxyConnections?.closeQuiet(); }, 25);
      if (proxy) await proxy.close();
      await app.close();
      await proxyStore?.settled?.().catch((e: unknown) => log.error({ err: e }, 'proxy state: a queued write did not reach PostgreSQL before shutdown')); // queued proxy-state writes reach PostgreSQL before its pool closes
      proxyStore?.close();
      clearInterval(sweep);
      await services.stop(config.shutdownGraceMs); // timers, admin jobs, KV sweep, then the broker and its store
      say(() => log.info('stopped'));
    } catch (e) {
      code = 1;
      process.stderr.write(`shutdown failed: ${(e as Error)?.message ?? String(e)}\n`);
    } finally {
      process.exit(code);
    }
  };
  // Writing logs to a pipe whose reader went away must not crash or wedge the broker.
  process.stdout.on('error', () => undefined);
  process.stderr.on('error', () => undefined);
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((e: unknown) => fatal((e as Error)?.stack ?? String(e)));
