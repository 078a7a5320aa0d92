/** System routes (docs/http-api.md#maintenance): push and pop maintenance, shared-state summary. ADMIN (auth table). */
import type { FastifyInstance } from 'fastify';
import { QueenError } from '../../errors.js';
import { bodyObject, type OpsContext } from './ops-context.js';
import type { Replies } from '../schemas/types.js';
import { wire } from '../schemas/wire.js';

function enabledOf(body: unknown): boolean {
  const b = bodyObject(body);
  if (typeof b.enabled !== 'boolean') throw new QueenError('invalid_request', 'enabled (boolean) is required');
  return b.enabled;
}

/** Fastify plugin registering the routes this module describes. */
export async function systemRoutes(app: FastifyInstance, { broker, ops }: OpsContext): Promise<void> {
  const m = ops.maintenance;

  app.get<Replies<'GET /api/v1/system/maintenance'>>('/api/v1/system/maintenance', async () => wire(m.status()));

  app.post<Replies<'POST /api/v1/system/maintenance'>>('/api/v1/system/maintenance', async (req) => {
    const enabled = enabledOf(req.body);
    await m.setPush(enabled);
    const s = m.status();
    return {
      maintenanceMode: s.maintenanceMode, bufferedMessages: s.bufferedMessages, bufferHealthy: s.bufferHealthy,
      message: enabled ? 'Push maintenance on: pushes are spooled to disk' : s.bufferedMessages > 0
        ? `Push maintenance off: replaying ${s.bufferedMessages} spooled messages in order` : 'Push maintenance off',
    };
  });

  app.get<Replies<'GET /api/v1/system/maintenance/pop'>>('/api/v1/system/maintenance/pop', async () => ({
    popMaintenanceMode: broker.popMaintenanceEnabled,
    message: broker.popMaintenanceEnabled ? 'Pop maintenance on: every pop answers 204' : 'Pop maintenance off',
  }));

  app.post<Replies<'POST /api/v1/system/maintenance/pop'>>('/api/v1/system/maintenance/pop', async (req) => {
    const enabled = enabledOf(req.body);
    await broker.setPopMaintenance(enabled);
    return { popMaintenanceMode: enabled, message: enabled ? 'Pop maintenance on: every pop answers 204' : 'Pop maintenance off' };
  });

  // The replication link (docs/cluster.md#standby): PostgreSQL's own facts; on SQLite a lone primary.
  app.get<Replies<'GET /api/v1/system/link'>>('/api/v1/system/link', async () => {
    const c = broker.storage.cluster;
    return c ? { ...(await c.link()) } : { role: 'primary', position: { lsn: null }, readers: [] };
  });

  // Membership as a read-only view in the shape of Queen's Raft membership (docs/cluster.md#membership).
  app.get<Replies<'GET /api/v1/system/raft/membership'>>('/api/v1/system/raft/membership', async () => {
    const c = broker.storage.cluster;
    return {
      engine: broker.storage.kind,
      members: c ? c.members().map((m) => ({ id: m.serverId, http: m.address, epoch: m.epoch, live: m.live, lastSeenMs: m.lastSeenMs, leaving: m.leaving })) : [],
    };
  });

  app.post<Replies<'POST /api/v1/system/link/promote'>>('/api/v1/system/link/promote', async () => {
    const c = broker.storage.cluster;
    if (!c) throw new QueenError('promote_unavailable', 'this broker runs on SQLite: there is no standby to promote');
    return { ...(await c.promote()) };
  });

  app.get<Replies<'GET /api/v1/system/shared-state'>>('/api/v1/system/shared-state', async () => ({
    enabled: false, reason: 'single broker process (embedded store)',
    maintenance_mode: m.pushEnabled, pop_maintenance_mode: broker.popMaintenanceEnabled,
  }));
}
