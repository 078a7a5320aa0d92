/**
 * The two orderings of the ephemeral hand-over that real processes only pass through for a few
 * milliseconds (docs/ephemeral.md#multi-node, stopping), held open by a scripted peer:
 *
 * - a stopping node tells every peer it is leaving, and waits for their answers, before it ships a
 *   single ring, so no survivor places a ring with a view that still counts the stopping node;
 * - a node that passes a ring on to a peer that answers `503 leaving` learns from that answer,
 *   places the ring again without the peer (here: on itself) and never loses it; a relay that
 *   meets `503 leaving` re-routes the same way.
 *
 * Three real broker processes (A, B, C) share a fresh PostgreSQL database with the scripted peer
 * Z: a membership row in `queen.cluster_nodes` kept alive by the test's own PostgreSQL session and
 * heartbeat, and an HTTP server answering the node routes as a real node would, at the moments the
 * test chooses (a slow `_leaving` answer, then `503 leaving` as a stopping node answers). Z stands
 * in for a node only where a real one cannot be held in that state.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startBroker, type BrokerHandle } from '../../helpers/broker.js';
import { call, uniqueName } from '../../helpers/http.js';
import { waitFor } from '../../helpers/wait.js';
import { freshDatabase } from '../../storage/postgres-backend.js';
import { converged, nodeEnv, ownerAmong, partitionsOn } from './cluster.js';

const TOKEN = 'eph-races-test-token-0123456789abcdef';
const RELAY = { 'x-queen-eph-fwd': '1', 'x-queen-raft-token': TOKEN };

let db: Awaited<ReturnType<typeof freshDatabase>>;
const nodes = new Map<string, BrokerHandle>();
const env = (id: string): Record<string, string> => nodeEnv(db.url, id, TOKEN);

/** The first partition `p-<i>` of `queue` whose owner is `owner` in every placement of `placements`. */
function partitionWith(queue: string, placements: readonly (readonly [owner: string, among: readonly string[]])[]): string {
  for (let i = 0; ; i++) {
    const p = `p-${i}`;
    if (placements.every(([owner, among]) => ownerAmong(among, queue, p) === owner)) return p;
  }
}

/** What the scripted peer saw, in arrival order. */
interface PeerEvent { what: 'leaving' | 'leaving-answered' | 'adopt' | 'push' | 'pop'; queue?: string; messages?: number }

/** The scripted node Z (see the module comment). */
class ScriptedPeer {
  readonly events: PeerEvent[] = [];
  /** How long Z takes to answer `_leaving`, ms (a slow peer). */
  leavingDelayMs = 0;
  /** From true on, Z answers `_adopt`, `_ready` and relays `503 leaving`, as a stopping node does. */
  stopping = false;
  private server!: http.Server;
  private session!: pg.Client;
  private beat: NodeJS.Timeout | undefined;
  address = '';

  constructor(readonly serverId: string) {}

