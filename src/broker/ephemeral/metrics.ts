/**
 * Prometheus series of the ephemeral engine (docs/ephemeral.md#metrics), read at scrape time.
 * Names follow the reference where known (server/src/ephemeral.rs; partly inferred there too).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EphemeralEngine } from './engine.js';
import type { EphemeralNodes } from './nodes.js';

/** Registers the ephemeral series on `registry`. */
export function registerEphemeralMetrics(registry: Registry, engine: EphemeralEngine, nodes?: EphemeralNodes): void {
  const registers = [registry];
  const counter = (name: string, help: string, read: () => number): void => {
    let seen = 0;
    new Counter({ name, help, registers, collect() { const v = read(); if (v > seen) { this.inc(v - seen); seen = v; } } });
  };
  counter('queen_ephemeral_pushed_total', 'Ephemeral messages pushed', () => engine.counters.pushed);
  counter('queen_ephemeral_popped_total', 'Ephemeral messages delivered', () => engine.counters.popped);
  counter('queen_ephemeral_acked_total', 'Ephemeral messages acknowledged as completed', () => engine.counters.acked);
  const seen = { bounds: 0, ttl: 0, retry: 0 };
  new Counter({
    name: 'queen_ephemeral_dropped_total', help: 'Ephemeral messages dropped without an ack, by cause', labelNames: ['cause'], registers,
    collect() {
      for (const cause of ['bounds', 'ttl', 'retry'] as const) {
        const v = engine.counters.dropped[cause];
        if (v > seen[cause]) { this.inc({ cause }, v - seen[cause]); seen[cause] = v; } else this.inc({ cause }, 0);
      }
    },
  });
  new Gauge({ name: 'queen_ephemeral_bytes', help: 'Ephemeral payload bytes held by this node', registers, collect() { this.set(engine.cellBytes); } });
  new Gauge({ name: 'queen_ephemeral_queues', help: 'Ephemeral queues held by this node', registers, collect() { this.set(engine.queueCount); } });
  if (nodes) {
    counter('queen_eph_forwarded_total', 'Ephemeral requests this node relayed to the owner of their partition', () => nodes.counters.forwarded);
    const handed = { delivered: 0, lost: 0 };
    new Counter({
      name: 'queen_eph_handover_total', help: 'Ephemeral messages this node handed over to another node, by result', labelNames: ['result'], registers,
      collect() {
        for (const result of ['delivered', 'lost'] as const) {
          const v = nodes.counters[result];
          if (v > handed[result]) { this.inc({ result }, v - handed[result]); handed[result] = v; } else this.inc({ result }, 0);
        }
      },
    });
  }
  new Gauge({ name: 'queen_ephemeral_parked_consumers', help: 'Ephemeral long-poll pops parked', registers, collect() { this.set(engine.parked); } });
}
