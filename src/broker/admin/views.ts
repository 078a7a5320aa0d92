/**
 * The operator views as one service: what the admin routes read (resources, consumer groups,
 * status and analytics, message browsing, dead letters), each answered at the broker's clock from
 * the storage contract's view reads (src/storage/contract.ts `ViewsSubStore`): one model read per
 * answer, then arithmetic; message ages and pages are point reads. Routes call these methods
 * instead of reaching the store (docs/architecture.md#layers).
 *
 * Every view takes the request's tenant (docs/proxy.md#tenancy) and reads that tenant's queues,
 * partitions, groups, messages, dead letters and traces only. The activity counters
 * (src/broker/admin/activity.ts) are kept per queue slot (tenant and name) since boot: the default
 * tenant's views read them as they are; another tenant's views read its own queues' series and
 * count its dead letters from the store; the broker-wide series (all queues) is the default
 * tenant's only (docs/proxy.md#tenant-scoped-operator-routes).
 */
import { DEFAULT_TENANT } from '../../storage/contract.js';
import { slotQueue } from '../../model/tenancy.js';
import type { DlqRow } from '../../storage/store.js';
import type { Clock } from '../../util/clock.js';
import type { Broker } from '../broker.js';
import type { ViewReads } from '../messaging/positions.js';
import { Activity } from './activity.js';
import { groupDetail, laggingPartitions, listGroups, type GroupDetail, type GroupRow, type LaggingRow } from './consumer-groups.js';
import { getMessage, listMessages, queueMessages, type MessageDetail, type MessageListQuery, type MessagePage, type QueueMessageRow } from './messages.js';
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

  /** `tenant`'s model, read now. */
  private async reads(tenant: string): Promise<ViewReads> {
    const store = this.broker.backend.views;
    return { tenant, model: await store.model(tenant), store };
  }

  /**
   * The counters `tenant`'s views read: the process's for the default tenant; for another, the
   * series of its own queues (by name), an empty broker-wide series, and the dead-letter depth of
   * its own queues read from the store.
   */
  private async activityOf(tenant: string): Promise<Activity> {
    if (tenant === DEFAULT_TENANT) return this.activity;
    const a = new Activity();
    a.seedDlqDepth(await this.broker.backend.views.dlqDepth(tenant));
    for (const [slot, series] of this.activity.queues) {
      const { tenant: owner, queue } = slotQueue(slot);
      if (owner === tenant) a.queues.set(queue, series);
    }
    return a;
  }

  /** Seconds since the broker started, on its clock. */
  uptimeSeconds(): number {
    return (this.clock.now() - this.broker.startedAt) / 1000;
  }

  // ------------------------------------------------------------ resources (docs/http-api.md#resources)
  async listQueues(tenant: string): Promise<QueueList> { return listQueues(await this.reads(tenant), await this.activityOf(tenant), this.clock.now()); }
  async queueDetail(tenant: string, queue: string): Promise<QueueDetail> {
    return queueDetail(await this.reads(tenant), await this.activityOf(tenant), queue, this.clock.now());
  }
  async overview(tenant: string): Promise<Overview> { return overview(await this.reads(tenant), await this.activityOf(tenant), this.clock.now()); }
  async namespaces(tenant: string): Promise<NamespacesView> { return namespaces(await this.reads(tenant), await this.activityOf(tenant), this.clock.now()); }
  async tasks(tenant: string): Promise<TasksView> { return tasks(await this.reads(tenant), await this.activityOf(tenant), this.clock.now()); }
  /** A keyset page of partitions, of one queue or of all (`limit` rows after the name `after`). */
  async partitions(tenant: string, queue: string | undefined, limit: number, after: string | undefined): Promise<PartitionPage> {
    const v = await this.reads(tenant);
    return queue ? partitionsOf(v, queue, limit, after, this.clock.now()) : allPartitions(v, limit, after, this.clock.now());
  }
  async depth(tenant: string, queue: string, group: string | undefined): Promise<DepthView> { return depth(await this.reads(tenant), queue, group, this.clock.now()); }

  // ------------------------------------------------------------ consumer groups
  async listGroups(tenant: string): Promise<GroupRow[]> { return listGroups(await this.reads(tenant), this.clock.now()); }
  /** Partitions whose oldest unconsumed message is at least `minLagSeconds` s old. */
  async laggingPartitions(tenant: string, minLagSeconds: number): Promise<LaggingRow[]> {
    return laggingPartitions(await this.reads(tenant), minLagSeconds, this.clock.now());
  }
  async groupDetail(tenant: string, group: string): Promise<GroupDetail> { return groupDetail(await this.reads(tenant), group, this.clock.now()); }

  // ------------------------------------------------------------ status and analytics
  async status(tenant: string, f: StatusFilter, extra: StatusExtra): Promise<StatusView> {
    return status(await this.reads(tenant), await this.activityOf(tenant), f, extra, this.clock.now());
  }
  async statusQueues(tenant: string, f: StatusFilter, limit: number, offset: number): Promise<StatusQueues> {
    return statusQueues(await this.reads(tenant), await this.activityOf(tenant), f, limit, offset, this.clock.now());
  }
  async statusQueue(tenant: string, queue: string): Promise<StatusQueueDetail> {
    return statusQueue(await this.reads(tenant), await this.activityOf(tenant), queue, this.clock.now());
  }
  async analytics(tenant: string, f: StatusFilter, interval: 'minute' | 'hour'): Promise<AnalyticsView> {
    return analytics(await this.reads(tenant), await this.activityOf(tenant), f, interval, this.clock.now());
  }

  // ------------------------------------------------------------ messages and dead letters
  async listMessages(tenant: string, q: MessageListQuery): Promise<MessagePage> {
    return listMessages(await this.reads(tenant), this.broker.codec, q, this.clock.now());
  }
  async queueMessages(tenant: string, queue: string, limit: number, offset: number): Promise<QueueMessageRow[]> {
    return queueMessages(await this.reads(tenant), this.broker.codec, queue, limit, offset, this.clock.now());
  }
  async getMessage(tenant: string, partitionId: string, transactionId: string): Promise<MessageDetail> {
    return getMessage(await this.reads(tenant), this.broker.codec, this.broker.backend.dlq, partitionId, transactionId, this.clock.now());
  }
  /** A dead letter of `tenant` by its id, or undefined (also when it is another tenant's). */
  async deadLetter(tenant: string, id: string): Promise<DlqRow | undefined> {
    const row = await this.broker.backend.dlq.get(id);
    return row && await this.owns(tenant, row.partitionId) ? row : undefined;
  }
  /** The dead letter of a message of `tenant` by its address, or undefined. */
  async deadLetterAt(tenant: string, partitionId: string, transactionId: string): Promise<DlqRow | undefined> {
    return await this.owns(tenant, partitionId) ? this.broker.backend.dlq.findByAddress(partitionId, transactionId) : undefined;
  }
  /** Whether the partition with public id `partitionId` is `tenant`'s. */
  owns(tenant: string, partitionId: string): Promise<boolean> {
    return this.broker.backend.views.locate(tenant, partitionId).then((p) => p !== undefined);
  }
}
