/**
 * Sessions for people on the proxy listener (docs/proxy.md#sessions; public reference
 * `proxy/src/oauth.rs`, `proxy/src/auth.rs`, `proxy/src/harden.rs`): the `/auth/*` routes, the
 * session cookie, the credential a request presents and the cross-site origin check. Policy
 * (tokens, guard, roles) lives in src/auth/proxy; this module is HTTP only.
 *
 * - `GET /auth/login`: a self-contained page (no script, no external asset) with the form.
 * - `POST /auth/login` (form `email`, `password`, optional `next`): login guard first
 *   (`429 rate_limited` + `Retry-After`, the same answer whatever the password), then bcrypt;
 *   success → `303` to the safe `next` (else `/`) with the cookie; failure → `401` page
 *   `Invalid email or password.`.
 * - `POST /api/login` (JSON `{username, password}`, `username` the e-mail; the reference proxy's
 *   contract for its CLI): the same guard and check; success → `200 {success, user, token,
 *   token_type, expires_at}` with the cookie, and the token also in a `token` cookie (Path
 *   `/api/login`, 60 s) where the reference CLI looks for it; failure → `401 {"error":"invalid credentials"}`.
 * - `POST /auth/logout`: deny-lists the session (and so every bearer minted from it), clears the
 *   cookie, `200 {"ok":true}` also when there was nothing to revoke.
 * - `GET /auth/me` (cookie only): identity, operator flags, acting cluster, selectable clusters;
 *   401 `no session` / `invalid session` / `session no longer valid`.
 * - `GET /auth/session-token` (`?cluster=` optional): a 15-minute bearer carrying the session's
 *   `jti` as `sid`, scoped to the cluster with the user's role there when one is named.
 *
 * Never logs a password, hash, token or cookie value.
 */
import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { LoginGuard } from '../auth/proxy/guard.js';
import { isLiveOperator, resolveRole, selectableClusters } from '../auth/proxy/roles.js';
import { BEARER_TTL_S, NoSigner, type SessionClaims, type SessionTokens } from '../auth/proxy/sessions.js';
import type { ClusterRow, ProxyState, UserRow } from '../auth/proxy/state.js';
import type { ProxyConfig } from '../config/proxy.js';
import type { Clock } from '../util/clock.js';
import { refuse } from './envelope.js';
import { clientIp, ipKey } from './limits.js';

/**
 * What the session helpers read of a request: its head and peer. A Fastify request (cookies parsed
 * by @fastify/cookie) or the proxy listener's raw request (src/proxy/data-plane.ts), whose
 * `cookies` are parsed with {@link parseCookies} before a cookie is looked at.
 */
export interface RequestHead {
  headers: IncomingHttpHeaders;
  socket: { remoteAddress?: string | undefined };
  cookies?: Record<string, string | undefined>;
}

function header(req: RequestHead, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The cookies of a raw request's `Cookie` header (@fastify/cookie's parser, as on the proxy's
 * Fastify routes), set as `req.cookies` once. Needs {@link registerSessionParsers} to have run.
 */
export function parseCookies(req: RequestHead): void {
  if (req.cookies !== undefined) return;
  const h = req.headers.cookie;
  req.cookies = h ? fastifyCookie.fastifyCookie.parse(h) : {};
}

/** True when the request arrived over HTTPS: TLS on this listener, or `X-Forwarded-Proto: https` from a trusted peer. */
export function overHttps(req: RequestHead, config: ProxyConfig): boolean {
  if (config.tls) return true;
  const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:(?=\d+\.)/, '');
  return config.trustedProxies.includes(peer) && (header(req, 'x-forwarded-proto') ?? '').split(',')[0]!.trim().toLowerCase() === 'https';
}

/**
 * The session token in the request's cookies: the cell-scoped cookie (`__Host-<name>_cell` or
 * `<name>_cell`) wins over the fleet cookie `<name>`. A `qk_` value is never a credential.
 */
export function cookieToken(req: RequestHead, name: string): string | undefined {
  const jar = req.cookies ?? {};
  for (const n of [`__Host-${name}_cell`, `${name}_cell`, name]) {
    const v = jar[n];
    if (v !== undefined && v !== '' && !v.startsWith('qk_')) return v;
  }
  return undefined;
}

