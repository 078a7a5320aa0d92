/** Membership settings of src/config/cluster.ts (docs/configuration.md#node-port). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadClusterConfig } from '../../src/config/cluster.js';
import { ConfigError } from '../../src/config/env.js';

test('membership settings: defaults, bounds, the TTL covers two heartbeats, whether QUEEN_SERVER_ID was set', () => {
  const d = loadClusterConfig({});
  assert.equal(d.heartbeatMs, 1000);
  assert.equal(d.nodeTtlMs, 5000);
  assert.equal(d.serverIdSet, false);
  const s = loadClusterConfig({ QUEEN_SERVER_ID: ' node-a ', QUEEN_CLUSTER_HEARTBEAT_MS: '200', QUEEN_CLUSTER_NODE_TTL_MS: '1500' });
  assert.deepEqual([s.serverId, s.serverIdSet, s.heartbeatMs, s.nodeTtlMs], ['node-a', true, 200, 1500]);
  assert.equal(loadClusterConfig({ QUEEN_SERVER_ID: '  ' }).serverIdSet, false);
  assert.equal(loadClusterConfig({ QUEEN_CLUSTER_HEARTBEAT_MS: '4000' }).nodeTtlMs, 8000, 'the default TTL grows with a slow heartbeat');
  assert.throws(() => loadClusterConfig({ QUEEN_CLUSTER_HEARTBEAT_MS: '1000', QUEEN_CLUSTER_NODE_TTL_MS: '1500' }), (e: unknown) => e instanceof ConfigError && /at least twice/.test(e.message));
  assert.throws(() => loadClusterConfig({ QUEEN_CLUSTER_HEARTBEAT_MS: '10' }), ConfigError);
  assert.throws(() => loadClusterConfig({ QUEEN_CLUSTER_NODE_TTL_MS: 'soon' }), ConfigError);
  assert.equal(d.standby, 'auto');
  assert.equal(loadClusterConfig({ QUEEN_STANDBY: ' TRUE ' }).standby, 'true');
  assert.throws(() => loadClusterConfig({ QUEEN_STANDBY: 'maybe' }), (e: unknown) => e instanceof ConfigError && /QUEEN_STANDBY/.test(e.message));
});
