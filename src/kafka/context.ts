/**
 * What every Kafka handler receives (docs/kafka.md#mapping): the broker services, the port's
 * configuration, the topic catalog, the group coordinator, the idempotent-producer windows, the
 * fetch wake-ups and the in-flight request byte budget. Built once by the listener (server.ts).
 */
import type { Logger } from 'pino';
import type { AccessLevel } from '../auth/access-levels.js';
import type { Services } from '../broker/services.js';
import type { KafkaConfig } from '../config/kafka.js';
import type { GroupCoordinator } from './groups/coordinator.js';
import type { ProducerWindows } from './producers.js';
import type { RequestBytes } from './request-bytes.js';
import type { Topics } from './topics.js';
import type { FetchWakeups } from './wakeups.js';

export interface KafkaContext {
  services: Services;
  config: KafkaConfig;
  log: Logger;
  topics: Topics;
  groups: GroupCoordinator;
  producers: ProducerWindows;
  wakeups: FetchWakeups;
  /** The process-wide budget of request bytes read and not yet handled (request-bytes.ts). */
  requestBytes: RequestBytes;
}

/** One connection as handlers see it. */
export interface ConnectionInfo {
  clientId: string | null;
  /** `/ip` of the peer, as DescribeGroups reports it. */
  clientHost: string;
  /** The authenticated Queen subject (SASL), stamped on produced messages as producerSub. */
  subject: string | null;
  /** Whether the connection's credential passes `level` (docs/kafka.md#sasl-plain: the level of each API). */
  may(level: AccessLevel): boolean;
}
