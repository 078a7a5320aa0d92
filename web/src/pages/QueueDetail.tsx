/** One queue: totals, throughput, partitions, consumer groups with lag, and its options. */
import { useState } from 'preact/hooks';
import { api, canAdmin, enc, QUEUE_MODE, readQueueDetail, type DetailGroup } from '../api';
import { Chart } from '../components/Chart';
import { Confirm, toast } from '../components/overlay';
import { Badge, Card, Empty, Icon, Link, LoadError, Loading, PageHeader, Stat } from '../components/ui';
import { fmtAgo, fmtCompact, fmtDuration, fmtInt, fmtRate, fmtStamp } from '../format';
import { joinRates, readThroughput } from '../history';
import { queueSamples, queueSamplesVersion, refresh, snapshot, usePoll } from '../live';
import { navigate } from '../router';
import { useStore } from '../store';
import { groupState } from './Groups';

/** Option name → unit, for the options grid. */
const UNITS: Record<string, string> = {
  leaseTime: 's', retryDelay: 'ms', ttl: 's', delayedProcessing: 's', windowBuffer: 's', retentionSeconds: 's',
  completedRetentionSeconds: 's', maxWaitTimeSeconds: 's', minPopWaitTime: 'ms', dedupWindowSeconds: 's', retentionSinkHoldMaxSeconds: 's',
};

/** Queue option defaults (docs/http-api.md#queue-options), to tell which options were changed. */
const DEFAULTS: Record<string, unknown> = {
  leaseTime: 300, retryLimit: 3, retryDelay: 1000, priority: 0, maxSize: 0, ttl: 3600, deadLetterQueue: true, dlqAfterMaxRetries: true,
  delayedProcessing: 0, windowBuffer: 0, retentionSeconds: 0, completedRetentionSeconds: 0, retentionEnabled: false, encryptionEnabled: false,
  maxWaitTimeSeconds: 0, minPopWaitTime: 0, dedupWindowSeconds: 3600, retentionSinkHold: '', retentionSinkHoldMaxSeconds: 604800, namespace: '', task: '',
};

const GROUPS: [string, string[]][] = [
  ['Delivery', ['leaseTime', 'retryLimit', 'retryDelay', 'priority', 'delayedProcessing', 'windowBuffer', 'minPopWaitTime']],
  ['Dead letters', ['deadLetterQueue', 'dlqAfterMaxRetries']],
  ['Retention', ['retentionEnabled', 'retentionSeconds', 'completedRetentionSeconds', 'maxWaitTimeSeconds', 'ttl', 'maxSize']],
  ['Other', ['dedupWindowSeconds', 'encryptionEnabled', 'retentionSinkHold', 'retentionSinkHoldMaxSeconds']],
];

function isDefault(k: string, v: unknown): boolean {
  return k in DEFAULTS && DEFAULTS[k] === v;
}

function groupOptions(entries: [string, unknown][]): [string, [string, unknown][]][] {
  const seen = new Set<string>();
  const out: [string, [string, unknown][]][] = [];
  for (const [title, keys] of GROUPS) {
    const list = entries.filter(([k]) => keys.includes(k));
    list.sort(([a], [b]) => keys.indexOf(a) - keys.indexOf(b));
    for (const [k] of list) seen.add(k);
    if (list.length) out.push([title, list]);
  }
  const rest = entries.filter(([k]) => !seen.has(k));
  if (rest.length) {
    const other = out.find(([t]) => t === 'Other');
    if (other) other[1].push(...rest);
    else out.push(['Other', rest]);
  }
  return out;
}

function optionValue(k: string, v: unknown): string {
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'number') {
    if (k === 'maxSize' && v === 0) return 'unlimited';
    const unit = UNITS[k];
    if (unit === 's' && v >= 120) return fmtDuration(v);
    return unit ? `${fmtInt(v)} ${unit}` : fmtInt(v);
  }
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function sumLag(gs: DetailGroup[]): number | undefined {
  const named = gs.filter((g) => g.name !== QUEUE_MODE && g.totalLag !== undefined);
  return named.length ? named.reduce((a, g) => a + (g.totalLag ?? 0), 0) : undefined;
}

function lagHint(n: number | undefined): string | undefined {
  return n === undefined ? undefined : `total lag ${fmtInt(n)}`;
}