/** The origins a state-changing cookie request may come from: the Host's own and `QUEEN_PROXY_PUBLIC_ORIGIN`. */
function allowedOrigins(req: RequestHead, config: ProxyConfig): string[] {
  const host = header(req, 'host');
  const own = host === undefined ? [] : [`${overHttps(req, config) ? 'https' : 'http'}://${host.toLowerCase()}`];
  return [...own, ...config.sessions.publicOrigins];
}

/**
 * The cross-site check for a state-changing request that carries the session cookie: `Origin`
 * (where `null` is foreign), else the origin of `Referer`, else `Sec-Fetch-Site: same-origin`;
 * origins compare exactly (scheme, host, port).
 */
export function originAllowed(req: RequestHead, config: ProxyConfig): boolean {
  const allowed = allowedOrigins(req, config);
  const origin = header(req, 'origin');
  if (origin !== undefined) return allowed.includes(origin.toLowerCase());
  const referer = header(req, 'referer');
  if (referer !== undefined) {
    try {
      return allowed.includes(new URL(referer).origin.toLowerCase());
    } catch {
      return false;
    }
  }
  return header(req, 'sec-fetch-site') === 'same-origin';
}

/** True for methods that change state (anything but GET, HEAD, OPTIONS). */
export function changesState(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
}

/** A session credential: where it came from and its token. */
export interface SessionCredential {
  from: 'bearer' | 'cookie';
  token: string;
}

/**
 * The session credential of a request: `Authorization: Bearer <jwt>` wins over the cookie; the
 * cookie is ignored on `/api/` paths during a cross-document navigation (`Sec-Fetch-Mode: navigate`).
 * API keys (`qk_…`) are not session credentials.
 */
export function sessionCredential(req: RequestHead, path: string, config: ProxyConfig): SessionCredential | undefined {
  const auth = header(req, 'authorization');
  if (auth !== undefined) {
    const v = auth.trim().replace(/^bearer\s+/i, '').trim();
    return v === '' || v.startsWith('qk_') ? undefined : { from: 'bearer', token: v };
  }
  if (path.startsWith('/api/') && header(req, 'sec-fetch-mode') === 'navigate') return undefined;
  const token = cookieToken(req, config.sessions.cookieName);
  return token === undefined ? undefined : { from: 'cookie', token };
}

