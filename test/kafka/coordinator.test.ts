/**
 * The classic group protocol state machine (src/kafka/groups/coordinator.ts,
 * docs/kafka.md#consumer-groups) driven directly: member ids at v4, leader election and
 * forwarded assignments, rebalance on a new member, session expiry, commit membership rules.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCode } from '../../src/kafka/errors.js';
import { GroupCoordinator } from '../../src/kafka/groups/coordinator.js';
import type { JoinGroupRequestData } from '../../src/kafka/protocol/groups.js';
import { waitFor } from '../helpers/wait.js';

function joinReq(group: string, member: string, session = 10_000): JoinGroupRequestData {
  return {
    group_id: group, session_timeout_ms: session, rebalance_timeout_ms: 2000, member_id: member, protocol_type: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from(`meta-${member}`) }, { name: 'roundrobin', metadata: Buffer.from('rr') }],
  };
}

describe('group coordinator', () => {
  test('v4: MEMBER_ID_REQUIRED, then one join window; the leader gets every member, followers their assignment', async () => {
    const gc = new GroupCoordinator({ joinDelayMs: 50, minSessionMs: 10, maxSessionMs: 60_000 });
    const a0 = await gc.join(joinReq('g', ''), 4, 'client-a', '/127.0.0.1');
    assert.equal(a0.error_code, ErrorCode.MEMBER_ID_REQUIRED);
    assert.match(a0.member_id, /^client-a-/);
    const b0 = await gc.join(joinReq('g', ''), 4, 'client-b', '/127.0.0.1');
    const [a, b] = await Promise.all([gc.join(joinReq('g', a0.member_id), 4, 'client-a', '/h'), gc.join(joinReq('g', b0.member_id), 4, 'client-b', '/h')]);
    assert.equal(a.generation_id, 1);
    assert.equal(a.leader, a0.member_id, 'the earliest member leads');
    assert.equal(a.protocol_name, 'range');
    assert.deepEqual(a.members.map((m) => m.member_id), [a0.member_id, b0.member_id]);
    assert.deepEqual(b.members, [], 'followers get no member list');
    const followerSync = gc.sync({ group_id: 'g', generation_id: 1, member_id: b0.member_id, assignments: [] });
    const leaderSync = await gc.sync({ group_id: 'g', generation_id: 1, member_id: a0.member_id, assignments: [
      { member_id: a0.member_id, assignment: Buffer.from('A') }, { member_id: b0.member_id, assignment: Buffer.from('B') }] });
    assert.equal(leaderSync.assignment.toString(), 'A');
    assert.equal((await followerSync).assignment.toString(), 'B');
    assert.equal(gc.describe('g').group_state, 'Stable');
    assert.equal(gc.heartbeat('g', 1, b0.member_id), 0);
    assert.equal(gc.heartbeat('g', 0, b0.member_id), ErrorCode.ILLEGAL_GENERATION);
    assert.equal(gc.heartbeat('g', 1, 'nobody'), ErrorCode.UNKNOWN_MEMBER_ID);
    gc.stop();
  });

  test('a new member starts a rebalance: heartbeats answer REBALANCE_IN_PROGRESS until everyone rejoined', async () => {
    const gc = new GroupCoordinator({ joinDelayMs: 0, minSessionMs: 10, maxSessionMs: 60_000 });
    const a = await gc.join(joinReq('g', ''), 3, 'a', '/h');
    await gc.sync({ group_id: 'g', generation_id: a.generation_id, member_id: a.member_id, assignments: [{ member_id: a.member_id, assignment: Buffer.from('all') }] });
    const joiningB = gc.join(joinReq('g', ''), 3, 'b', '/h');
    assert.equal(gc.heartbeat('g', a.generation_id, a.member_id), ErrorCode.REBALANCE_IN_PROGRESS);
    assert.equal((await gc.sync({ group_id: 'g', generation_id: a.generation_id, member_id: a.member_id, assignments: [] })).error_code, ErrorCode.REBALANCE_IN_PROGRESS);
    const [a2, b2] = await Promise.all([gc.join(joinReq('g', a.member_id), 3, 'a', '/h'), joiningB]);
    assert.equal(a2.generation_id, a.generation_id + 1);
    assert.equal(b2.generation_id, a2.generation_id);
    assert.equal(gc.describe('g').group_state, 'CompletingRebalance');
    assert.equal(gc.heartbeat('g', a2.generation_id, b2.member_id), 0, 'NONE while completing');
    gc.stop();
  });

  test('a silent member is removed after its session timeout and the rest rebalance', async () => {
    const gc = new GroupCoordinator({ joinDelayMs: 0, minSessionMs: 10, maxSessionMs: 60_000 });
    const [a, b] = await Promise.all([gc.join(joinReq('g', '', 5000), 3, 'a', '/h'), gc.join(joinReq('g', '', 100), 3, 'b', '/h')]);
    assert.equal(gc.size('g'), 2);
    await gc.sync({ group_id: 'g', generation_id: a.generation_id, member_id: a.leader, assignments: [] });
    // b never heartbeats; a's heartbeat eventually reports the rebalance.
    await waitFor(() => gc.heartbeat('g', a.generation_id, a.member_id) === ErrorCode.REBALANCE_IN_PROGRESS, { what: 'b to expire' });
    assert.equal(gc.size('g'), 1);
    assert.equal(gc.heartbeat('g', b.generation_id, b.member_id), ErrorCode.UNKNOWN_MEMBER_ID);
    gc.stop();
  });

  test('commits: the current member and generation, or generation -1 without a member only while the group is empty', async () => {
    const gc = new GroupCoordinator({ joinDelayMs: 0, minSessionMs: 10, maxSessionMs: 60_000 });
    assert.equal(gc.commitAllowed('g', -1, ''), 0);
    const a = await gc.join(joinReq('g', ''), 3, 'a', '/h');
    assert.equal(gc.commitAllowed('g', -1, ''), ErrorCode.UNKNOWN_MEMBER_ID);
    assert.equal(gc.commitAllowed('g', a.generation_id, a.member_id), 0);
    assert.equal(gc.commitAllowed('g', a.generation_id + 1, a.member_id), ErrorCode.ILLEGAL_GENERATION);
    assert.equal(gc.leave('g', a.member_id), 0);
    assert.equal(gc.commitAllowed('g', -1, ''), 0);
    assert.equal(gc.leave('g', a.member_id), ErrorCode.UNKNOWN_MEMBER_ID);
    gc.stop();
  });

  test('bad session timeouts, group ids and protocol sets are refused', async () => {
    const gc = new GroupCoordinator({ joinDelayMs: 0, minSessionMs: 6000, maxSessionMs: 300_000 });
    assert.equal((await gc.join(joinReq('g', '', 10), 4, 'a', '/h')).error_code, ErrorCode.INVALID_SESSION_TIMEOUT);
    assert.equal((await gc.join(joinReq('', ''), 4, 'a', '/h')).error_code, ErrorCode.INVALID_GROUP_ID);
    assert.equal((await gc.join(joinReq('__QUEUE_MODE__', ''), 4, 'a', '/h')).error_code, ErrorCode.INVALID_GROUP_ID);
    assert.equal((await gc.join({ ...joinReq('g', ''), protocols: [] }, 4, 'a', '/h')).error_code, ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    assert.equal((await gc.join(joinReq('g', 'made-up'), 4, 'a', '/h')).error_code, ErrorCode.UNKNOWN_MEMBER_ID);
    gc.stop();
  });
});
