/**
 * Prometheus series of the Kafka port, registered on the broker's registry
 * (src/observability/metrics.ts): open connections, long-poll fetches parked, requests per API,
 * errors per code.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export class KafkaMetrics {
  private readonly requests: Counter<'api'>;
  private readonly errors: Counter<'code'>;

  constructor(registry: Registry, connections: () => number, parkedFetches: () => number) {
    const registers = [registry];
    new Gauge({ name: 'queen_kafka_connections', help: 'Open Kafka connections', registers, collect() { this.set(connections()); } });
    new Gauge({ name: 'queen_kafka_fetches_parked', help: 'Kafka Fetch requests waiting for records (long poll)', registers, collect() { this.set(parkedFetches()); } });
    this.requests = new Counter({ name: 'queen_kafka_requests_total', help: 'Kafka requests answered, per API', labelNames: ['api'], registers });
    this.errors = new Counter({ name: 'queen_kafka_errors_total', help: 'Kafka error codes answered (top level and per partition), per code', labelNames: ['code'], registers });
  }

  /** Counts one request of `api` and its top-level error code. */
  request(api: string, code: number): void {
    this.requests.inc({ api });
    if (code !== 0) this.errors.inc({ code: String(code) });
  }

  /** Counts per-topic and per-partition error codes of a response body (two levels down). */
  nestedErrors(body: Record<string, unknown>): void {
    for (const v of Object.values(body)) {
      if (!Array.isArray(v)) continue;
      for (const t of v as unknown[]) {
        if (typeof t !== 'object' || t === null) continue;
        const tc = (t as Record<string, unknown>).error_code;
        if (typeof tc === 'number' && tc !== 0) this.errors.inc({ code: String(tc) });
        for (const w of Object.values(t)) {
          if (!Array.isArray(w)) continue;
          for (const p of w as unknown[]) {
            const pc = typeof p === 'object' && p !== null ? (p as Record<string, unknown>).error_code : undefined;
            if (typeof pc === 'number' && pc !== 0) this.errors.inc({ code: String(pc) });
          }
        }
      }
    }
  }
}
