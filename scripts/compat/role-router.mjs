/**
 * Role router for running the official JS client's test-v2 suite against two Queen-TS nodes
 * (docs/compat.md#two-nodes): producer requests (POST /api/v1/push, POST /api/v1/transaction) go
 * to node A, every other request (pop, ack, lease, configure, admin, streams) goes to node B. The
 * suite points at the router as if it were one broker. Request counts per node and route are
 * printed on SIGUSR2 and on SIGTERM, so the split can be checked.
 *
 * Usage: node scripts/compat/role-router.mjs <listen port> <url A> <url B>
 */
import http from 'node:http';
const [listenPort, producerUrl, consumerUrl] = process.argv.slice(2);
const A = new URL(producerUrl), B = new URL(consumerUrl);
const counts = new Map();
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
function target(req) {
  const p = (req.url || '').split('?')[0];
  if (req.method === 'POST' && (p === '/api/v1/push' || p === '/api/v1/transaction')) return A;
  return B;
}
function key(req, t) {
  const p = (req.url || '').split('?')[0].split('/').slice(0, 4).join('/');
  return `${t === A ? 'A' : 'B'} ${req.method} ${p}`;
}
http.createServer((req, res) => {
  const t = target(req);
  const k = key(req, t); counts.set(k, (counts.get(k) || 0) + 1);
  const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers, agent }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers); ur.pipe(res);
  });
  up.on('error', (e) => { if (!res.headersSent) { res.writeHead(502, { 'content-type': 'application/json' }); } res.end(JSON.stringify({ error: 'router: ' + e.message })); });
  req.on('aborted', () => up.destroy());
  req.pipe(up);
}).listen(Number(listenPort), '127.0.0.1', () => console.log(`role-router on ${listenPort}: producer -> ${producerUrl}, consumer -> ${consumerUrl}`));
function dump() { console.log([...counts.entries()].sort().map(([k, v]) => `${v}\t${k}`).join('\n')); }
process.on('SIGUSR2', dump);
process.on('SIGTERM', () => { dump(); process.exit(0); });
