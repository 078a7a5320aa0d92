/** Helpers of the proxy tests: a broker with the embedded proxy, control-plane calls, keys. */
import { createHash, randomBytes } from 'node:crypto';
import { call, uniqueName, type Answer } from '../helpers/http.js';
import { startBroker, type BrokerHandle } from '../helpers/broker.js';

export const CP_TOKEN = 'cp-test-token-0123456789';

/** Starts a broker with the proxy fronting PORT (extra env merged in). */
export function startProxied(env: Record<string, string> = {}, dataDir?: string): Promise<BrokerHandle> {
  return startBroker({
    env: { QUEEN_PROXY_EMBEDDED: 'true', QUEEN_PROXY_CP_TOKEN: CP_TOKEN, QUEEN_EDGE_RATE: '100000', QUEEN_EDGE_BURST: '100000', ...env },
    ...(dataDir !== undefined ? { dataDir } : {}),
  });
}

/** A control-plane call with the token. */
export function cp<T = any>(base: string, method: string, path: string, body?: unknown, token = CP_TOKEN): Promise<Answer<T>> {
  return call<T>(base, method, path, body, { 'x-queen-cp-token': token });
}

/** A data-plane call with an API key as bearer. */
export function withKey<T = any>(base: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
  return call<T>(base, method, path, body, { authorization: `Bearer ${key}`, ...headers });
}

/** A tenant bootstrapped through `/api/cp/bootstrap`: its ids and its all-scope key. */
export interface Tenant {
  slug: string;
  tenantId: string;
  clusterId: string;
  key: string;
}

/** Bootstraps tenant `slug` (plan `dev` unless given). */
export async function bootstrap(base: string, slug: string, plan?: string): Promise<Tenant> {
  const r = await cp(base, 'POST', '/api/cp/bootstrap', { tenant: slug, email: `admin@${slug}.test`, ...(plan ? { plan } : {}) });
  if (r.status !== 200 || typeof r.body?.api_key !== 'string') throw new Error(`bootstrap ${slug}: ${r.status} ${r.text}`);
  return { slug, tenantId: r.body.tenant_id, clusterId: r.body.cluster_id, key: r.body.api_key };
}

/** A broker with the proxy fronting PORT and two bootstrapped tenants (`acme-…`, `beta-…`, plan `dev`). */
export async function startTwoTenants(): Promise<{ b: BrokerHandle; acme: Tenant; beta: Tenant }> {
  const b = await startProxied();
  const acme = await bootstrap(b.url, uniqueName('acme').toLowerCase());
  const beta = await bootstrap(b.url, uniqueName('beta').toLowerCase());
  return { b, acme, beta };
}

/** Issues a key with `scopes` on `clusterId` the way an operator does: hashed by the caller. */
export async function issueKey(base: string, clusterId: string, scopes: string[], name = 'test'): Promise<{ key: string; id: string }> {
  const key = `qk_test_${randomBytes(32).toString('base64url')}`;
  const r = await cp(base, 'POST', '/api/cp/keys', { cluster_id: clusterId, name, key_hash: createHash('sha256').update(key).digest('hex'), scopes });
  if (r.status !== 201) throw new Error(`issue key: ${r.status} ${r.text}`);
  return { key, id: r.body.id };
}

/** The bound proxy port from the `public listener (hardened)` line (separate-port layout). */
export function proxyPortOf(output: string): number {
  for (const line of output.split('\n')) {
    if (!line.includes('public listener (hardened)')) continue;
    const o = JSON.parse(line) as { port: number };
    return o.port;
  }
  throw new Error(`no public listener line in:\n${output}`);
}
