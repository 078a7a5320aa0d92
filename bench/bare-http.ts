/**
 * The bare node:http server of `npm run bench` (bench/run.ts), run as a process of its own like
 * the broker, so that the HTTP ceiling it shows is not shared with autocannon's thread: it answers
 * a POST by parsing the JSON body and sending a fixed 201 array (one element per `items` entry, else
 * one), any other request a fixed 200 body. Prints `PORT <n>` on stdout once listening on
 * 127.0.0.1 (a kernel-chosen port). Run: `node dist/bench/bare-http.js`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const popBody = JSON.stringify({ success: true, messages: [{ id: 'x', data: { orderId: 12345 } }] });
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST') {
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { items?: unknown[] };
      const n = Array.isArray(body.items) ? body.items.length : 1;
      const out = JSON.stringify(Array.from({ length: n }, (_, index) => ({ index, message_id: 'x', transaction_id: 'x', queueName: 'q', status: 'queued' })));
      res.writeHead(201, { 'content-type': 'application/json' }).end(out);
    } else {
      res.writeHead(200, { 'content-type': 'application/json' }).end(popBody);
    }
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`PORT ${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
