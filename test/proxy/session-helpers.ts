/** Helpers of the session tests: form logins over real HTTP, cookies, client addresses. */
import http from 'node:http';
import { call, type Answer } from '../helpers/http.js';
import { cp } from './helpers.js';

/** Environment of a proxy with sessions: HS256, loopback trusted so each test picks its client address by `X-Forwarded-For`. */
export const SESSION_ENV: Record<string, string> = {
  QUEEN_PROXY_JWT_SECRET: 'session-secret-for-tests-0123456789abcdef',
  QUEEN_EDGE_TRUSTED_PROXIES: '127.0.0.1',
};

let nextIp = 1;
/** A fresh client address (TEST-NET-2) for one test's attempts. */
export function freshIp(): string {
  const n = nextIp++;
  return `198.51.${Math.floor(n / 250)}.${(n % 250) + 1}`;
}

/** The answer of `POST /auth/login` (form), not following the redirect. */
export async function postLogin(base: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers; cookie: string | undefined }> {
  const r = await fetch(`${base}/auth/login`, {
    method: 'POST', redirect: 'manual', body: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    signal: AbortSignal.timeout(10_000),
  });
  const text = await r.text();
  const set = r.headers.getSetCookie().find((c) => c.startsWith('queen_session='));
  return { status: r.status, text, headers: r.headers, cookie: set?.split(';')[0] };
}

/** Signs in and returns the `queen_session=<token>` pair. @throws Error when the sign-in fails */
export async function login(base: string, email: string, password: string, ip = freshIp()): Promise<string> {
  const r = await postLogin(base, { email, password }, { 'x-forwarded-for': ip });
  if (r.status !== 303 || r.cookie === undefined) throw new Error(`login ${email}: ${r.status} ${r.text.slice(0, 200)}`);
  return r.cookie;
}

/** A call carrying the session cookie (and `extra` headers). */
export function withCookie<T = any>(base: string, cookie: string, method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<Answer<T>> {
  return call<T>(base, method, path, body, { cookie, ...extra });
}

/** Creates a user with a password in tenant `tenant` and grants `role` on `cluster` (when given). */
export async function person(base: string, tenant: string, email: string, password: string, role?: { cluster: string; role: string }): Promise<string> {
  const u = await cp(base, 'POST', '/api/cp/users', { tenant, email, password });
  if (u.status !== 201 && u.status !== 200) throw new Error(`create user ${email}: ${u.status} ${u.text}`);
  if (role) {
    const g = await cp(base, 'PUT', `/api/cp/clusters/${role.cluster}/members/${encodeURIComponent(email)}`, { role: role.role });
    if (g.status !== 200) throw new Error(`grant ${email}: ${g.status} ${g.text}`);
  }
  return u.body.id as string;
}

/**
 * A GET over node:http with exactly the given headers (fetch rewrites the `Sec-Fetch-*` ones, so
 * a browser navigation cannot be sent with it). Bounded by a 10 s timeout.
 */
export function rawGet(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(base + path, { headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error('rawGet timed out')));
    req.on('error', reject);
  });
}