  async start(dbUrl: string): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => this.answer(req, body, res));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.address = `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.session = new pg.Client({ connectionString: dbUrl });
    await this.session.connect();
    // The row a node writes when it joins (src/storage/postgres/membership.ts), tied to this session.
    await this.session.query(`INSERT INTO queen.cluster_nodes (server_id, epoch, address, session_pid, session_started_at)
      VALUES ($1, 1, $2, pg_backend_pid(), (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()))`, [this.serverId, this.address]);
    this.beat = setInterval(() => void this.session.query('UPDATE queen.cluster_nodes SET heartbeat_at = now() WHERE server_id = $1', [this.serverId]).catch(() => undefined), 200);
  }

  async stop(): Promise<void> {
    clearInterval(this.beat);
    await this.session.query('UPDATE queen.cluster_nodes SET leaving = true WHERE server_id = $1', [this.serverId]).catch(() => undefined);
    await this.session.end().catch(() => undefined);
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  private answer(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    const send = (status: number, o: unknown): void => { res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(o)); };
    const leaving = (): void => send(503, { error: 'this node is stopping', code: 'leaving' });
    const url = new URL(req.url ?? '/', 'http://z');
    if (req.headers['x-queen-raft-token'] !== TOKEN) return send(403, { error: 'internal', code: 'internal_only' });
    switch (`${req.method} ${url.pathname}`) {
      case 'GET /api/v1/ephemeral/_ready':
        return this.stopping ? leaving() : send(200, { node: this.serverId, epoch: '1' });
      case 'POST /api/v1/ephemeral/_leaving':
        this.events.push({ what: 'leaving' });
        setTimeout(() => { this.events.push({ what: 'leaving-answered' }); send(200, { ok: true }); }, this.leavingDelayMs);
        return;
      case 'POST /api/v1/ephemeral/_adopt': {
        const rings = (JSON.parse(body) as { rings: { queue: string; messages: unknown[] }[] }).rings;
        for (const r of rings) this.events.push({ what: 'adopt', queue: r.queue, messages: r.messages.length });
        if (this.stopping) return leaving();
        return send(200, { adopted: rings.reduce((n, r) => n + r.messages.length, 0), refusedRings: 0 });
      }
      case 'POST /api/v1/ephemeral/push': {
        const b = JSON.parse(body) as { queue: string; messages: unknown[] };
        this.events.push({ what: 'push', queue: b.queue, messages: b.messages.length });
        return this.stopping ? leaving() : send(201, { pushed: b.messages.length });
      }
      case 'GET /api/v1/ephemeral/pop':
        this.events.push({ what: 'pop', queue: url.searchParams.get('queue') ?? '' });
        return this.stopping ? leaving() : send(200, { queue: url.searchParams.get('queue'), messages: [] });
      default:
        // The admin verbs fanned out to every node (the `converged` clean-up deletes its queues).
        if (req.method === 'DELETE' && url.pathname.startsWith('/api/v1/ephemeral/queue/')) return send(200, { deleted: false, declared: false });
        return send(404, { error: 'no such route', code: 'no_such_route' });
    }
  }
}

const z = new ScriptedPeer('node-z');

/** The scripted peer as an owner the set-up's relay probes reach. */
const zOwner = { serverId: z.serverId, receivedPush: (queue: string) => z.events.some((e) => e.what === 'push' && e.queue === queue) };

const ephLog = (n: BrokerHandle): string => n.output().split('\n').filter((l) => l.includes('ephemeral')).join('\n');

before(async () => {
  db = await freshDatabase();
  nodes.set('node-a', await startBroker({ env: env('node-a') })); // creates the schema Z's row goes into
  await z.start(db.url);
  for (const id of ['node-b', 'node-c']) nodes.set(id, await startBroker({ env: env(id) }));
  await converged(nodes, TOKEN, ['node-a', 'node-b', 'node-c', 'node-z'], ['node-a', 'node-b', 'node-c'], zOwner);
});

after(async () => {
  await Promise.all([...nodes.values()].map((n) => n.kill().catch(() => undefined)));
  await z.stop();
  await db.drop();
});

test('a stopping node has every peer\'s answer to _leaving before it ships a ring', async () => {
  const [a, c] = ['node-a', 'node-c'].map((id) => nodes.get(id)!);
  const queue = uniqueName('order');
  // C owns it now; without C, Z does.
  const partition = partitionWith(queue, [['node-c', ['node-a', 'node-b', 'node-c', 'node-z']], ['node-z', ['node-a', 'node-b', 'node-z']]]);
  assert.equal((await call(a!.url, 'POST', '/api/v1/ephemeral/push', { queue, partition, messages: Array.from({ length: 50 }, (_, i) => ({ payload: i })) })).status, 201);
  assert.equal((await partitionsOn(c!, queue)).get(partition), 50, 'C holds the ring');
  z.leavingDelayMs = 500;
  assert.equal(await c!.stop(), 0, 'C stopped cleanly');
  nodes.delete('node-c');
  const mine = z.events.filter((e) => e.what === 'leaving-answered' || (e.what === 'adopt' && e.queue === queue));
  assert.deepEqual(mine.map((e) => e.what), ['leaving-answered', 'adopt'], `Z answered _leaving before C shipped (Z saw ${JSON.stringify(z.events.filter((e) => e.what !== 'push'))})\nC:\n${ephLog(c!)}`);
  assert.equal(mine[1]!.messages, 50, 'the ring reached its owner Z whole');
});

test('a ring passed on to a peer that answers 503 leaving is placed again without it, never lost; a relay re-routes the same way', async () => {
  const [a, b] = ['node-a', 'node-b'].map((id) => nodes.get(id)!);
  await converged(nodes, TOKEN, ['node-a', 'node-b', 'node-z'], ['node-a', 'node-b'], zOwner);
  const queue = uniqueName('refused');
  // Z owns it while it counts; without Z, A does.
  const partition = partitionWith(queue, [['node-z', ['node-a', 'node-b', 'node-z']], ['node-a', ['node-a', 'node-b']]]);
  z.stopping = true;
  const messages = Array.from({ length: 20 }, (_, i) => ({ t: Date.now(), p: { i } }));
  // A ring arrives at A (as from a node that placed it with an older view); A passes it on to Z, which is stopping.
  const adopt = await call(a!.url, 'POST', '/api/v1/ephemeral/_adopt', { rings: [{ queue, partition, messages, groups: [] }] }, RELAY);
  assert.equal(adopt.status, 200, JSON.stringify(adopt.body));
  assert.equal(adopt.body.adopted, 20, 'every message placed');
  await waitFor(async () => (await partitionsOn(a!, queue)).get(partition) === 20,
    { what: 'A holding the ring Z refused', timeoutMs: 5_000, intervalMs: 50 }).catch((e: Error) => {
    throw new Error(`${e.message}\nZ saw ${JSON.stringify(z.events.filter((x) => x.queue === queue))}\nA:\n${ephLog(a!)}`);
  });
  assert.ok(z.events.some((e) => e.what === 'adopt' && e.queue === queue), 'A did offer it to Z first');
  // B still counts Z: its relay meets 503 leaving, and it re-routes to A.
  const pop = await call(b!.url, 'GET', `/api/v1/ephemeral/pop?queue=${queue}&partition=${partition}&batch=100`);
  assert.equal(pop.status, 200, JSON.stringify(pop.body));
  assert.deepEqual(pop.body.messages.map((m: { payload: unknown }) => m.payload), messages.map((m) => m.p), 'all 20 through B, in order');
});
