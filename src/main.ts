/**
 * Boot: config → data directory → store → services (src/broker/services.ts) → HTTP; signals; exit codes.
 * Exit 1 with `fatal: <message>` on any configuration or startup problem, before the listener
 * binds. SIGTERM/SIGINT: stop accepting, answer parked pops with 204, finish in-flight commits,
 * close the store, exit 0.
 */
import { ConfigError, loadConfig } from './config/index.js';
import { initEncryption, initEncryptionOn } from './crypto/boot.js';
import { Services } from './broker/services.js';
import { buildApp } from './http/app.js';
import { KafkaServer } from './kafka/server.js';
import { trackConnections } from './http/connections.js';
import { createLogger } from './observability/logger.js';
import { prepareDataDir } from './storage/datadir.js';
import { closeStore, openRuntime, openStore, type OpenedStore } from './storage/open.js';
import { systemClock } from './util/clock.js';

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
  const log = createLogger(config.logLevel, config.logFormat);
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
  const storage = await openRuntime(opened, config, codec, log, systemClock);
  // One start order (broker, KV sweep, admin jobs, timers) and its reverse at shutdown (docs/operations.md#boot).
  const services = new Services({ storage, config, codec, log, clock: systemClock });
  services.start();
  await services.loadEphemeral(); // declared ephemeral queues come back empty before the listener opens
  const app = await buildApp(config, services, log);
  const connections = trackConnections(app.server); // shutdown ends sockets with no request in flight
  const host = config.bindAddr;
  try {
    await app.listen({ port: config.port, host });
  } catch (e) {
    const h = host.includes(':') ? `[${host}]` : host;
    fatal(`cannot bind ${h}:${config.port}: ${(e as Error).message}`);
  }
  // The bound port, not the configured one: with PORT=0 the kernel picks it, and tools (the test
  // helpers among them) read it from this line.
  const bound = app.server.address();
  const port = bound !== null && typeof bound === 'object' ? bound.port : config.port;
  log.info({ port, host, dataDir: config.dataDir, sync: config.sync }, 'queen-ts listening');
  // The Kafka port (docs/kafka.md), off unless QUEEN_KAFKA_EMBEDDED=true; a bind failure is fatal.
  const kafka = config.kafka ? new KafkaServer(services, config.kafka, config.jwt, log) : undefined;
  if (kafka) await kafka.start().catch((e: unknown) => fatal((e as Error).message));

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
      services.stopAccepting();
      await kafka?.stop();
      // Parked pops were just answered; keep closing connections as they turn idle (keep-alive)
      // so close() does not wait for the clients' keep-alive timers.
      const sweep = setInterval(() => connections.closeQuiet(), 25);
      await app.close();
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
