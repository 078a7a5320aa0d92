/** One row of `npm run bench`'s table: msg/s and req/s averages, latency percentiles in ms. */
export interface Row {
  shape: string;
  messages: number;
  batch: number;
  concurrency: number;
  msgPerSec: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  note?: string;
  /** Broker CPU time (user + system) per message over the measured window, µs; where measured. */
  cpuUsPerMsg?: number;
  /** This bench process's CPU time (the client: autocannon, TLS included) per request over the same window, µs; where measured. */
  clientCpuUsPerReq?: number;
}