export function QueueDetailPage({ name }: { name: string }) {
  const detail = usePoll(async (signal) => readQueueDetail(await api(`/api/v1/resources/queues/${enc(name)}`, { signal })), name);
  const snap = useStore(snapshot);
  const admin = useStore(canAdmin);
  useStore(queueSamplesVersion);
  const [confirmDelete, setConfirmDelete] = useState(false);

  const q = detail.data;
  const groups = (snap.groups ?? []).filter((g) => g.queue === name && g.name !== QUEUE_MODE);
  const history = usePoll(async (signal) => readThroughput(await api(`/api/v1/status/queues/${enc(name)}`, { signal })), `status:${name}`);
  const ring = joinRates(history.data, queueSamples(name));
  const listed = snap.queues?.find((x) => x.name === name);

  const back = { href: '/queues', label: 'Queues' };
  if (!q) {
    return (
      <div class="page">
        <PageHeader title={name || '(empty name)'} back={back} />
        {detail.error ? (
          detail.error.status === 404 && !detail.error.missingRoute ? (
            <Empty icon="queues" title="This queue does not exist" action={<Link href="/queues" class="btn">All queues</Link>}>
              It may have been deleted. Queues appear again with their next push.
            </Empty>
          ) : (
            <LoadError error={detail.error} what="this queue" />
          )
        ) : (
          <Loading />
        )}
      </div>
    );
  }

  const t = q.totals;
  const groupNames = new Set([...groups.map((g) => g.name), ...q.groups.map((g) => g.name).filter((n) => n !== QUEUE_MODE)]);
  const options = Object.entries(q.options).sort(([a], [b]) => a.localeCompare(b));

  return (
    <div class="page">
      <PageHeader
        back={back}
        title={q.name || '(empty name)'}
        subtitle={
          <>
            {q.namespace && <Badge tone="info">ns {q.namespace}</Badge>} {q.task && <Badge tone="info">task {q.task}</Badge>}{' '}
            <span class="muted">created {fmtAgo(q.createdAt)}</span>
          </>
        }
        actions={
          <>
            <Link href={`/messages?queue=${enc(q.name)}`} class="btn">
              <Icon name="messages" size={16} /> Messages
            </Link>
            <Link href={`/dead-letters?queue=${enc(q.name)}`} class="btn">
              <Icon name="dlq" size={16} /> Dead letters
            </Link>
            {admin && (
              <button class="btn btn-danger-ghost" onClick={() => setConfirmDelete(true)} data-testid="delete-queue">
                <Icon name="trash" size={16} /> Delete
              </button>
            )}
          </>
        }
      />
      <div class="stats">
        <Stat label="Pending" value={fmtCompact(t.pending)} hint="not yet popped" testid="q-pending" />
        <Stat label="Processing" value={fmtCompact(t.processing)} hint="leased now" />
        <Stat label="Total" value={fmtCompact(t.total)} hint="stored messages" testid="q-total" />
        <Stat label="Partitions" value={fmtInt(q.partitions.length)} testid="q-partitions" />
        <Stat label="Groups" value={fmtInt(groupNames.size)} hint={lagHint(groups.length ? groups.reduce((a, g) => a + g.totalLag, 0) : sumLag(q.groups))} />
        <Stat label="Dead letters" value={fmtCompact(t.deadLetter)} tone={t.deadLetter ? 'bad' : undefined} href={`/dead-letters?queue=${enc(q.name)}`} />
      </div>

      <Card title="Throughput" actions={<span class="muted small">{history.data?.length ? 'msg/s · per minute' : 'msg/s · sampled by this browser'}</span>}>
        <Chart
          ariaLabel={`Throughput of queue ${q.name}`}
          times={ring.map((s) => s.t)}
          series={[
            { label: 'Pushed', color: '#4f46e5', fill: true, values: ring.map((s) => s.in) },
            { label: history.data?.length ? 'Popped' : 'Consumed', color: '#0d9488', values: ring.map((s) => s.out) },
          ]}
          height={180}
          format={fmtRate}
          emptyText={listed ? 'Collecting samples…' : 'No samples for this queue'}
        />
      </Card>

      <div class="grid-2">
        <Card title={`Partitions (${q.partitions.length})`} pad={false}>
          {q.partitions.length === 0 ? (
            <Empty title="No partitions yet">A partition is created by the first push that names it.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="table" data-testid="partitions-table">
                <thead>
                  <tr>
                    <th>Partition</th>
                    <th class="num">Pending</th>
                    <th class="num hide-narrow">Processing</th>
                    <th class="num">Total</th>
                    <th class="hide-narrow">Last message</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {q.partitions.map((p) => (
                    <tr key={p.id || p.name}>
                      <td class="strong nowrap">{p.name}</td>
                      <td class="num">{fmtInt(p.pending)}</td>
                      <td class="num hide-narrow">{fmtInt(p.processing)}</td>
                      <td class="num">{fmtInt(p.total)}</td>
                      <td class="hide-narrow muted" title={fmtStamp(p.newest)}>
                        {fmtAgo(p.newest)}
                      </td>
                      <td class="right">
                        <Link href={`/messages?queue=${enc(q.name)}&partition=${enc(p.name)}`} class="btn btn-sm">
                          Browse
                        </Link>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Card>
        <Card title="Consumer groups" actions={<Link href={`/consumer-groups?queue=${enc(q.name)}`}>Manage →</Link>} pad={false}>
          {groupNames.size === 0 ? (
            <Empty icon="groups" title="No consumer group reads this queue">
              Pops without <code>consumerGroup</code> share the queue-mode cursor, counted as “pending” above.
            </Empty>
          ) : (
            <div class="table-wrap">
              <table class="table" data-testid="queue-groups-table">
                <thead>
                  <tr>
                    <th>Group</th>
                    <th class="num">Lag</th>
                    <th class="num hide-narrow">Partitions behind</th>
                    <th class="num">Oldest</th>
                    <th class="hide-narrow">Subscription</th>
                    <th>State</th>
                  </tr>
                </thead>
                <tbody>
                  {[...groupNames].sort().map((n) => {
                    const g = groups.find((x) => x.name === n);
                    const meta = q.groups.find((x) => x.name === n);
                    const lag = g?.totalLag ?? meta?.totalLag;
                    const behind = g?.partitionsWithLag ?? meta?.partitionsWithLag;
                    const age = g ? g.maxTimeLag : meta?.timeLag;
                    const st = g ? groupState(g) : lag === undefined ? { label: 'Unknown', tone: 'neutral' as const } : lag > 0 ? { label: 'Behind', tone: 'warn' as const } : { label: 'Caught up', tone: 'good' as const };
                    return (
                      <tr key={n} data-group={n}>
                        <td class="strong">
                          <Link href={`/consumer-groups?group=${enc(n)}&queue=${enc(q.name)}`}>{n}</Link>
                        </td>
                        <td class={`num ${lag ? 'tone-warn' : ''}`} data-testid="group-lag">{lag === undefined ? '—' : fmtInt(lag)}</td>
                        <td class="num hide-narrow">{behind === undefined ? '—' : fmtInt(behind)}</td>
                        <td class="num">{age ? fmtDuration(age) : '—'}</td>
                        <td class="hide-narrow muted">{g?.subscriptionMode || meta?.subscriptionMode || '—'}</td>
                        <td>
                          <Badge tone={st.tone}>{st.label}</Badge>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </Card>
      </div>

      <Card title="Options" actions={<span class="muted small">bold: changed from the default</span>} pad={false}>
        {options.length === 0 ? (
          <Empty title="No options reported" />
        ) : (
          <div class="option-groups" data-testid="options">
            {groupOptions(options).map(([title, entries]) => (
              <section key={title} class="option-group">
                <h3>{title}</h3>
                <dl class="options">
                  {entries.map(([k, v]) => (
                    <div key={k} class={`option ${isDefault(k, v) ? 'is-default' : ''}`}>
                      <dt>{k}</dt>
                      <dd class={typeof v === 'boolean' ? (v ? 'on' : 'off') : ''} title={typeof v === 'number' && UNITS[k] ? `${v} ${UNITS[k]}` : undefined}>
                        {optionValue(k, v)}
                      </dd>
                    </div>
                  ))}
                </dl>
              </section>
            ))}
          </div>
        )}
      </Card>

      {confirmDelete && (
        <Confirm
          title={`Delete queue ${q.name}?`}
          confirmLabel="Delete queue"
          typeToConfirm={q.name}
          onClose={() => setConfirmDelete(false)}
          onConfirm={async () => {
            await api(`/api/v1/resources/queues/${enc(q.name)}`, { method: 'DELETE' });
            toast(`Queue ${q.name} deleted`);
            await refresh();
            navigate('/queues');
          }}
        >
          This removes all {fmtInt(t.total)} messages in {fmtInt(q.partitions.length)} partitions, every consumer group's position and the queue's dead letters. It
          cannot be undone.
        </Confirm>
      )}
    </div>
  );
}
