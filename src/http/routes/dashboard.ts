/**
 * The broker-served dashboard (docs/http-api.md#dashboard-and-auth-routes): the single-page app built by Vite from `web/` into
 * `dist/web`, served at `/` with `/assets/*`, plus the SPA fallback of docs/http-api.md#dashboard-and-auth-routes
 * ("other unknown GET paths fall back to the embedded dashboard SPA").
 *
 * Every file is read into memory once at registration (the build is a few hundred KiB), with
 * a gzip copy for clients that accept it. Caching: content-hashed files under `/assets/` are
 * `immutable` for a year; `index.html` and the other top-level files are `no-cache` with an
 * ETag, so a new build is picked up on the next load.
 *
 * JWT on (docs/security.md#dashboard-and-auth-routes): only the shell
 * (`/`, `/assets/*`, `/favicon*`, all public) is served, marked with
 * `<meta name="queen-auth" content="jwt">`, so the page explains itself instead of calling the
 * API; there is no SPA fallback, and `/auth/*` belongs to the auth routes.
 *
 * Unknown paths under `/api/` (and the other non-dashboard families) keep the JSON
 * `404 no_such_route` of `errors.ts`: the fallback hands them to the not-found handler.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface DashboardOptions {
  /** `JWT_ENABLED` as read at boot: on, the dashboard is off (shell only, with its own message). */
  readonly jwtEnabled: boolean;
  /** Directory holding the built app; default `dist/web` next to the compiled `dist/src`. */
  readonly root?: string;
}

interface Asset {
  readonly body: Buffer;
  readonly gzip: Buffer | null;
  readonly type: string;
  readonly etag: string;
  readonly cacheControl: string;
}

/** dist/src/http/routes → dist/web */
const DEFAULT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../web');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/** Path prefixes that are never the dashboard's: unknown paths below them stay JSON 404s. */
const NOT_DASHBOARD = ['/api/', '/internal/', '/streams/', '/metrics', '/health', '/auth/', '/status'];

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

function makeAsset(body: Buffer, file: string, cacheControl: string): Asset {
  const ext = path.extname(file).toLowerCase();
  const type = TYPES[ext] ?? 'application/octet-stream';
  const compressible = /^(text\/|application\/(json|manifest)|image\/svg)/.test(type);
  const gz = compressible && body.length > 512 ? gzipSync(body, { level: 9 }) : null;
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, gzip: gz && gz.length < body.length ? gz : null, type, etag, cacheControl };
}

/** Reads every file below `dir` (recursively) as `/relative/path` → contents. */
function readTree(dir: string, prefix = ''): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const rel = `${prefix}/${entry.name}`;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) for (const [k, v] of readTree(full, rel)) out.set(k, v);
    else if (entry.isFile()) out.set(rel, fs.readFileSync(full));
  }
  return out;
}

/** Marks the shell so the app shows its "dashboard is off" message without calling the API. */
function markJwt(html: string): string {
  return html.replace(/<head>/i, '<head>\n    <meta name="queen-auth" content="jwt">');
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Queen — dashboard not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2937}code{background:#f3f4f6;padding:.1rem .3rem;border-radius:4px}</style></head>
<body><h1>The dashboard has not been built</h1><p>This broker is running, but its dashboard files are missing. Build them with <code>npx vite build --config web/vite.config.ts</code> (part of <code>npm run build</code>) and restart the broker.</p><p>The API, <code>/health</code> and <code>/metrics</code> work as usual.</p></body></html>`;

/** Registers the dashboard routes (see the module comment). */
export async function dashboardRoutes(app: FastifyInstance, opts: DashboardOptions): Promise<void> {
  const root = opts.root ?? DEFAULT_ROOT;
  const assets = new Map<string, Asset>();
  let index: Asset;
  const indexFile = path.join(root, 'index.html');
  if (fs.existsSync(indexFile)) {
    for (const [rel, body] of readTree(root)) {
      if (rel === '/index.html') continue;
      assets.set(rel, makeAsset(body, rel, rel.startsWith('/assets/') ? IMMUTABLE : REVALIDATE));
    }
    let html = fs.readFileSync(indexFile, 'utf8');
    if (opts.jwtEnabled) html = markJwt(html);
    index = makeAsset(Buffer.from(html), 'index.html', REVALIDATE);
  } else {
    app.log.warn({ root }, 'dashboard files not found; serving a placeholder at /');
    index = makeAsset(Buffer.from(NOT_BUILT), 'index.html', REVALIDATE);
  }

  const send = (req: FastifyRequest, reply: FastifyReply, a: Asset, html = false): FastifyReply => {
    reply.header('cache-control', a.cacheControl).header('etag', a.etag).header('x-content-type-options', 'nosniff');
    if (html) reply.header('content-security-policy', CSP).header('referrer-policy', 'no-referrer').header('x-frame-options', 'DENY');
    if (a.gzip) reply.header('vary', 'accept-encoding');
    const inm = req.headers['if-none-match'];
    if (typeof inm === 'string' && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === a.etag)) {
      return reply.code(304).send();
    }
    reply.type(a.type);
    const ae = req.headers['accept-encoding'];
    if (a.gzip && typeof ae === 'string' && /\bgzip\b/.test(ae)) return reply.header('content-encoding', 'gzip').send(a.gzip);
    return reply.send(a.body);
  };

  const fromUrl = (req: FastifyRequest): string => {
    const raw = req.url.split('?')[0] ?? '/';
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  };

  app.get('/', async (req, reply) => send(req, reply, index, true));
  app.get('/index.html', async (req, reply) => send(req, reply, index, true));

  app.get('/assets/*', async (req, reply) => {
    const a = assets.get(fromUrl(req));
    if (!a) return reply.callNotFound();
    return send(req, reply, a);
  });

  // Top-level build files (favicon and the like), read once above.
  for (const [rel, a] of assets) {
    if (rel.startsWith('/assets/') || rel.split('/').length !== 2) continue;
    app.get(rel, async (req, reply) => send(req, reply, a));
  }

  if (opts.jwtEnabled) return;

  // SPA fallback: client-side routes such as /queues/orders load the shell.
  app.get('/*', async (req, reply) => {
    const p = fromUrl(req);
    if (NOT_DASHBOARD.some((prefix) => p === prefix || p.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`) || p === prefix.replace(/\/$/, ''))) {
      return reply.callNotFound();
    }
    const accept = req.headers.accept ?? '';
    // A browser navigation asks for HTML; a missing script or image should be a real 404.
    if (path.extname(p) !== '' && !accept.includes('text/html')) return reply.callNotFound();
    return send(req, reply, index, true);
  });
}