/**
 * A safe `next`: a path on this site (one leading `/`, no `//` or `/\` start, no scheme, no control
 * characters, no lone surrogate, at most 2 KiB), else `/`. Spaces and non-ASCII characters come back
 * percent-encoded (UTF-8), so the path can stand in a `Location` header, which takes bytes up to
 * 0xFF only (Node refuses anything else with `ERR_INVALID_CHAR`).
 */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string' || next.length > 2048 || !next.startsWith('/')) return '/';
  if (next.startsWith('//') || next.includes('\\') || [...next].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return '/';
  try {
    return next.replace(/[^\x21-\x7e]/gu, (c) => encodeURIComponent(c));
  } catch {
    return '/'; // a lone surrogate (encodeURIComponent throws URIError)
  }
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' })[c]!);

/** The login page: self-contained HTML, no script; `error` shown above the form. */
export function loginPage(opts: { next: string; error?: string; google: boolean; github: boolean }): string {
  const q = opts.next === '/' ? '' : `?next=${encodeURIComponent(opts.next)}`;
  const providers = [
    opts.google ? `<a class="alt" href="/auth/google${q}">Sign in with Google</a>` : '',
    opts.github ? `<a class="alt" href="/auth/github${q}">Sign in with GitHub</a>` : '',
  ].join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Sign in · Queen</title>
<style>
body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center}
main{background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002;width:min(22rem,90vw)}
h1{font-size:1.3rem;margin:0 0 1rem}label{display:block;margin:.6rem 0 .2rem;font-size:.9rem}
input{width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #bbb;border-radius:4px}
button{margin-top:1rem;width:100%;padding:.6rem;border:0;border-radius:4px;background:#5b3cc4;color:#fff;font-size:1rem}
.error{background:#fde8e8;color:#9b1c1c;padding:.5rem;border-radius:4px}.alt{display:block;text-align:center;margin-top:.8rem}
</style></head>
<body><main><h1>Sign in to Queen</h1>
${opts.error ? `<p class="error" role="alert">${esc(opts.error)}</p>` : ''}
<form method="post" action="/auth/login">
<input type="hidden" name="next" value="${esc(opts.next)}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>${providers}</main></body></html>
`;
}

/** What the session routes need. */
export interface SessionDeps {
  config: ProxyConfig;
  state: ProxyState;
  tokens: SessionTokens;
  clock: Clock;
}

/** The verified session behind a request, with its user (undefined when deleted). */
export interface Session {
  credential: SessionCredential;
  claims: SessionClaims;
  user: UserRow | undefined;
}

/** Verifies a credential; undefined when invalid, revoked or expired. */
export async function verifySession(tokens: SessionTokens, state: ProxyState, credential: SessionCredential): Promise<Session | undefined> {
  const claims = await tokens.verify(credential.token);
  return claims && { credential, claims, user: state.user(claims.sub) };
}

/**
 * The acting cluster of a session: `x-queen-act-cluster` (id or slug), else the token's `cluster`,
 * else the user's only selectable cluster. `undefined` = none could be chosen; `null` = the header
 * named an unknown cluster.
 */
export function actingCluster(req: RequestHead, session: Session, state: ProxyState, operatorEnabled: boolean): ClusterRow | null | undefined {
  const named = header(req, 'x-queen-act-cluster');
  if (named !== undefined && named.trim() !== '') {
    return state.store.clusterById(named.trim()) ?? state.store.clusterBySlug(named.trim().toLowerCase()) ?? null;
  }
  if (session.claims.cluster !== undefined) return state.store.clusterById(session.claims.cluster) ?? null;
  if (!session.user) return undefined;
  const all = selectableClusters(session.user, state.store, operatorEnabled);
  return all.length === 1 ? all[0]!.cluster : undefined;
}

/** Sets the session cookie (HttpOnly, SameSite=Lax, Path=/, Secure over HTTPS, optional Domain). */
export function setSessionCookie(req: FastifyRequest, reply: FastifyReply, config: ProxyConfig, token: string, maxAgeS: number): void {
  reply.setCookie(config.sessions.cookieName, token, {
    httpOnly: true, sameSite: 'lax', path: '/', secure: overHttps(req, config), maxAge: maxAgeS,
    ...(config.sessions.cookieDomain !== undefined ? { domain: config.sessions.cookieDomain } : {}),
  });
}

function clearSessionCookie(req: FastifyRequest, reply: FastifyReply, config: ProxyConfig): void {
  reply.clearCookie(config.sessions.cookieName, {
    httpOnly: true, sameSite: 'lax', path: '/', secure: overHttps(req, config),
    ...(config.sessions.cookieDomain !== undefined ? { domain: config.sessions.cookieDomain } : {}),
  });
}

const unauthorized = (reply: FastifyReply, error: string) => refuse(reply, 'unauthorized', error);

/** Fastify plugin: `/auth/login`, `/auth/logout`, `/auth/me`, `/auth/session-token`. */
export async function sessionRoutes(app: FastifyInstance, deps: SessionDeps): Promise<void> {
  const { config, state, tokens, clock } = deps;
  const guard = new LoginGuard(config.sessions.guard, clock);
  const providers = { google: config.sessions.oauth.google !== undefined, github: config.sessions.oauth.github !== undefined };
  const html = (reply: FastifyReply, status: number, body: string) =>
    reply.code(status).header('cache-control', 'no-store').header('content-security-policy', 'default-src \'none\'; style-src \'unsafe-inline\'; form-action \'self\'; frame-ancestors \'none\'')
      .type('text/html; charset=utf-8').send(body);

  app.get<{ Querystring: { next?: string; error?: string } }>('/auth/login', async (req, reply) =>
    html(reply, 200, loginPage({ next: safeNext(req.query.next), ...providers, ...(typeof req.query.error === 'string' && req.query.error === 'oauth' ? { error: 'Sign-in was refused.' } : {}) })));

  /**
   * The login guard, then bcrypt: the signed-in user and the minted session token, or a reply
   * already sent (`429` guard, `401` through `fail`, `500` with no signer).
   */
  /**
   * Checks a sign-in and sets the session cookie.
   * @returns the signed-in user and token, or undefined when the refusal was already sent (a
   *   Fastify reply is thenable, so it must never be what an async function returns to be inspected)
   */
  const signIn = async (req: FastifyRequest, reply: FastifyReply, email: string, password: string, fail: () => void):
    Promise<{ user: UserRow; token: string; exp: number } | undefined> => {
    const ip = ipKey(clientIp(req.raw.socket.remoteAddress, req.headers['x-forwarded-for'], config.trustedProxies));
    const decision = guard.attempt(ip, email);
    if (!decision.ok) {
      refuse(reply, 'rate_limited', 'too many login attempts', { retryAfterS: decision.retryAfterS });
      return undefined;
    }
    const user = email !== '' && password !== '' && Buffer.byteLength(password) <= 1024 ? await state.checkPassword(email, password) : undefined;
    if (!user) {
      guard.failed(ip, email);
      fail();
      return undefined;
    }
    guard.succeeded(ip, email);
    let minted;
    try {
      minted = await tokens.mint({ sub: user.id });
    } catch (e) {
      if (e instanceof NoSigner) {
        refuse(reply, 'internal_error', 'session token could not be minted');
        return undefined;
      }
      throw e;
    }
    req.log.info({ user: user.id }, 'proxy sign-in');
    setSessionCookie(req, reply, config, minted.token, config.sessions.ttlS);
    return { user, token: minted.token, exp: minted.claims.exp };
  };
  const field = (body: unknown, name: string): string => {
    const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
    return typeof v === 'string' ? v : '';
  };

  app.post('/auth/login', { bodyLimit: 16 * 1024 }, async (req, reply) => {
    const next = safeNext(field(req.body, 'next'));
    const done = await signIn(req, reply, field(req.body, 'email'), field(req.body, 'password'),
      () => void html(reply, 401, loginPage({ next, error: 'Invalid email or password.', ...providers })));
    if (done === undefined) return reply;
    return reply.code(303).header('location', next).header('cache-control', 'no-store').send();
  });

  // The reference proxy's JSON login, which its CLI and login page call (queen-mq/queen:
  // proxy/src/server.js, clients/client-cli/internal/auth/login.go): `{username, password}`.
  app.post('/api/login', { bodyLimit: 16 * 1024 }, async (req, reply) => {
    const email = field(req.body, 'username') || field(req.body, 'email');
    const password = field(req.body, 'password');
    if (email === '' || password === '') return refuse(reply, 'invalid_request', 'username and password required');
    const done = await signIn(req, reply, email, password, () => void refuse(reply, 'unauthorized', 'invalid credentials'));
    if (done === undefined) return reply;
    if (config.sessions.cookieName !== 'token') {
      // The reference CLI takes the JWT from a `token` cookie. Scoped to this route and short-lived,
      // it is never sent where it could act as a credential (no route reads a cookie by that name).
      reply.setCookie('token', done.token, { httpOnly: true, sameSite: 'strict', path: '/api/login', secure: overHttps(req, config), maxAge: 60 });
    }
    const only = selectableClusters(done.user, state.store, config.operatorEnabled);
    return reply.header('cache-control', 'no-store').send({
      success: true, user: { username: done.user.email, id: done.user.id, role: only.length === 1 ? only[0]!.role : null },
      token: done.token, token_type: 'Bearer', expires_at: new Date(done.exp * 1000).toISOString(),
    });
  });

  app.post('/auth/logout', async (req, reply) => {
    const credential = sessionCredential(req, '/auth/logout', config);
    if (credential) {
      const claims = await tokens.verify(credential.token);
      if (claims) tokens.revoke(claims.sid ?? claims.jti, claims.exp + (claims.sid !== undefined ? config.sessions.ttlS : 0));
    }
    clearSessionCookie(req, reply, config);
    return reply.code(200).header('cache-control', 'no-store').send({ ok: true });
  });

  app.get('/auth/me', async (req, reply) => {
    const token = cookieToken(req, config.sessions.cookieName);
    if (token === undefined) return unauthorized(reply, 'no session');
    const session = await verifySession(tokens, state, { from: 'cookie', token });
    if (!session) return unauthorized(reply, 'invalid session');
    const user = session.user;
    if (!user) return unauthorized(reply, 'session no longer valid');
    const live = isLiveOperator(user, config.operatorEnabled);
    const clusters = selectableClusters(user, state.store, config.operatorEnabled);
    const acting = actingCluster(req, session, state, config.operatorEnabled);
    let actingOut: { id: string; slug: string; role: string } | null = null;
    if (acting) {
      const r = resolveRole(session.claims, user, acting, state.store, config.operatorEnabled);
      if (r.ok) actingOut = { id: acting.id, slug: acting.slug, role: r.role };
    }
    const tenant = state.store.tenantById(user.tenantId);
    const slugOf = (tenantId: string) => state.store.tenantById(tenantId)?.slug ?? null;
    // The broker's standalone identity has the same fields (src/http/routes/auth.ts); `user` and `expires_at` are extra.
    return reply.header('cache-control', 'no-store').send({
      user_id: user.id, email: user.email, tenant_slug: tenant?.slug ?? null, tenant_id: user.tenantId,
      is_operator: user.isOperator, operator_enabled: config.operatorEnabled, operator_live: live,
      acting_cluster: actingOut,
      clusters: clusters.map(({ cluster, role }) => ({
        id: cluster.id, slug: cluster.slug, role, tenant_slug: slugOf(cluster.tenantId), tenant_id: cluster.tenantId, status: cluster.status, cell_slug: cluster.cell,
      })),
      act_cluster_header: 'x-queen-act-cluster', role: actingOut?.role ?? null, cluster: actingOut?.id ?? null, standalone: false,
      user: { id: user.id, email: user.email, tenant_id: user.tenantId },
      expires_at: new Date(session.claims.exp * 1000).toISOString(),
    });
  });

  app.get<{ Querystring: { cluster?: string } }>('/auth/session-token', async (req, reply) => {
    const token = cookieToken(req, config.sessions.cookieName);
    if (token === undefined) return unauthorized(reply, 'no session');
    const session = await verifySession(tokens, state, { from: 'cookie', token });
    if (!session) return unauthorized(reply, 'invalid session');
    if (!session.user) return unauthorized(reply, 'session no longer valid');
    let cluster: ClusterRow | undefined;
    let role = session.claims.role;
    if (typeof req.query.cluster === 'string' && req.query.cluster !== '') {
      const c = state.store.clusterById(req.query.cluster) ?? state.store.clusterBySlug(req.query.cluster.toLowerCase());
      if (!c) return refuse(reply, 'cluster_unknown', 'unknown cluster', { status: 421 });
      const r = resolveRole(session.claims, session.user, c, state.store, config.operatorEnabled);
      if (!r.ok) return refuse(reply, r.status === 401 ? 'unauthorized' : 'forbidden', r.error);
      cluster = c;
      role = r.role;
    }
    const minted = await tokens.mint({
      sub: session.user.id, role, ...(cluster ? { cluster: cluster.id } : {}), sid: session.claims.jti, ttlS: BEARER_TTL_S, notAfter: session.claims.exp,
    });
    return reply.header('cache-control', 'no-store').send({
      token: minted.token, token_type: 'Bearer', expires_in: minted.claims.exp - Math.floor(clock.now() / 1000),
      expires_at: new Date(minted.claims.exp * 1000).toISOString(), cluster_id: cluster?.id ?? null, role,
    });
  });
}

/** Registers the cookie parser and the form parser on the proxy app. */
export async function registerSessionParsers(app: FastifyInstance): Promise<void> {
  await app.register(fastifyCookie);
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    const params = new URLSearchParams(typeof body === 'string' ? body : body.toString('utf8'));
    const out: Record<string, string> = {};
    for (const [k, v] of params) if (!(k in out)) out[k] = v;
    done(null, out);
  });
}
