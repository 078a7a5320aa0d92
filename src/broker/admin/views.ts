/**
 * The operator views as one service: what the admin routes read (resources, consumer groups,
 * status and analytics, message browsing, dead letters), each answered at the broker's clock from
 * the storage contract's view reads (src/storage/contract.ts `ViewsSubStore`): one model read per
 * answer, then arithmetic; message ages and pages are point reads. Routes call these methods
 * instead of reaching the store (docs/architecture.md#layers).
 */
import { DEFAULT_TENANT } from '../../storage/contract.js';
import type { DlqRow } from '../../storage/store.js';
import type { Clock } from '../../util/clock.js';
import type { Broker } from '../broker.js';
import type { ViewReads } from '../messaging/positions.js';
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
    this.clock = broker.clock;
  }

  /** The default tenant's model, read now (the proxy will pass the request's tenant). */
  private async reads(tenant: string = DEFAULT_TENANT): Promise<ViewReads> {
    const store = this.broker.backend.views;
    return { tenant, model: await store.model(tenant), store };
  }

  /** Seconds since the broker started, on its clock. */
  uptimeSeconds(): number {
    return (this.clock.now() - this.broker.startedAt) / 1000;
  }

  // ------------------------------------------------------------ resources (docs/http-api.md#resources)
  async listQueues(): Promise<QueueList> { return listQueues(await this.reads(), this.activity, this.clock.now()); }
  async queueDetail(queue: string): Promise<QueueDetail> { return queueDetail(await this.reads(), this.activity, queue, this.clock.now()); }
  async overview(): Promise<Overview> { return overview(await this.reads(), this.activity, this.clock.now()); }
  async namespaces(): Promise<NamespacesView> { return namespaces(await this.reads(), this.activity, this.clock.now()); }
  async tasks(): Promise<TasksView> { return tasks(await this.reads(), this.activity, this.clock.now()); }
  /** A keyset page of partitions, of one queue or of all (`limit` rows after the name `after`). */
  async partitions(queue: string | undefined, limit: number, after: string | undefined): Promise<PartitionPage> {
    const v = await this.reads();
    return queue ? partitionsOf(v, queue, limit, after, this.clock.now()) : allPartitions(v, limit, after, this.clock.now());
  }
  async depth(queue: string, group: string | undefined): Promise<DepthView> { return depth(await this.reads(), queue, group, this.clock.now()); }

  // ------------------------------------------------------------ consumer groups
  async listGroups(): Promise<GroupRow[]> { return listGroups(await this.reads(), this.clock.now()); }
  /** Partitions whose oldest unconsumed message is at least `minLagSeconds` s old. */
  async laggingPartitions(minLagSeconds: number): Promise<LaggingRow[]> { return laggingPartitions(await this.reads(), minLagSeconds, this.clock.now()); }
  async groupDetail(group: string): Promise<GroupDetail> { return groupDetail(await this.reads(), group, this.clock.now()); }

  // ------------------------------------------------------------ status and analytics
  async status(f: StatusFilter, extra: StatusExtra): Promise<StatusView> { return status(await this.reads(), this.activity, f, extra, this.clock.now()); }
  async statusQueues(f: StatusFilter, limit: number, offset: number): Promise<StatusQueues> {
    return statusQueues(await this.reads(), this.activity, f, limit, offset, this.clock.now());
  }
  async statusQueue(queue: string): Promise<StatusQueueDetail> { return statusQueue(await this.reads(), this.activity, queue, this.clock.now()); }
  async analytics(f: StatusFilter, interval: 'minute' | 'hour'): Promise<AnalyticsView> {
    return analytics(await this.reads(), this.activity, f, interval, this.clock.now());
  }

  // ------------------------------------------------------------ messages and dead letters
  async listMessages(q: MessageListQuery): Promise<MessagePage> { return listMessages(await this.reads(), this.broker.codec, q, this.clock.now()); }
  async getMessage(partitionId: string, transactionId: string): Promise<MessageDetail> {
    return getMessage(await this.reads(), this.broker.codec, this.broker.backend.dlq, partitionId, transactionId, this.clock.now());
  }
  /** A dead letter by its id, or undefined. */
  deadLetter(id: string): Promise<DlqRow | undefined> { return this.broker.backend.dlq.get(id); }
  /** The dead letter of a message by its address, or undefined. */
  deadLetterAt(partitionId: string, transactionId: string): Promise<DlqRow | undefined> { return this.broker.backend.dlq.findByAddress(partitionId, transactionId); }
}
