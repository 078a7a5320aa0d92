/**
 * The classic group protocol in memory (docs/kafka.md#consumer-groups): one state machine per
 * group (Empty → PreparingRebalance → CompletingRebalance → Stable). The broker never reads
 * subscription or assignment bytes; it forwards them. Membership is lost on restart: members get
 * UNKNOWN_MEMBER_ID and rejoin, resuming from their committed positions (the Queen cursors).
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../errors.js';
import type { JoinGroupAnswer, JoinGroupRequestData, SyncGroupRequestData } from '../protocol/groups.js';

export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

/** The Queen group reserved for queue-mode pops, never a Kafka group. */
const QUEUE_MODE = '__QUEUE_MODE__';
/** Longest rebalance timeout honoured, ms. */
const MAX_REBALANCE_MS = 30 * 60_000;
/** Live groups kept at most. */
export const MAX_GROUPS = 10_000;
/** An empty group's state is dropped after this long without members, ms (its committed offsets stay). */
export const EMPTY_GROUP_REAP_MS = 60_000;

interface Member {
  id: string;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: { name: string; metadata: Buffer }[];
  assignment: Buffer;
  join: ((a: JoinGroupAnswer) => void) | undefined;
  sync: ((code: number, assignment: Buffer) => void) | undefined;
  session: NodeJS.Timeout | undefined;
}

interface Group {
  id: string;
  state: GroupState;
  generation: number;
  protocolType: string;
  protocol: string;
  leader: string;
  members: Map<string, Member>;
  pending: Set<string>;
  joinTimer: NodeJS.Timeout | undefined;
  joinDeadline: number;
  /** The latest the first rebalance of an empty group may close: its first join + the rebalance timeout. */
  joinCap: number;
  reapTimer: NodeJS.Timeout | undefined;
}

/** A member as DescribeGroups shows it. */
export interface MemberView {
  member_id: string;
  client_id: string;
  client_host: string;
  member_metadata: Buffer;
  member_assignment: Buffer;
}

export interface GroupView {
  group_id: string;
  group_state: GroupState;
  protocol_type: string;
  protocol_data: string;
  members: MemberView[];
}

/** True for a group id a Kafka client may use (1..255 characters, not the queue-mode group). */
export function validGroupId(id: string): boolean {
  return id.length >= 1 && id.length <= 255 && id !== QUEUE_MODE;
}

