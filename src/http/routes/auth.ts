/**
 * `/auth/me`, `/auth/login`, `/auth/logout`: public routes (docs/security.md#public-routes) so they can answer
 * the auth question rather than be blocked by it.
 *
 * JWT on: the broker-served dashboard is off on purpose; `/auth/me` answers 401 from this handler,
 * `/auth/login` serves a static page pointing at the proxy. JWT off: `/auth/me` returns the fixed
 * standalone identity, `/auth/login` redirects to `/`.
 *
 * Source: docs/security.md#dashboard-and-auth-routes.
 */
import type { FastifyInstance } from 'fastify';
import { QueenError } from '../../errors.js';
import type { MeAnswer, Replies } from '../schemas/types.js';

export interface AuthRoutesOptions {
  /** `JWT_ENABLED` as loaded at boot. */
  readonly jwtEnabled: boolean;
  /** Shown as the standalone cluster's `cell_slug` (default `local`). */
  readonly serverId?: string;
}

/** The static page `/auth/login` serves with JWT on: self-contained, no external assets. */
export const LOGIN_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Queen — authentication required</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;line-height:1.5;color:#222}code{background:#f3f3f3;padding:0 .25rem}</style>
</head>
<body>
<h1>This broker requires authentication</h1>
<p>JWT authentication is enabled on this broker. It accepts bearer tokens in the <code>Authorization</code> header of each API request, and it holds no accounts and no sessions, so there is nothing to log in to here.</p>
<p>To use the dashboard, open it through the Queen proxy (<code>queen_proxy</code>), which holds users and sessions, or run the broker with authentication off.</p>
</body>
</html>
`;

/** The fixed identity `/auth/me` answers with JWT off (docs/security.md#dashboard-and-auth-routes). */
export function standaloneIdentity(serverId: string): MeAnswer {
  return {
    user_id: 'standalone',
    email: null,
    tenant_slug: 'local',
    is_operator: true,
    operator_enabled: true,
    operator_live: true,
    acting_cluster: { id: 'local', slug: 'local' },
    clusters: [
      {
        id: 'local',
        slug: 'local',
        role: 'admin',
        tenant_slug: 'local',
        tenant_id: '00000000-0000-0000-0000-000000000001',
        status: 'active',
        cell_slug: serverId,
      },
    ],
    act_cluster_header: 'x-queen-act-cluster',
    role: 'admin',
    cluster: null,
    standalone: true,
  };
}

/** Registers the `/auth/*` routes. */
export async function authRoutes(app: FastifyInstance, opts: AuthRoutesOptions): Promise<void> {
  const serverId = opts.serverId ?? 'local';
  // the 401 answer is sent here, so the Reply is not narrowed; standaloneIdentity() is typed instead
  app.get('/auth/me', async (_req, reply) => {
    if (opts.jwtEnabled) {
      return reply.code(401).type('application/json').send(new QueenError('auth_required', 'auth_required').toJSON());
    }
    return standaloneIdentity(serverId);
  });
  app.get('/auth/login', async (_req, reply) => {
    if (opts.jwtEnabled) return reply.code(200).type('text/html; charset=utf-8').send(LOGIN_PAGE);
    return reply.redirect('/', 303);
  });
  const logout = async (): Promise<{ ok: true }> => ({ ok: true });
  app.post<Replies<'POST /auth/logout'>>('/auth/logout', logout);
  app.get<Replies<'GET /auth/logout'>>('/auth/logout', logout);
}
