/**
 * Per-cluster quotas beyond the request rate (docs/proxy.md#quotas-and-limits; public reference
 * `proxy/src/limits.rs`, `server/src/quota.rs`): `max_queues` and `max_retention_seconds` (checked
 * on the parsed body of a push or a configure, through the broker router's quota hook),
 * `max_batch_items` (a size cap, always enforced) and `max_parked_pops` (long-polls parked at once,
 * counted here). A quota over its limit answers `403 quota_exceeded` when enforcing; with
 * `QUEEN_PROXY_ENFORCE=false` it is logged and counted (`queen_proxy_limit_decisions_total`,
 * `enforced="false"`) and the request goes on.
 */
import type { Logger } from 'pino';
import type { Limits } from '../auth/proxy/state.js';
import { QueenError } from '../errors.js';
import type { QuotaCheck } from '../model/in-process.js';
import type { BrokerCall } from './forward.js';
import type { Meter } from './meter.js';

type Obj = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Quota decisions of the proxy: queue names known per tenant, parked long-polls per cluster. */
export class Quotas {
  /** Queue names seen per broker tenant; refreshed from the broker when a request names one not in it. */
  private readonly known = new Map<string, Set<string>>();
  private readonly parked = new Map<string, number>();

  constructor(private readonly broker: BrokerCall, private readonly meter: Meter, private readonly log: Logger, private readonly enforce: boolean) {}

  /**
   * Records a quota over its limit: throws `quota_exceeded` when enforcing, else logs and lets it pass.
   * @throws QueenError `quota_exceeded` (403)
   */
  over(tenant: string, cluster: string, limit: string, message: string): void {
    this.meter.decision(tenant, 'quota_exceeded', this.enforce);
    if (this.enforce) throw new QueenError('quota_exceeded', message);
    this.log.warn({ cluster, limit, code: 'quota_exceeded' }, 'shadow mode: request over a cluster quota let through (QUEEN_PROXY_ENFORCE=false)');
  }

  /**
   * Takes a parked long-poll slot of `cluster` (limit `max`, undefined = unlimited); the returned
   * function gives it back. Over the limit: see {@link over}.
   */
  park(tenant: string, cluster: string, slug: string, max: number | undefined): () => void {
    const n = this.parked.get(cluster) ?? 0;
    if (max !== undefined && n >= max) this.over(tenant, slug, 'max_parked_pops', `the plan allows ${max} parked long-polls at once`);
    this.parked.set(cluster, n + 1);
    this.meter.parked(tenant, 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.meter.parked(tenant, -1);
      const left = (this.parked.get(cluster) ?? 1) - 1;
      if (left <= 0) this.parked.delete(cluster);
      else this.parked.set(cluster, left);
    };
  }

  /** The check the broker router runs on a forwarded request's parsed body, for cluster `slug` with `limits`. */
  check(slug: string, limits: Limits): QuotaCheck {
    return async ({ method, path, body, tenant }) => {
      if (method !== 'POST' || typeof body !== 'object' || body === null) return;
      const b = body as Obj;
      let names: string[];
      if (path === '/api/v1/push' && Array.isArray(b.items)) {
        const cap = num(limits.max_batch_items);
        if (cap !== undefined && b.items.length > cap) throw new QueenError('payload_too_large', `items has ${b.items.length} entries; the plan allows ${cap}`);
        names = (b.items as unknown[]).map((i) => (typeof i === 'object' && i !== null ? (i as Obj).queue : undefined)).filter((q): q is string => typeof q === 'string');
      } else if (path === '/api/v1/configure' && typeof b.queue === 'string') {
        names = [b.queue];
        const options = typeof b.options === 'object' && b.options !== null ? b.options as Obj : {};
        const max = num(limits.max_retention_seconds);
        for (const k of ['retentionSeconds', 'completedRetentionSeconds']) {
          const v = num(options[k]);
          if (max !== undefined && v !== undefined && v > max) this.over(tenant, slug, 'max_retention_seconds', `${k} ${v} is over the plan's ${max} s`);
        }
      } else {
        return;
      }
      const max = num(limits.max_queues);
      if (max === undefined || names.length === 0) return;
      const fresh = async () => {
        const r = await this.broker(tenant, 'GET', '/api/v1/resources/queues');
        const list = (r.body as Obj | undefined)?.queues;
        const set = new Set(Array.isArray(list) ? list.map((q) => String((q as Obj).name)) : []);
        this.known.set(tenant, set);
        return set;
      };
      let known = this.known.get(tenant) ?? await fresh();
      if (names.some((n) => !known.has(n))) known = await fresh();
      const added = new Set(names.filter((n) => !known.has(n)));
      if (added.size > 0 && known.size + added.size > max) {
        this.over(tenant, slug, 'max_queues', `the plan allows ${max} queues; this request would make ${known.size + added.size}`);
      }
      for (const n of added) known.add(n);
    };
  }
}
