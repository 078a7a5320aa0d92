/**
 * Boot: config → data directory → store → broker → HTTP; signals; exit codes.
 * Exit 1 with `fatal: <message>` on any configuration or startup problem, before the listener
 * binds. SIGTERM/SIGINT: stop accepting, answer parked pops with 204, finish in-flight commits,
 * close the store, exit 0.
 */
import { Broker } from './broker/broker.js';
import { ConfigError, loadConfig } from './config/index.js';
import { initEncryption } from './crypto/boot.js';
import { AdminJobs } from './broker/jobs/admin-jobs.js';
import { Timers } from './broker/coordination/timers.js';
import { buildApp } from './http/app.js';
import { trackConnections } from './http/connections.js';
import { createLogger } from './observability/logger.js';
import { prepareDataDir } from './storage/datadir.js';
import { SqliteStore } from './storage/sqlite/store.js';
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
  const store = SqliteStore.open({
    dataDir: config.dataDir,
    sync: config.sync,
    walLimitBytes: config.walLimitBytes,
    onCommitFailure: (e) => log.error({ err: e }, 'commit failed'),
  });
  const snapshot = store.loadSnapshot();
  const codec = await initEncryption({ config: config.encryption, store, log, snapshot }).catch(async (e: unknown) => {
    await store.close();
    if (e instanceof ConfigError) fatal(e.message);
    throw e;
  });
  const broker = new Broker(store, config, codec, log, systemClock);
  broker.start(snapshot);
  AdminJobs.for(broker).start(snapshot.settings); // retention sweep, maintenance spool, metrics (docs/operations.md#boot)
  Timers.for(broker).start(); // fires scheduled messages, including those due while the broker was down
  const app = await buildApp(config, broker, log);
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
      const b = broker;
      b.stopAccepting();
      // Parked pops were just answered; keep closing connections as they turn idle (keep-alive)
      // so close() does not wait for the clients' keep-alive timers.
      const sweep = setInterval(() => connections.closeQuiet(), 25);
      await app.close();
      await AdminJobs.for(b).stop();
      await Timers.for(b).stop();
      clearInterval(sweep);
      await b.shutdown(config.shutdownGraceMs);
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
