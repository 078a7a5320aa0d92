/**
 * Import direction of src/ (checked by `npm run lint:layers`, part of `npm test`). Layers, top to
 * bottom; a module imports its own layer or lower ones, never higher:
 *
 *   src/main.ts                                   the process entry: holds V8 back (src/util/boot-memory.ts),
 *                                                 then imports src/boot.ts
 *   src/boot.ts                                   composition root (imports anything)
 *   src/http (later src/proxy, kafka, cluster)    front doors
 *   src/cli                                       queenctl: a client of the HTTP API (its wire types
 *                                                 from src/http/schemas, leaves); no broker, storage
 *   src/auth, src/broker                          domain, no HTTP; siblings, neither imports the other
 *     src/broker/broker.ts                        the facade; its rooms: messaging/ (push, pop, ack,
 *     src/broker/{messaging,coordination,         leases, transactions), coordination/ (KV, locks,
 *       admin,jobs}/                              timers), admin/ (views), jobs/ (background work);
 *                                                 messaging imports neither admin/ nor jobs/
 *   src/crypto, src/storage                       crypto may read storage types; storage knows no crypto
 *   src/config                                    typed settings, read by every layer
 *   src/model, src/util, src/observability,       leaves: shared model types, helpers, logs and
 *   src/errors.ts                                 metrics (observability never imports the broker)
 *
 * Type-only imports count too (tsPreCompilationDeps). Cycles are checked by madge (.madgerc).
 */
const FRONT_DOORS = '^src/(http|proxy|kafka|cluster)/';
const LEAVES = '^src/(model|util|observability)/|^src/errors[.]ts$';

module.exports = {
  forbidden: [
    {
      name: 'resolvable',
      comment: 'Every relative import resolves to a file, so that no rule below passes because a path was not understood (packages are left to tsc).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true, path: '^[.]' },
    },
    {
      name: 'src-stays-in-src',
      comment: 'Nothing in src/ imports main.ts, the tests, the benchmarks or the dashboard.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/main[.]ts$|^(test|bench|web)/' },
    },
    {
      name: 'boot-from-main-only',
      comment: 'The composition root is loaded by main.ts alone, after it has held V8 back for the boot.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/main[.]ts$' },
      to: { path: '^src/boot[.]ts$' },
    },
    {
      name: 'cli-is-a-client',
      comment: 'queenctl talks to a broker over HTTP only: it may read the wire types (src/http/schemas) and the leaves, never the broker, the store, auth, crypto, config or the server runtime.',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: '^src/cli/|^src/http/schemas/|^src/(model|util)/|^src/errors[.]ts$' },
    },
    {
      name: 'front-doors-apart',
      comment: 'A front door translates a protocol into broker calls; it does not reach into another front door.',
      severity: 'error',
      from: { path: '^src/(http|proxy|kafka|cluster)/' },
      to: { path: FRONT_DOORS, pathNot: '^src/$1/' },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'queenctl is a leaf application: no server code depends on it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'front-doors-not-to-storage',
      comment: 'Front doors (routes, the app, its hooks) call broker services; they never touch the store, not even its types.',
      severity: 'error',
      from: { path: FRONT_DOORS },
      to: { path: '^src/storage/' },
    },
    {
      name: 'front-doors-not-to-engine',
      comment: 'Front doors receive services (src/broker/services.ts); the engine, its in-memory indexes and the broker\'s wake-up plumbing are not theirs.',
      severity: 'error',
      from: { path: FRONT_DOORS },
      to: { path: '^src/storage/sqlite/(engine|state|leases|undo|engine-backend)[.]ts$|^src/broker/messaging/(waiters|positions|observer|pop-answer)[.]ts$' },
    },
    {
      name: 'domain-not-to-front-doors',
      comment: 'auth and broker know no HTTP (nor any other front door).',
      severity: 'error',
      from: { path: '^src/(auth|broker)/' },
      to: { path: FRONT_DOORS },
    },
    {
      name: 'auth-broker-apart',
      comment: 'auth and broker are siblings: types both need belong in src/model.',
      severity: 'error',
      from: { path: '^src/(auth|broker)/' },
      to: { path: '^src/(auth|broker)/', pathNot: '^src/$1/' },
    },
    {
      name: 'messaging-not-to-admin-or-jobs',
      comment: 'Push, pop, ack and transactions do not depend on admin views or background jobs (those observe messaging).',
      severity: 'error',
      from: { path: '^src/broker/messaging/' },
      to: { path: '^src/broker/(admin|jobs)/' },
    },
    {
      name: 'domain-on-the-contract',
      comment: 'The domain runs on the storage contract (src/storage/contract.ts, src/storage/runtime.ts, src/storage/log-read.ts), never on a backend: nothing under src/broker imports src/storage/sqlite/** or src/storage/postgres/**, not even a type; only the factory (src/storage/open.ts, called by main.ts) names them (docs/storage.md#operation-contract). Front doors are kept off all of src/storage by front-doors-not-to-storage.',
      severity: 'error',
      from: { path: '^src/broker/' },
      to: { path: '^src/storage/(sqlite|postgres)/' },
    },
    {
      name: 'storage-crypto-below-domain',
      comment: 'storage and crypto serve the domain; they never import it or a front door.',
      severity: 'error',
      from: { path: '^src/(storage|crypto)/' },
      to: { path: `${FRONT_DOORS}|^src/(auth|broker)/` },
    },
    {
      name: 'storage-not-to-crypto',
      comment: 'The store persists payload bytes as given; encryption happens above it.',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/crypto/' },
    },
    {
      name: 'config-reads-leaves-only',
      comment: 'Every layer reads the typed configuration, so config imports only leaves.',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: `^src/config/|${LEAVES}` },
    },
    {
      name: 'observability-is-a-leaf',
      comment: 'Logs and metrics are usable by every layer; they state the shapes they read instead of importing them.',
      severity: 'error',
      from: { path: '^src/observability/' },
      to: { path: '^src/', pathNot: '^src/(observability|model|util)/|^src/errors[.]ts$' },
    },
    {
      name: 'model-util-are-leaves',
      comment: 'Shared model types and helpers import only each other and the error registry.',
      severity: 'error',
      from: { path: '^src/(model|util)/|^src/errors[.]ts$' },
      to: { path: '^src/', pathNot: '^src/(model|util)/|^src/errors[.]ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.js'],
    },
  },
};
