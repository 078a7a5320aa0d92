/**
 * Per-cluster usage seen by this proxy since it started (docs/proxy.md#quotas-and-limits): requests
 * forwarded and refused, the last request's time, and the Prometheus series of the proxy, each with
 * a `tenant` label (the cluster's broker tenant).
 */
import { Counter, Gauge, Registry } from 'prom-client';

/** Usage of one cluster. */
export interface Usage {
  requests: number;
  refused: number;
  last_request_at_ms: number | null;
}

/** Counts requests per cluster and exposes them as Prometheus series. */
export class Meter {
  readonly registry = new Registry();
  private readonly byCluster = new Map<string, Usage>();
  private readonly requests = new Counter({
    name: 'queen_proxy_requests_total', help: 'Data-plane requests through the embedded proxy, by tenant and outcome',
    labelNames: ['tenant', 'outcome'] as const, registers: [this.registry],
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

  private readonly byClass = new Counter({
    name: 'queen_proxy_tenant_requests_total', help: 'Requests forwarded to the broker, by tenant and route class (produce, consume, queue_admin, read, gated)',
    labelNames: ['tenant', 'class'] as const, registers: [this.registry],
  });
  private readonly bytesIn = new Counter({
    name: 'queen_proxy_tenant_request_bytes_total', help: 'Request body bytes (Content-Length) forwarded to the broker, by tenant',
    labelNames: ['tenant'] as const, registers: [this.registry],
  });
  private readonly lastRequest = new Gauge({
    name: 'queen_proxy_tenant_last_request_timestamp_seconds', help: 'Unix time of the last request forwarded for the tenant',
    labelNames: ['tenant'] as const, registers: [this.registry],
  });
  private readonly parkedPops = new Gauge({
    name: 'queen_proxy_tenant_parked_pops', help: 'Long-poll pops of the tenant parked through this proxy now',
    labelNames: ['tenant'] as const, registers: [this.registry],
  });

  /** Records a forwarded request of `tenant`: its route `kind`, body `bytes` and time `at` (ms). */
  forwarded(tenant: string, kind: string, bytes: number, at: number): void {
    this.byClass.inc({ tenant, class: kind });
    if (bytes > 0) this.bytesIn.inc({ tenant }, bytes);
    this.lastRequest.set({ tenant }, Math.floor(at / 1000));
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
    const u = this.byCluster.get(clusterId) ?? { requests: 0, refused: 0, last_request_at_ms: null };
    u.requests++;
    if (outcome !== 'forwarded') u.refused++;
    u.last_request_at_ms = at;
    this.byCluster.set(clusterId, u);
    this.requests.inc({ tenant, outcome });
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