function joinError(code: number, memberId = ''): JoinGroupAnswer {
  return { error_code: code, generation_id: -1, protocol_name: '', leader: '', member_id: memberId, members: [] };
}

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();

  constructor(private readonly opts: { joinDelayMs: number; minSessionMs: number; maxSessionMs: number }) {}

  private group(id: string, create: boolean): Group | undefined {
    let g = this.groups.get(id);
    if (!g && create) {
      g = { id, state: 'Empty', generation: 0, protocolType: '', protocol: '', leader: '', members: new Map(), pending: new Set(), joinTimer: undefined, joinDeadline: 0, joinCap: 0, reapTimer: undefined };
      this.groups.set(id, g);
      this.reapLater(g);
    }
    return g;
  }

  /** JoinGroup: parks until the join window closes (see the module comment). */
  join(req: JoinGroupRequestData, version: number, clientId: string, clientHost: string): Promise<JoinGroupAnswer> {
    if (!validGroupId(req.group_id)) return Promise.resolve(joinError(ErrorCode.INVALID_GROUP_ID, req.member_id));
    if (req.session_timeout_ms < this.opts.minSessionMs || req.session_timeout_ms > this.opts.maxSessionMs) {
      return Promise.resolve(joinError(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id));
    }
    if (req.protocol_type === '' || req.protocols.length === 0) return Promise.resolve(joinError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id));
    if (!this.groups.has(req.group_id) && this.groups.size >= MAX_GROUPS) return Promise.resolve(joinError(ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id));
    const g = this.group(req.group_id, true)!;
    if (g.members.size > 0) {
      const names = new Set(req.protocols.map((p) => p.name));
      const common = [...g.members.values()].every((m) => m.protocols.some((p) => names.has(p.name)));
      if (g.protocolType !== req.protocol_type || !common) return Promise.resolve(joinError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id));
    }
    let memberId = req.member_id;
    if (memberId === '') {
      memberId = `${clientId}-${randomUUID()}`;
      if (version >= 4) {
        if (g.pending.size > 1000) g.pending.clear();
        g.pending.add(memberId);
        return Promise.resolve(joinError(ErrorCode.MEMBER_ID_REQUIRED, memberId));
      }
    } else if (!g.members.has(memberId) && !g.pending.delete(memberId)) {
      return Promise.resolve(joinError(ErrorCode.UNKNOWN_MEMBER_ID, memberId));
    }
    const wasEmpty = g.members.size === 0;
    let m = g.members.get(memberId);
    const rebalanceTimeoutMs = Math.min(MAX_REBALANCE_MS, version >= 1 ? req.rebalance_timeout_ms : req.session_timeout_ms);
    if (m) {
      m.join?.(joinError(ErrorCode.UNKNOWN_MEMBER_ID, memberId)); // a second join of one member replaces the first
      Object.assign(m, { sessionTimeoutMs: req.session_timeout_ms, rebalanceTimeoutMs, protocolType: req.protocol_type, protocols: req.protocols });
    } else {
      m = {
        id: memberId, clientId, clientHost, sessionTimeoutMs: req.session_timeout_ms, rebalanceTimeoutMs,
        protocolType: req.protocol_type, protocols: req.protocols, assignment: Buffer.alloc(0), join: undefined, sync: undefined, session: undefined,
      };
      g.members.set(memberId, m);
    }
    if (wasEmpty) g.protocolType = req.protocol_type;
    const member = m;
    const answer = new Promise<JoinGroupAnswer>((resolve) => { member.join = resolve; });
    this.touch(g, member);
    this.prepare(g, wasEmpty);
    return answer;
  }

  /** Moves to PreparingRebalance and (re)arms the join window. */
  private prepare(g: Group, initial: boolean): void {
    const now = Date.now();
    const longest = Math.max(...[...g.members.values()].map((m) => m.rebalanceTimeoutMs));
    if (g.state !== 'PreparingRebalance') {
      for (const m of g.members.values()) {
        m.sync?.(ErrorCode.REBALANCE_IN_PROGRESS, Buffer.alloc(0));
        m.sync = undefined;
      }
      g.state = 'PreparingRebalance';
      g.joinCap = now + longest;
      g.joinDeadline = now + (initial ? Math.min(this.opts.joinDelayMs, longest) : longest);
      this.arm(g);
    } else if (initial || g.generation === 0) {
      // The first rebalance of an empty group waits one more delay per arriving member, bounded by
      // the rebalance timeout counted from its first join.
      g.joinDeadline = Math.min(now + this.opts.joinDelayMs, g.joinCap);
      this.arm(g);
    }
    if (!initial && g.generation > 0 && [...g.members.values()].every((x) => x.join)) this.completeJoin(g);
  }

  private arm(g: Group): void {
    clearTimeout(g.joinTimer);
    g.joinTimer = setTimeout(() => this.completeJoin(g), Math.max(0, g.joinDeadline - Date.now()));
  }

  private completeJoin(g: Group): void {
    clearTimeout(g.joinTimer);
    g.joinTimer = undefined;
    if (g.state !== 'PreparingRebalance') return;
    for (const m of [...g.members.values()]) if (!m.join) this.remove(g, m);
    if (g.members.size === 0) {
      this.empty(g);
      return;
    }
    const members = [...g.members.values()];
    const leader = members[0]!;
    const protocol = leader.protocols.find((p) => members.every((m) => m.protocols.some((q) => q.name === p.name)))?.name ?? leader.protocols[0]!.name;
    g.generation++;
    g.protocol = protocol;
    g.leader = leader.id;
    g.state = 'CompletingRebalance';
    for (const m of members) {
      const join = m.join!;
      m.join = undefined;
      this.touch(g, m);
      join({
        error_code: 0, generation_id: g.generation, protocol_name: protocol, leader: leader.id, member_id: m.id,
        members: m === leader ? members.map((x) => ({ member_id: x.id, metadata: x.protocols.find((p) => p.name === protocol)?.metadata ?? Buffer.alloc(0) })) : [],
      });
    }
  }

  private remove(g: Group, m: Member): void {
    clearTimeout(m.session);
    m.join?.(joinError(ErrorCode.UNKNOWN_MEMBER_ID, m.id));
    m.sync?.(ErrorCode.UNKNOWN_MEMBER_ID, Buffer.alloc(0));
    g.members.delete(m.id);
  }

  /** Resets the member's session timer. */
  private touch(g: Group, m: Member): void {
    clearTimeout(m.session);
    m.session = setTimeout(() => {
      if (g.members.get(m.id) !== m || m.join) return;
      this.remove(g, m);
      if (g.members.size === 0) this.empty(g);
      else this.prepare(g, false);
    }, m.sessionTimeoutMs);
    m.session.unref();
  }

  private empty(g: Group): void {
    clearTimeout(g.joinTimer);
    g.state = 'Empty';
    g.generation++;
    this.reapLater(g);
  }

  /** Drops `g` after {@link EMPTY_GROUP_REAP_MS} if it is still without members then. */
  private reapLater(g: Group): void {
    clearTimeout(g.reapTimer);
    g.reapTimer = setTimeout(() => {
      if (g.members.size === 0 && g.state === 'Empty' && this.groups.get(g.id) === g) this.groups.delete(g.id);
    }, EMPTY_GROUP_REAP_MS);
    g.reapTimer.unref();
  }

  /** SyncGroup: the leader's assignments are handed to every member. */
  sync(req: SyncGroupRequestData): Promise<{ error_code: number; assignment: Buffer }> {
    const g = this.groups.get(req.group_id);
    const m = g?.members.get(req.member_id);
    if (!g || !m) return Promise.resolve({ error_code: ErrorCode.UNKNOWN_MEMBER_ID, assignment: Buffer.alloc(0) });
    if (req.generation_id !== g.generation) return Promise.resolve({ error_code: ErrorCode.ILLEGAL_GENERATION, assignment: Buffer.alloc(0) });
    if (g.state === 'PreparingRebalance') return Promise.resolve({ error_code: ErrorCode.REBALANCE_IN_PROGRESS, assignment: Buffer.alloc(0) });
    this.touch(g, m);
    if (g.state === 'Stable') return Promise.resolve({ error_code: 0, assignment: m.assignment });
    if (m.id === g.leader) {
      const given = new Map(req.assignments.map((a) => [a.member_id, a.assignment]));
      g.state = 'Stable';
      for (const x of g.members.values()) {
        x.assignment = given.get(x.id) ?? Buffer.alloc(0);
        const s = x.sync;
        x.sync = undefined;
        s?.(0, x.assignment);
      }
      return Promise.resolve({ error_code: 0, assignment: m.assignment });
    }
    return new Promise((resolve) => {
      m.sync?.(ErrorCode.REBALANCE_IN_PROGRESS, Buffer.alloc(0));
      m.sync = (error_code, assignment) => resolve({ error_code, assignment });
    });
  }

  /** Heartbeat: NONE while stable or completing, REBALANCE_IN_PROGRESS while preparing. */
  heartbeat(groupId: string, generation: number, memberId: string): number {
    const g = this.groups.get(groupId);
    const m = g?.members.get(memberId);
    if (!g || !m) return ErrorCode.UNKNOWN_MEMBER_ID;
    this.touch(g, m);
    if (g.state === 'PreparingRebalance') return ErrorCode.REBALANCE_IN_PROGRESS;
    if (generation !== g.generation) return ErrorCode.ILLEGAL_GENERATION;
    return 0;
  }

  /** LeaveGroup (one member): removes it and starts a rebalance of the rest. */
  leave(groupId: string, memberId: string): number {
    const g = this.groups.get(groupId);
    const m = g?.members.get(memberId);
    if (!g || !m) return ErrorCode.UNKNOWN_MEMBER_ID;
    this.remove(g, m);
    if (g.members.size === 0) this.empty(g);
    else this.prepare(g, false);
    return 0;
  }

  /**
   * Whether an OffsetCommit may write: a current member and generation, or generation −1 with an
   * empty member id (a simple `assign()` consumer) while the group has no live members.
   */
  commitAllowed(groupId: string, generation: number, memberId: string): number {
    const g = this.groups.get(groupId);
    if (generation === -1 && memberId === '') return !g || g.members.size === 0 ? 0 : ErrorCode.UNKNOWN_MEMBER_ID;
    const m = g?.members.get(memberId);
    if (!g || !m) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (generation !== g.generation) return ErrorCode.ILLEGAL_GENERATION;
    this.touch(g, m);
    return 0;
  }

  /** Live members of a group (0 when unknown). */
  size(groupId: string): number {
    return this.groups.get(groupId)?.members.size ?? 0;
  }

  /** Every live group with its state and protocol type. */
  list(): { group_id: string; protocol_type: string; group_state: GroupState }[] {
    return [...this.groups.values()].map((g) => ({ group_id: g.id, protocol_type: g.protocolType, group_state: g.state }));
  }

  /** DescribeGroups' view; unknown → Dead. */
  describe(groupId: string): GroupView {
    const g = this.groups.get(groupId);
    if (!g) return { group_id: groupId, group_state: 'Dead', protocol_type: '', protocol_data: '', members: [] };
    return {
      group_id: g.id, group_state: g.state, protocol_type: g.protocolType, protocol_data: g.state === 'Stable' || g.state === 'CompletingRebalance' ? g.protocol : '',
      members: [...g.members.values()].map((m) => ({
        member_id: m.id, client_id: m.clientId, client_host: m.clientHost,
        member_metadata: m.protocols.find((p) => p.name === g.protocol)?.metadata ?? Buffer.alloc(0), member_assignment: m.assignment,
      })),
    };
  }

  /** Forgets an empty group (DeleteGroups). */
  forget(groupId: string): void {
    const g = this.groups.get(groupId);
    if (g && g.members.size === 0) this.groups.delete(groupId);
  }

  /** Stops every timer (shutdown); parked joins and syncs are answered with COORDINATOR_NOT_AVAILABLE. */
  stop(): void {
    for (const g of this.groups.values()) {
      clearTimeout(g.joinTimer);
      clearTimeout(g.reapTimer);
      for (const m of g.members.values()) {
        clearTimeout(m.session);
        m.join?.(joinError(ErrorCode.COORDINATOR_NOT_AVAILABLE, m.id));
        m.sync?.(ErrorCode.COORDINATOR_NOT_AVAILABLE, Buffer.alloc(0));
      }
    }
    this.groups.clear();
  }
}
