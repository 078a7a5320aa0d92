/** Overview: the numbers an operator checks first, and the last hour as charts. */
import { Chart } from '../components/Chart';
import { Badge, Card, Empty, Link, LoadError, Loading, PageHeader, Stat } from '../components/ui';
import { fmtCompact, fmtDuration, fmtInt, fmtRate, plural } from '../format';
import { api } from '../api';
import { joinRates, readThroughput } from '../history';
import { samples, snapshot, usePoll } from '../live';
import { useStore } from '../store';
import { QUEUE_MODE } from '../api';
import { groupState } from './Groups';

export function Overview() {
  const snap = useStore(snapshot);
  const ring = useStore(samples);
  const queues = snap.queues;
  const groups = snap.groups?.filter((g) => g.name !== QUEUE_MODE);
  const depth = queues?.reduce((a, q) => a + q.pending, 0);
  const partitions = queues?.reduce((a, q) => a + q.partitions, 0);
  const lag = groups?.reduce((a, g) => a + g.totalLag, 0);
  const lagging = groups?.filter((g) => g.totalLag > 0).length ?? 0;

  const history = usePoll(async (signal) => readThroughput(await api('/api/v1/status', { signal }), false), 'status');
  // complete broker minutes, then this browser's live samples: the last point matches the In/Out cards
  const rates = joinRates(history.data, ring, true);
  const hour: [number, number] | undefined = history.data?.length ? [Date.now() / 1000 - 3600, Date.now() / 1000] : undefined;
  // the browser's own samples: shown on the same hour once there are ten minutes of them, zoomed in before
  const sampledFor = ring.length > 1 ? ring[ring.length - 1]!.t - ring[0]!.t : 0;
  const backlogRange = sampledFor >= 600 ? hour : undefined;
  const times = ring.map((s) => s.t);
  const deepest = queues ? [...queues].sort((a, b) => b.pending - a.pending || a.name.localeCompare(b.name)).slice(0, 6) : [];
  const topGroups = groups ? [...groups].sort((a, b) => b.totalLag - a.totalLag).slice(0, 6) : [];

  return (
    <div class="page">
      <PageHeader title="Overview" subtitle="This broker right now, and its last hour." />
      {snap.at === 0 ? (
        <Loading />
      ) : (
        <>
          <div class="stats">
            <Stat label="Queues" value={fmtInt(queues?.length)} hint={partitions !== undefined ? plural(partitions, 'partition') : undefined} href="/queues" testid="stat-queues" />
            <Stat label="In" value={fmtRate(snap.rateIn)} unit="msg/s" hint="pushed by producers" testid="stat-in" />
            <Stat label="Out" value={fmtRate(snap.rateOut)} unit="msg/s" hint="popped by consumers" testid="stat-out" />
            <Stat label="Backlog" value={fmtCompact(depth)} hint="messages waiting" href="/queues?sort=depth" testid="stat-depth" />
            <Stat
              label="Total lag"
              value={snap.groupsError ? '—' : fmtCompact(lag)}
              hint={snap.groupsError ? 'groups not available' : lagging ? `${plural(lagging, 'group')} behind` : 'all groups caught up'}
              tone={lag ? 'warn' : undefined}
              href="/consumer-groups"
              testid="stat-lag"
            />
            <Stat
              label="Dead letters"
              value={snap.dlqDepth === undefined ? '—' : `${fmtCompact(snap.dlqDepth)}${snap.dlqCapped ? '+' : ''}`}
              hint={snap.dlqDepth ? 'need attention' : 'none'}
              tone={snap.dlqDepth ? 'bad' : undefined}
              href="/dead-letters"
              testid="stat-dlq"
            />
          </div>

          <div class="grid-2">
            <Card title="Throughput" actions={<span class="muted small">{history.data?.length ? 'msg/s · per minute, then live' : 'msg/s · sampled by this browser'}</span>}>
              <Chart
                ariaLabel="Messages per second in and out, last hour"
                times={rates.map((s) => s.t)}
                series={[
                  { label: 'In', color: '#4f46e5', fill: true, values: rates.map((s) => s.in) },
                  { label: 'Out', color: '#0d9488', values: rates.map((s) => s.out) },
                ]}
                format={fmtRate}
                xRange={hour}
              />
            </Card>
            <Card title="Backlog and lag" actions={<span class="muted small">messages · sampled here</span>}>
              <Chart
                ariaLabel="Backlog, consumer lag and dead letters, last hour"
                times={times}
                series={[
                  { label: 'Backlog', color: '#64748b', fill: true, values: ring.map((s) => s.depth) },
                  { label: 'Lag', color: '#d97706', values: ring.map((s) => s.lag) },
                  { label: 'Dead letters', color: '#dc2626', values: ring.map((s) => s.dlq) },
                ]}
                format={fmtCompact}
                integer
                xRange={backlogRange}
              />
            </Card>
          </div>

          <div class="grid-2">
            <Card title="Deepest queues" actions={<Link href="/queues?sort=depth">All queues →</Link>} pad={false}>
              {snap.queuesError ? (
                <LoadError error={snap.queuesError} what="the queue list" />
              ) : deepest.length === 0 ? (
                <Empty title="No queues yet">
                  A queue appears with its first push, or with <code>POST /api/v1/configure</code>.
                </Empty>
              ) : (
                <table class="table">
                  <thead>
                    <tr>
                      <th>Queue</th>
                      <th class="num">Pending</th>
                      <th class="num hide-sm">Partitions</th>
                      <th class="num hide-sm">Total</th>
                    </tr>
                  </thead>
                  <tbody>
                    {deepest.map((q) => (
                      <tr key={q.name}>
                        <td>
                          <Link href={`/queues/${encodeURIComponent(q.name)}`}>{q.name || '(empty name)'}</Link>
                        </td>
                        <td class="num">{fmtInt(q.pending)}</td>
                        <td class="num hide-sm">{fmtInt(q.partitions)}</td>
                        <td class="num hide-sm">{fmtInt(q.total)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </Card>
            <Card title="Consumer groups by lag" actions={<Link href="/consumer-groups">All groups →</Link>} pad={false}>
              {snap.groupsError ? (
                <LoadError error={snap.groupsError} what="consumer groups" />
              ) : topGroups.length === 0 ? (
                <Empty icon="groups" title="No consumer groups yet">
                  A group registers on its first pop with <code>consumerGroup=…</code>.
                </Empty>
              ) : (
                <table class="table">
                  <thead>
                    <tr>
                      <th>Group</th>
                      <th class="hide-sm">Queue</th>
                      <th class="num">Lag</th>
                      <th class="num hide-narrow">Oldest</th>
                      <th>State</th>
                    </tr>
                  </thead>
                  <tbody>
                    {topGroups.map((g) => {
                      const st = groupState(g);
                      return (
                        <tr key={`${g.name}\u0000${g.queue}`}>
                          <td>
                            <Link href={`/consumer-groups?group=${encodeURIComponent(g.name)}`}>{g.name}</Link>
                          </td>
                          <td class="hide-sm">{g.queue}</td>
                          <td class="num">{fmtInt(g.totalLag)}</td>
                          <td class="num hide-narrow">{g.maxTimeLag ? fmtDuration(g.maxTimeLag) : '—'}</td>
                          <td>
                            <Badge tone={st.tone}>{st.label}</Badge>
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              )}
            </Card>
          </div>
        </>
      )}
    </div>
  );
}
