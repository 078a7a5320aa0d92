/**
 * The operator views as one service: what the admin routes read (resources, consumer groups,
 * status and analytics, message browsing, dead letters), each answered at the broker's clock.
 * Routes call these methods instead of reaching the engine or the store
 * (docs/architecture.md#layers).
 */
import type { DlqRow } from '../../storage/store.js';
import type { Clock } from '../../util/clock.js';
import type { Broker } from '../broker.js';
import type { Activity } from './activity.js';
import { groupDetail, laggingPartitions, listGroups, type GroupDetail, type GroupRow, type LaggingRow } from './consumer-groups.js';
import { getMessage, listMessages, type MessageDetail, type MessageListQuery, type MessagePage } from './messages.js';
import {
  allPartitions, depth, listQueues, namespaces, overview, partitionsOf, queueDetail, tasks,
  type DepthView, type NamespacesView, type Overview, type PartitionPage, type QueueDetail, type QueueList, type TasksView,
} from './resources.js';
import {
  analytics, status, statusQueue, statusQueues,
  type AnalyticsView, type StatusExtra, type StatusFilter, type StatusQueueDetail, type StatusQueues, type StatusView,
} from './status.js';

/** Read-only operator views over one broker (see the module comment). */
export class AdminViews {
  readonly clock: Clock;

  constructor(private readonly broker: Broker, private readonly activity: Activity) {
    this.clock = broker.engine.clock;
  }

  private get engine() {
    return this.broker.engine;
  }

  /** Seconds since the broker started, on its clock. */
  uptimeSeconds(): number {
    return (this.clock.now() - this.broker.startedAt) / 1000;
  }

  // ------------------------------------------------------------ resources (docs/http-api.md#resources)
  listQueues(): QueueList { return listQueues(this.engine, this.activity, this.clock.now()); }
  queueDetail(queue: string): QueueDetail { return queueDetail(this.engine, this.activity, queue, this.clock.now()); }
  overview(): Overview { return overview(this.engine, this.activity, this.clock.now()); }
  namespaces(): NamespacesView { return namespaces(this.engine, this.activity, this.clock.now()); }
  tasks(): TasksView { return tasks(this.engine, this.activity, this.clock.now()); }
  /** A keyset page of partitions, of one queue or of all (`limit` rows after the name `after`). */
  partitions(queue: string | undefined, limit: number, after: string | undefined): PartitionPage {
    return queue ? partitionsOf(this.engine, queue, limit, after, this.clock.now()) : allPartitions(this.engine, limit, after, this.clock.now());
  }
  depth(queue: string, group: string | undefined): DepthView { return depth(this.engine, queue, group, this.clock.now()); }

  // ------------------------------------------------------------ consumer groups
  listGroups(): GroupRow[] { return listGroups(this.engine, this.clock.now()); }
  /** Partitions whose oldest unconsumed message is at least `minLagSeconds` s old. */
  laggingPartitions(minLagSeconds: number): LaggingRow[] { return laggingPartitions(this.engine, minLagSeconds, this.clock.now()); }
  groupDetail(group: string): GroupDetail { return groupDetail(this.engine, group, this.clock.now()); }

  // ------------------------------------------------------------ status and analytics
  status(f: StatusFilter, extra: StatusExtra): StatusView { return status(this.engine, this.activity, f, extra, this.clock.now()); }
  statusQueues(f: StatusFilter, limit: number, offset: number): StatusQueues { return statusQueues(this.engine, this.activity, f, limit, offset, this.clock.now()); }
  statusQueue(queue: string): StatusQueueDetail { return statusQueue(this.engine, this.activity, queue, this.clock.now()); }
  analytics(f: StatusFilter, interval: 'minute' | 'hour'): AnalyticsView { return analytics(this.engine, this.activity, f, interval, this.clock.now()); }

  // ------------------------------------------------------------ messages and dead letters
  listMessages(q: MessageListQuery): MessagePage { return listMessages(this.engine, q); }
  getMessage(partitionId: string, transactionId: string): MessageDetail { return getMessage(this.engine, partitionId, transactionId); }
  /** A dead letter by its id, or undefined. */
  deadLetter(id: string): Promise<DlqRow | undefined> { return this.broker.backend.dlq.get(id); }
  /** The dead letter of a message by its address, or undefined. */
  deadLetterAt(partitionId: string, transactionId: string): Promise<DlqRow | undefined> { return this.broker.backend.dlq.findByAddress(partitionId, transactionId); }
}
