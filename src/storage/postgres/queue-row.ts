/**
 * A stored `queen.queues` row as the contract shows it (src/storage/contract.ts `QueueConfig`,
 * docs/storage.md#postgresql-backend): options with their defaults applied.
 */
import type { QueueConfig } from '../contract.js';
import { applyOptions, QUEUE_DEFAULTS } from '../../model/options.js';
import type { Row } from './db.js';

/** The configuration of a queue row (columns `id`, `namespace`, `task`, `options`). */
export function configOf(r: Row): QueueConfig {
  const options = applyOptions({ ...QUEUE_DEFAULTS }, r.options as Record<string, unknown>);
  return { queueId: r.id as string, namespace: r.namespace as string, task: r.task as string, options };
}
