/**
 * A do-nothing Node server for bench/proxy-tls.ts: plain HTTP (`BARE_TLS` unset) or HTTPS with
 * the proxy listener's TLS settings (TLS 1.2/1.3, ALPN http/1.1, `noDelay`), that reads each
 * request's body and answers `201` with a push answer's shape (JSON body, the proxy's security
 * headers), synchronously. It prints its port on stdout. What the broker and the proxy add is then
 * the difference between this server's CPU per request and theirs; what TLS adds in Node alone is
 * the difference between its two modes.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';

const body = JSON.stringify([{ index: 0, transactionId: '0198a0b7-1234-7000-8000-000000000000', messageId: '0198a0b7-1234-7000-8000-000000000001', status: 'queued', queue: 'q', partition: 'p0' }]);
const headers = {
  'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'x-queen-request-id': '0198a0b7-1234-7000-8000-000000000002',
  'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'cross-origin-resource-policy': 'same-origin',
};

const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
  req.on('data', () => {});
  req.on('end', () => {
    res.writeHead(201, headers);
    res.end(body);
  });
};

const options = { noDelay: true, keepAliveTimeout: 65_000 };
const cert = process.env.BARE_TLS_CERT;
const key = process.env.BARE_TLS_KEY;
const server = process.env.BARE_TLS === '1' && cert && key
  ? https.createServer({ ...options, cert: fs.readFileSync(cert), key: fs.readFileSync(key), minVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'] }, handler)
  : http.createServer(options, handler);
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${typeof a === 'object' && a ? a.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
