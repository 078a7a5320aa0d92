/**
 * Ephemeral queues: RAM-only queues this node holds, with depth, parked consumers and in-flight
 * leases per queue (docs/ephemeral.md#status-reads: `GET /api/v1/ephemeral/queues`).
 */
import { api, arr, num, obj, str } from '../api';
import { Badge, Card, Empty, LoadError, Loading, PageHeader, Stat } from '../components/ui';
import { fmtCompact, fmtInt } from '../format';
import { usePoll } from '../live';

/** One ephemeral queue as the page shows it (`bytes` in bytes). */
export interface EphemeralQueueRow {
  queue: string;
  tier: string;
  depth: number;
  bytes: number;
  partitions: number;
  groups: number;
  parked: number;
  inFlight: number;
  drops: number;
}

/** What the page reads: the queue rows and this node's ephemeral bytes. */
export interface EphemeralListing {
  queues: EphemeralQueueRow[];
  cellBytes: number;
}

/** Reads `GET /api/v1/ephemeral/queues`; `drops` is the sum of the bounds, TTL and retry drop counters. */
export function readEphemeral(body: unknown): EphemeralListing {
  const b = obj(body);
  return {
    cellBytes: num(b.cellBytes),
    queues: arr(b.queues).map((x) => {
      const q = obj(x);
      const d = obj(q.drops);
      return {
        queue: str(q.queue), tier: str(q.tier), depth: num(q.depth), bytes: num(q.bytes), partitions: num(q.partitions),
        groups: num(q.groups), parked: num(q.parked), inFlight: num(q.inFlight), drops: num(d.bounds) + num(d.ttl) + num(d.retry),
      };
    }),
  };
}

/** Bytes → "512 B", "1.5 KiB", "3.2 MiB". */
function fmtBytes(n: number): string {
  if (n < 1024) return `${fmtInt(n)} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(1)} GiB`;
}

export function Ephemeral() {
  const data = usePoll(async (signal) => readEphemeral(await api('/api/v1/ephemeral/queues', { signal })), 'ephemeral');
  const qs = data.data?.queues ?? [];
  const sum = (f: (q: EphemeralQueueRow) => number) => qs.reduce((a, q) => a + f(q), 0);
  return (
    <div class="page">
      <PageHeader title="Ephemeral queues" subtitle="RAM-only queues held by this node: what waits, who waits for it, and what is leased. Contents never reach the disk." />
      {data.data && (
        <div class="stats">
          <Stat label="Queues" value={fmtInt(qs.length)} testid="eph-stat-queues" />
          <Stat label="Depth" value={fmtCompact(sum((q) => q.depth))} hint={fmtBytes(data.data.cellBytes)} testid="eph-stat-depth" />
          <Stat label="Parked consumers" value={fmtInt(sum((q) => q.parked))} hint="long polls waiting" testid="eph-stat-parked" />
          <Stat label="In flight" value={fmtInt(sum((q) => q.inFlight))} hint="leased, not yet acked" testid="eph-stat-inflight" />
        </div>
      )}
      <Card pad={false}>
        {data.error ? (
          <LoadError error={data.error} what="ephemeral queues" />
        ) : !data.data ? (
          <Loading />
        ) : qs.length === 0 ? (
          <Empty icon="queues" title="No ephemeral queues on this node">
            A queue appears on its first <code>POST /api/v1/ephemeral/push</code> or <code>/configure</code>.
          </Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="ephemeral-table">
              <thead>
                <tr>
                  <th>Queue</th>
                  <th>Tier</th>
                  <th class="num">Depth</th>
                  <th class="num">Parked</th>
                  <th class="num">In flight</th>
                  <th class="num hide-sm">Bytes</th>
                  <th class="num hide-sm">Partitions</th>
                  <th class="num hide-md">Groups</th>
                  <th class="num hide-md">Dropped</th>
                </tr>
              </thead>
              <tbody>
                {qs.map((q) => (
                  <tr key={q.queue} data-queue={q.queue}>
                    <td class="strong">{q.queue}</td>
                    <td><Badge tone={q.tier === 'declared' ? 'info' : 'neutral'}>{q.tier}</Badge></td>
                    <td class="num" data-testid="eph-depth">{fmtInt(q.depth)}</td>
                    <td class="num" data-testid="eph-parked">{fmtInt(q.parked)}</td>
                    <td class="num" data-testid="eph-inflight">{fmtInt(q.inFlight)}</td>
                    <td class="num hide-sm">{fmtBytes(q.bytes)}</td>
                    <td class="num hide-sm">{fmtInt(q.partitions)}</td>
                    <td class="num hide-md">{fmtInt(q.groups)}</td>
                    <td class="num hide-md">{q.drops ? <Badge tone="warn">{fmtInt(q.drops)}</Badge> : <span class="muted">0</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
    </div>
  );
}
