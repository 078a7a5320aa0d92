/**
 * Per-cluster usage seen by this proxy since it started (docs/proxy.md#quotas-and-limits): requests
 * forwarded and refused, the last request's time, and the Prometheus series of the proxy, each with
 * a `tenant` label (the cluster's broker tenant).
 *
 * The series every request moves (requests by outcome, by class, bytes, last request) are plain
 * counts per tenant on the request path and become prom-client values when they are scraped
 * (`collect`): a labelled `inc` hashes its label object on every call.
 */
import { Counter, Gauge, Registry } from 'prom-client';

/** Usage of one cluster. */
export interface Usage {
  requests: number;
  refused: number;
  last_request_at_ms: number | null;
}

/** What one tenant's requests moved since boot (see the module comment). */
interface Tally {
  outcomes: Map<string, number>;
  classes: Map<string, number>;
  bytes: number;
  /** Unix seconds of the last forwarded request; 0 before the first. */
  lastS: number;
}

/** Counts requests per cluster and exposes them as Prometheus series. */
export class Meter {
  readonly registry = new Registry();
  private readonly byCluster = new Map<string, Usage>();
  private readonly tallies = new Map<string, Tally>();
  private readonly requests: Counter<'tenant' | 'outcome'> = new Counter({
    name: 'queen_proxy_requests_total', help: 'Data-plane requests through the embedded proxy, by tenant and outcome',
    labelNames: ['tenant', 'outcome'] as const, registers: [this.registry],
    collect: () => this.fill(this.requests, (t, inc) => { for (const [outcome, n] of t.outcomes) inc({ outcome }, n); }),
  });
  private readonly decisions = new Counter({
    name: 'queen_proxy_limit_decisions_total',
    help: 'Rate-limit and quota refusals, by tenant and code; enforced="false" counts shadow-mode decisions that let the request through',
    labelNames: ['tenant', 'code', 'enforced'] as const, registers: [this.registry],
  });

  private readonly timeouts = new Counter({
    name: 'queen_proxy_upstream_timeouts_total', help: 'Forwarded requests the broker did not answer within the proxy budget (answered 504), by tenant',
    labelNames: ['tenant'] as const, registers: [this.registry],
  });

  private readonly byClass: Counter<'tenant' | 'class'> = new Counter({
    name: 'queen_proxy_tenant_requests_total', help: 'Requests forwarded to the broker, by tenant and route class (produce, consume, queue_admin, read, gated)',
    labelNames: ['tenant', 'class'] as const, registers: [this.registry],
    collect: () => this.fill(this.byClass, (t, inc) => { for (const [kind, n] of t.classes) inc({ class: kind }, n); }),
  });
  private readonly bytesIn: Counter<'tenant'> = new Counter({
    name: 'queen_proxy_tenant_request_bytes_total', help: 'Request body bytes (Content-Length) forwarded to the broker, by tenant',
    labelNames: ['tenant'] as const, registers: [this.registry],
    collect: () => this.fill(this.bytesIn, (t, inc) => { if (t.bytes > 0) inc({}, t.bytes); }),
  });
  private readonly lastRequest: Gauge<'tenant'> = new Gauge({
    name: 'queen_proxy_tenant_last_request_timestamp_seconds', help: 'Unix time of the last request forwarded for the tenant',
    labelNames: ['tenant'] as const, registers: [this.registry],
    collect: () => this.fill(this.lastRequest, (t, set) => { if (t.lastS > 0) set({}, t.lastS); }),
  });
  private readonly parkedPops = new Gauge({
    name: 'queen_proxy_tenant_parked_pops', help: 'Long-poll pops of the tenant parked through this proxy now',
    labelNames: ['tenant'] as const, registers: [this.registry],
  });

  private tally(tenant: string): Tally {
    let t = this.tallies.get(tenant);
    if (!t) {
      t = { outcomes: new Map(), classes: new Map(), bytes: 0, lastS: 0 };
      this.tallies.set(tenant, t);
    }
    return t;
  }

  /**
   * Sets `metric`'s series from the tallies: its `collect`, which a scrape calls before reading it.
   * `each` gives a tenant's values with their other labels (`tenant` is added).
   */
  private fill<L extends string>(metric: Counter<L> | Gauge<L>, each: (t: Tally, put: (labels: Partial<Record<L, string>>, v: number) => void) => void): void {
    metric.reset();
    for (const [tenant, t] of this.tallies) {
      const put = (labels: Partial<Record<L, string>>, v: number): void => {
        const all = { tenant, ...labels } as Partial<Record<L, string>>; // `tenant` first: the series read {tenant="…",outcome="…"}
        if (metric instanceof Counter) metric.inc(all, v);
        else metric.set(all, v);
      };
      each(t, put);
    }
  }

  /** Records a forwarded request of `tenant`: its route `kind`, body `bytes` and time `at` (ms). */
  forwarded(tenant: string, kind: string, bytes: number, at: number): void {
    const t = this.tally(tenant);
    t.classes.set(kind, (t.classes.get(kind) ?? 0) + 1);
    if (bytes > 0) t.bytes += bytes;
    t.lastS = Math.floor(at / 1000);
  }

  /** Moves the tenant's parked long-poll gauge by `delta` (+1 parked, -1 answered or gone). */
  parked(tenant: string, delta: number): void {
    this.parkedPops.inc({ tenant }, delta);
  }

  /** Records a `504 upstream_timeout` of tenant `tenant`. */
  upstreamTimeout(tenant: string): void {
    this.timeouts.inc({ tenant });
  }

  /** Records one request of `clusterId` (tenant `tenant`) with its outcome (`forwarded` or a refusal code). */
  request(clusterId: string, tenant: string, outcome: string, at: number): void {
    let u = this.byCluster.get(clusterId);
    if (!u) {
      u = { requests: 0, refused: 0, last_request_at_ms: null };
      this.byCluster.set(clusterId, u);
    }
    u.requests++;
    if (outcome !== 'forwarded') u.refused++;
    u.last_request_at_ms = at;
    const t = this.tally(tenant);
    t.outcomes.set(outcome, (t.outcomes.get(outcome) ?? 0) + 1);
  }

  /** Records a limit decision (`enforced` false in shadow mode). */
  decision(tenant: string, code: string, enforced: boolean): void {
    this.decisions.inc({ tenant, code, enforced: String(enforced) });
  }

  /** A cluster's usage (zeros when it sent nothing). */
  usage(clusterId: string): Usage {
    return { ...(this.byCluster.get(clusterId) ?? { requests: 0, refused: 0, last_request_at_ms: null }) };
  }
}
