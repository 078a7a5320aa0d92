/**
 * One JSON request over a keep-alive agent, shared by the bench scripts (run.ts, lease-memory.ts).
 * The answer body is parsed as JSON when present ({@link request}) or returned as text ({@link requestText}).
 */
import http from 'node:http';
import https from 'node:https';

/** A keep-alive agent for bench traffic (up to 256 sockets). */
export const benchAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
/** The same over TLS; the bench's certificate is self-signed and made for the run, so it is not verified. */
export const benchTlsAgent = new https.Agent({ keepAlive: true, maxSockets: 256, rejectUnauthorized: false });

/**
 * Sends `body` (JSON) to `base + path`.
 * @returns the status and the parsed answer (undefined when empty)
 */
export function request(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const u = new URL(base + path);
    const tls = u.protocol === 'https:';
    const req = (tls ? https : http).request({ agent: tls ? benchTlsAgent : benchAgent, host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: { 'content-type': 'application/json', ...(data ? { 'content-length': String(data.length) } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

/**
 * Sends `body` (already JSON text, or none) to `base + path` and answers the raw text: for bench
 * clients that must not spend the machine's CPU on parsing answers they only pick a field from.
 */
export function requestText(base: string, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(body);
    const u = new URL(base + path);
    const tls = u.protocol === 'https:';
    const req = (tls ? https : http).request({ agent: tls ? benchTlsAgent : benchAgent, host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: { 'content-type': 'application/json', ...(data ? { 'content-length': String(data.length) } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

/**
 * The string value of the first (or last) `"key":"…"` in a JSON answer's text, read without parsing it.
 * @throws Error naming the key when the text has none
 */
export function field(text: string, key: string, last = false): string {
  const tag = `"${key}":"`;
  const at = last ? text.lastIndexOf(tag) : text.indexOf(tag);
  if (at < 0) throw new Error(`no ${key} in ${text.slice(0, 200)}`);
  const from = at + tag.length;
  return text.slice(from, text.indexOf('"', from));
}
