/**
 * Sign-in with Google (OpenID Connect) and GitHub (OAuth 2) on the proxy listener
 * (docs/proxy.md#oauth; public reference `proxy/src/oauth.rs`), over `openid-client`:
 *
 * - `GET /auth/google`, `GET /auth/github` (`?next=` safe path): a fresh `state`, OIDC `nonce` and
 *   PKCE verifier (S256) are kept in a 10-minute, HttpOnly, SameSite=Lax cookie signed by the proxy
 *   (`queen_oauth`, Path `/auth`), then `302` to the provider.
 * - `GET /auth/<provider>/callback`: the cookie must be present, valid, unused (it is deny-listed
 *   on use) and hold the same `state` as the query, else `400` login page with
 *   `oauth_state_mismatch`; the code is exchanged with the verifier (and the nonce checked for
 *   Google); only a verified e-mail is accepted (Google `email_verified`, GitHub `/user/emails`
 *   `verified`), within `GOOGLE_ALLOWED_DOMAINS` when set; a first sign-in is provisioned with
 *   `QUEEN_PROXY_DEFAULT_ROLE`; then the session cookie and `303` to `next`. Refusals answer `403`
 *   with the login page.
 *
 * Provider endpoints are configurable (`QUEEN_PROXY_GOOGLE_ISSUER`, `QUEEN_PROXY_GITHUB_BASE_URL`,
 * `QUEEN_PROXY_GITHUB_API_URL`); plain `http://` is accepted only for loopback addresses (tests).
 * Never logs a code, token, verifier or cookie value.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as client from 'openid-client';
import type { SessionTokens } from '../auth/proxy/sessions.js';
import type { ProxyState } from '../auth/proxy/state.js';
import type { ProxyConfig } from '../config/proxy.js';
import { loginPage, overHttps, safeNext, setSessionCookie } from './sessions.js';

/** Name of the flow cookie. */
export const FLOW_COOKIE = 'queen_oauth';
/** Lifetime of a flow, seconds. */
export const FLOW_TTL_S = 600;
/** Budget of each call to a provider, ms. */
const PROVIDER_TIMEOUT_S = 10;

type Provider = 'google' | 'github';

function loopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** A refusal of the sign-in: the login page with a message, and the status. */
class Refused extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** Fastify plugin: the OAuth routes of the providers that are configured. */
export async function oauthRoutes(app: FastifyInstance, deps: { config: ProxyConfig; state: ProxyState; tokens: SessionTokens }): Promise<void> {
  const { config, state, tokens } = deps;
  const oauth = config.sessions.oauth;
  const providers = { google: oauth.google !== undefined, github: oauth.github !== undefined };
  let google: Promise<client.Configuration> | undefined;

  /** Google's configuration by discovery from its issuer, fetched once (again after a failure). */
  const googleConfig = (): Promise<client.Configuration> => {
    const g = oauth.google!;
    if (!google) {
      const issuer = new URL(g.issuer);
      google = client.discovery(issuer, g.clientId, { client_secret: g.clientSecret }, client.ClientSecretPost(g.clientSecret), {
        ...(issuer.protocol === 'http:' && loopback(issuer) ? { execute: [client.allowInsecureRequests] } : {}), timeout: PROVIDER_TIMEOUT_S,
      });
      google.catch(() => { google = undefined; });
    }
    return google;
  };
  const githubConfig = (): client.Configuration => {
    const g = oauth.github!;
    const base = new URL(g.baseUrl);
    const c = new client.Configuration({
      issuer: g.baseUrl, authorization_endpoint: `${g.baseUrl}/login/oauth/authorize`, token_endpoint: `${g.baseUrl}/login/oauth/access_token`,
    }, g.clientId, { client_secret: g.clientSecret }, client.ClientSecretPost(g.clientSecret));
    c.timeout = PROVIDER_TIMEOUT_S;
    if (base.protocol === 'http:' && loopback(base)) client.allowInsecureRequests(c);
    return c;
  };

  const publicOrigin = (req: FastifyRequest): string => config.sessions.publicOrigins[0] ?? `${overHttps(req, config) ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`;
  const redirectUri = (req: FastifyRequest, p: Provider) => `${publicOrigin(req)}/auth/${p}/callback`;
  const page = (reply: FastifyReply, status: number, error: string, next = '/') => reply.code(status).header('cache-control', 'no-store')
    .type('text/html; charset=utf-8').send(loginPage({ next, error, ...providers }));
  const flowCookieOptions = (req: FastifyRequest) => ({ httpOnly: true, sameSite: 'lax' as const, path: '/auth', secure: overHttps(req, config) });

  const start = (p: Provider) => async (req: FastifyRequest<{ Querystring: { next?: string } }>, reply: FastifyReply) => {
    if (!tokens.canMint) return page(reply, 500, 'Sign-in is not available: the proxy has no session key.');
    const cfg = p === 'google' ? await googleConfig() : githubConfig();
    const verifier = client.randomPKCECodeVerifier();
    const flow: Record<string, string> = { p, state: client.randomState(), verifier, next: safeNext(req.query.next) };
    const params: Record<string, string> = {
      redirect_uri: redirectUri(req, p), state: flow.state!, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      scope: p === 'google' ? 'openid email' : 'read:user user:email',
    };
    if (p === 'google') {
      flow.nonce = client.randomNonce();
      params.nonce = flow.nonce;
    }
    reply.setCookie(FLOW_COOKIE, await tokens.signFlow(flow, FLOW_TTL_S), { ...flowCookieOptions(req), maxAge: FLOW_TTL_S });
    return reply.code(302).header('cache-control', 'no-store').header('location', client.buildAuthorizationUrl(cfg, params).href).send();
  };

  /** The verified e-mail of the signed-in person. @throws Refused */
  const verifiedEmail = async (p: Provider, req: FastifyRequest, flow: Record<string, string>): Promise<string> => {
    const cfg = p === 'google' ? await googleConfig() : githubConfig();
    const current = new URL(req.url, redirectUri(req, p));
    let grant;
    try {
      grant = await client.authorizationCodeGrant(cfg, current, {
        pkceCodeVerifier: flow.verifier, expectedState: flow.state, idTokenExpected: p === 'google', ...(p === 'google' ? { expectedNonce: flow.nonce } : {}),
      });
    } catch (e) {
      req.log.warn({ provider: p, error: (e as { code?: string }).code ?? (e as Error).name }, 'oauth code exchange failed');
      throw new Refused(400, 'oauth_exchange_failed', 'Sign-in failed: the provider did not confirm it.');
    }
    if (p === 'google') {
      let claims: Record<string, unknown> = { ...grant.claims() };
      if (typeof claims.email !== 'string') claims = { ...claims, ...(await client.fetchUserInfo(cfg, grant.access_token, String(claims.sub))) };
      if (typeof claims.email !== 'string' || claims.email_verified !== true) throw new Refused(403, 'email_unverified', 'Sign-in refused: the e-mail address is not verified.');
      const email = claims.email.trim().toLowerCase();
      const allowed = oauth.google!.allowedDomains;
      if (allowed.length > 0 && !allowed.includes(email.slice(email.lastIndexOf('@') + 1))) throw new Refused(403, 'domain_not_allowed', 'Sign-in refused: this e-mail domain is not allowed.');
      return email;
    }
    const r = await fetch(`${oauth.github!.apiUrl}/user/emails`, {
      headers: { authorization: `Bearer ${grant.access_token}`, accept: 'application/vnd.github+json', 'user-agent': 'queen-ts-proxy' },
      redirect: 'error', signal: AbortSignal.timeout(PROVIDER_TIMEOUT_S * 1000),
    });
    if (!r.ok) throw new Refused(400, 'oauth_exchange_failed', 'Sign-in failed: the provider did not list the e-mail addresses.');
    const emails = await r.json() as { email?: unknown; primary?: unknown; verified?: unknown }[];
    const list = Array.isArray(emails) ? emails : [];
    const pick = list.find((e) => e.primary === true && e.verified === true) ?? list.find((e) => e.verified === true);
    if (!pick || typeof pick.email !== 'string') throw new Refused(403, 'email_unverified', 'Sign-in refused: no verified e-mail address.');
    return pick.email.trim().toLowerCase();
  };

  const callback = (p: Provider) => async (req: FastifyRequest<{ Querystring: Record<string, string | undefined> }>, reply: FastifyReply) => {
    const cookie = req.cookies[FLOW_COOKIE];
    reply.clearCookie(FLOW_COOKIE, flowCookieOptions(req));
    const flow = cookie === undefined ? undefined : await tokens.useFlow(cookie);
    if (!flow || flow.p !== p || typeof req.query.state !== 'string' || req.query.state !== flow.state) {
      req.log.warn({ provider: p, code: 'oauth_state_mismatch' }, 'oauth callback refused');
      return page(reply, 400, 'Sign-in could not be verified for this browser (oauth_state_mismatch). Please try again.');
    }
    if (typeof req.query.error === 'string') return page(reply, 403, 'Sign-in was refused by the provider.', flow.next);
    try {
      const email = await verifiedEmail(p, req, flow);
      const found = state.provisionOAuthUser(email, oauth.provisionTenant, config.sessions.defaultRole, p);
      if (!found) throw new Refused(403, 'not_provisioned', 'Sign-in refused: no account for this e-mail address.');
      const minted = await tokens.mint({ sub: found.user.id });
      req.log.info({ user: found.user.id, provider: p, provisioned: found.created }, 'proxy sign-in');
      setSessionCookie(req, reply, config, minted.token, config.sessions.ttlS);
      return reply.code(303).header('cache-control', 'no-store').header('location', flow.next ?? '/').send();
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      req.log.warn({ provider: p, code: e.code }, 'oauth sign-in refused');
      return page(reply, e.status, e.message, flow.next);
    }
  };

  for (const p of ['google', 'github'] as const) {
    if (!providers[p]) continue;
    app.get(`/auth/${p}`, start(p));
    app.get(`/auth/${p}/callback`, callback(p));
  }
}
