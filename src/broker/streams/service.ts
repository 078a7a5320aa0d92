/**
 * The streams service the front doors call (docs/streams.md): registration, state reads, cycles
 * and the dashboard listing, on the broker's operation contract and clock, for one tenant per
 * call. Counts a committed cycle's sink messages and acked messages in the broker's counters.
 */
import { QueenError } from '../../errors.js';
import { QUEUE_MODE } from '../../model/subscription.js';
import type { Broker } from '../broker.js';
import type { StreamStateFilter, StreamStateRow } from '../../storage/contract.js';
import { runCycle, type CycleContext, type CycleRequest, type CycleResult } from './cycle.js';
import { listQueries, registerQuery, type QueryView, type RegisterInput, type RegisterResult } from './registry.js';

/** (query, partition) pairs whose last state read is remembered. */
const MAX_TRACKED_READS = 100_000;

export class StreamsService {
  private readonly ctx: CycleContext;
  /** Last state read per `query \u001f partition`, epoch ms, oldest first (bounded: a forgotten one defers a flush once). */
  private readonly reads = new Map<string, number>();

  constructor(private readonly broker: Broker) {
    this.ctx = {
      backend: broker.backend,
      get codec() { return broker.codec; },
      get maxPayloadBytes() { return broker.maxPayloadBytes; },
      checkName: (kind, name) => broker.checkName(kind, name),
      now: () => broker.clock.now(),
      pushesDiverted: () => broker.pushesDiverted?.() ?? false,
      lastStateRead: (queryId, partitionId) => this.reads.get(`${queryId}\u001f${partitionId}`),
    };
  }

  /** @throws QueenError `name_too_long`, `invalid_name` (names checked as queue names) */
  register(input: RegisterInput): Promise<RegisterResult> {
    for (const [kind, v] of [['name', input.name], ['source_queue', input.sourceQueue], ['config_hash', input.configHash], ['sink_queue', input.sinkQueue ?? '']] as const) {
      if (v !== '') this.broker.checkName(kind, v);
    }
    return registerQuery(this.broker.backend.streams, input, this.ctx.now());
  }

  /**
   * State rows of a query on one partition (none for an unknown or foreign query, or an unknown
   * partition). Remembers when
   * the partition's state was read, so an idle flush emitting rows that changed since is deferred
   * (docs/streams.md#idle-flush).
   * @throws QueenError `streams_not_found` (404) for another tenant's partition
   */
  async readState(tenant: string, queryId: string, partitionId: string, filter: StreamStateFilter): Promise<StreamStateRow[]> {
    const [target] = await this.broker.backend.readAckTargets([{ partitionId, group: QUEUE_MODE, transactionIds: [] }]);
    if (target && target.queue.tenant !== tenant) throw new QueenError('streams_not_found', 'not found');
    const k = `${queryId}\u001f${partitionId}`;
    this.reads.delete(k);
    this.reads.set(k, this.ctx.now());
    if (this.reads.size > MAX_TRACKED_READS) this.reads.delete(this.reads.keys().next().value!);
    return this.broker.backend.streams.readState(tenant, queryId, partitionId, filter);
  }

  /**
   * Runs one cycle (cycle.ts) and counts what it committed.
   * @throws what {@link runCycle} throws
   */
  async cycle(req: CycleRequest): Promise<CycleResult> {
    const r = await runCycle(this.ctx, req);
    if (r.success && r.deferred === undefined) {
      this.broker.counters.pushMessages += req.pushItems.length;
      if (r.ack_result) this.broker.counters.ackMessages += r.ack_result.count;
    }
    return r;
  }

  /** The tenant's queries with their state rows per partition (dashboard). */
  list(tenant: string, limit: number): Promise<QueryView[]> {
    return listQueries(this.broker.backend.streams, tenant, limit);
  }
}
