/** Consumer groups: lag per queue and partition, seek, delete (with confirmation). */
import { useState } from 'preact/hooks';
import { api, canAdmin, enc, QUEUE_MODE, readGroups, type ConsumerGroupAnswer, type GroupPartitionLag, type GroupRow } from '../api';
import { Confirm, Modal, toast } from '../components/overlay';
import { Badge, Card, Empty, Field, Icon, Link, LoadError, Loading, PageHeader } from '../components/ui';
import { fmtDate, fmtDuration, fmtInt, fmtStamp, plural } from '../format';
import { refresh, snapshot, usePoll } from '../live';
import { setQuery, useLocation } from '../router';
import { useStore } from '../store';

export function groupState(g: GroupRow): { label: string; tone: 'good' | 'warn' | 'bad' | 'neutral' } {
  const s = g.state.toLowerCase();
  if (s === 'dead') return { label: 'Dead', tone: 'neutral' };
  if (s === 'lagging' || (s === '' && g.totalLag > 0)) return { label: 'Lagging', tone: 'warn' };
  if (s === 'stable' || s === '') return { label: g.totalLag > 0 ? 'Behind' : 'Caught up', tone: g.totalLag > 0 ? 'warn' : 'good' };
  return { label: g.state, tone: 'neutral' };
}

type Pending = { kind: 'delete'; group: string; queue?: string } | { kind: 'seek'; group: string; queue: string };

export function Groups() {
  const { query } = useLocation();
  const snap = useStore(snapshot);
  const admin = useStore(canAdmin);
  const [open, setOpen] = useState<string | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [showQueueMode, setShowQueueMode] = useState(false);
  const fGroup = query.get('group') ?? '';
  const fQueue = query.get('queue') ?? '';

  const all = snap.groups ?? [];
  const rows = all
    .filter((g) => (showQueueMode || g.name !== QUEUE_MODE) && (!fGroup || g.name === fGroup) && (!fQueue || g.queue === fQueue))
    .sort((a, b) => a.name.localeCompare(b.name) || a.queue.localeCompare(b.queue));
  const groupNames = [...new Set(all.filter((g) => g.name !== QUEUE_MODE).map((g) => g.name))].sort();
  const queueNames = [...new Set(all.map((g) => g.queue))].sort();
  const hasQueueMode = all.some((g) => g.name === QUEUE_MODE);

  return (
    <div class="page">
      <PageHeader title="Consumer groups" subtitle="Each group reads every message of a queue with its own position. Lag is what it has not consumed yet." />
      <Card pad={false}>
        <div class="toolbar">
          <Field label="Group">
            <select class="select" value={fGroup} onChange={(e) => setQuery({ group: (e.target as HTMLSelectElement).value || undefined })} data-testid="group-filter">
              <option value="">All groups</option>
              {groupNames.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Queue">
            <select class="select" value={fQueue} onChange={(e) => setQuery({ queue: (e.target as HTMLSelectElement).value || undefined })}>
              <option value="">All queues</option>
              {queueNames.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </Field>
          {hasQueueMode && (
            <label class="check">
              <input type="checkbox" checked={showQueueMode} onChange={(e) => setShowQueueMode((e.target as HTMLInputElement).checked)} /> Show queue-mode cursors
            </label>
          )}
        </div>
        {snap.at === 0 ? (
          <Loading />
        ) : snap.groupsError ? (
          <LoadError error={snap.groupsError} what="consumer groups" />
        ) : rows.length === 0 ? (
          <Empty icon="groups" title={fGroup || fQueue ? 'No consumer group matches these filters' : 'No consumer groups yet'}>
            {fGroup || fQueue ? (
              <button class="btn" onClick={() => setQuery({ group: undefined, queue: undefined })}>
                Clear filters
              </button>
            ) : (
              <>
                A group registers on its first pop with <code>consumerGroup=…</code>.
              </>
            )}
          </Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="groups-table">
              <thead>
                <tr>
                  <th class="w-chev" />
                  <th>Group</th>
                  <th>Queue</th>
                  <th class="num">Lag</th>
                  <th class="num hide-sm">Partitions behind</th>
                  <th class="num hide-sm">Oldest unconsumed</th>
                  <th class="hide-md">Subscription</th>
                  <th class="hide-sm">State</th>
                  <th class="right">Actions</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((g) => {
                  const k = `${g.name}\u0000${g.queue}`;
                  const st = groupState(g);
                  const expanded = open === k;
                  return [
                    <tr key={k} data-group={g.name} data-queue={g.queue} class={expanded ? 'row-open' : ''}>
                      <td class="w-chev">
                        <button class={`chev ${expanded ? 'open' : ''}`} onClick={() => setOpen(expanded ? null : k)} aria-label={expanded ? 'Hide partitions' : 'Show partitions'} aria-expanded={expanded} data-testid="expand">
                          <Icon name="chevron" size={14} />
                        </button>
                      </td>
                      <td class="strong">{g.name === QUEUE_MODE ? <span class="muted">queue mode</span> : g.name}</td>
                      <td>
                        <Link href={`/queues/${enc(g.queue)}`}>{g.queue}</Link>
                      </td>
                      <td class={`num ${g.totalLag ? 'tone-warn' : ''}`} data-testid="group-lag">
                        {fmtInt(g.totalLag)}
                      </td>
                      <td class="num hide-sm">{fmtInt(g.partitionsWithLag)}</td>
                      <td class="num hide-sm">{g.maxTimeLag ? fmtDuration(g.maxTimeLag) : '—'}</td>
                      <td class="hide-md muted" title={g.subscriptionTimestamp ? fmtStamp(g.subscriptionTimestamp) : undefined}>
                        {g.subscriptionMode || '—'}
                        {g.subscriptionTimestamp ? ` · from ${fmtDate(g.subscriptionTimestamp)}` : ''}
                      </td>
                      <td class="hide-sm">
                        <Badge tone={st.tone}>{st.label}</Badge>
                      </td>
                      <td class="right nowrap">
                        {admin && <>
                        <button class="btn btn-sm" onClick={() => setPending({ kind: 'seek', group: g.name, queue: g.queue })} data-testid="seek" title="Seek" aria-label={`Seek ${g.name} on ${g.queue}`}>
                          <Icon name="seek" size={14} /> <span class="btn-label">Seek</span>
                        </button>{' '}
                        <button class="btn btn-sm btn-danger-ghost" onClick={() => setPending({ kind: 'delete', group: g.name, queue: g.queue })} data-testid="delete-group" title="Delete" aria-label={`Delete ${g.name} on ${g.queue}`}>
                          <Icon name="trash" size={14} /> <span class="btn-label">Delete</span>
                        </button>
                        </>}
                      </td>
                    </tr>,
                    expanded && (
                      <tr key={`${k}-parts`} class="subrow">
                        <td />
                        <td colSpan={8}>
                          <GroupPartitions group={g.name} queue={g.queue} totalLag={g.totalLag} inline={g.partitions} />
                        </td>
                      </tr>
                    ),
                  ];
                })}
              </tbody>
            </table>
          </div>
        )}
      </Card>
      {pending?.kind === 'seek' && <SeekDialog group={pending.group} queue={pending.queue} onClose={() => setPending(null)} />}
      {pending?.kind === 'delete' && (
        <DeleteDialog group={pending.group} queue={pending.queue} queues={all.filter((g) => g.name === pending.group).map((g) => g.queue)} onClose={() => setPending(null)} />
      )}
    </div>
  );
}

/** Lag per partition of one group on one queue, read from the group's detail on demand. */
function GroupPartitions({ group, queue, totalLag, inline }: { group: string; queue: string; totalLag: number; inline: GroupPartitionLag[] }) {
  const detail = usePoll(
    async (signal) => {
      if (inline.length > 0) return inline;
      const b = await api<ConsumerGroupAnswer | null>(`/api/v1/consumer-groups/${enc(group)}`, { signal });
      const q = b?.[queue];
      return readGroups([{ name: group, queueName: queue, partitions: q?.partitions }])[0]?.partitions ?? [];
    },
    `${group}\u0000${queue}`,
  );
  if (detail.error) return <LoadError error={detail.error} what="this group's partitions" />;
  if (!detail.data) return <Loading />;
  const parts = detail.data;
  const listed = parts.reduce((a, p) => a + p.lag, 0);
  return (
    <div class="inner" data-testid="group-partitions">
      {parts.length === 0 ? (
        <p class="muted small">This group has not read any partition of {queue} yet.</p>
      ) : (
        <table class="table table-inner">
          <thead>
            <tr>
              <th>Partition</th>
              <th class="num">Lag</th>
              <th class="num">Oldest unconsumed</th>
            </tr>
          </thead>
          <tbody>
            {parts.map((p) => (
              <tr key={p.partitionId || p.partition}>
                <td>{p.partition || p.partitionId}</td>
                <td class={`num ${p.lag ? 'tone-warn' : ''}`}>{fmtInt(p.lag)}</td>
                <td class="num">{p.timeLag ? fmtDuration(p.timeLag) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {totalLag > listed && (
        <p class="muted small inner-note">
          {plural(totalLag - listed, 'more message')} wait in partitions this group has not read yet.
        </p>
      )}
    </div>
  );
}

function DeleteDialog({ group, queue, queues, onClose }: { group: string; queue?: string; queues: string[]; onClose: () => void }) {
  const [scope, setScope] = useState<'queue' | 'all'>(queue ? 'queue' : 'all');
  const [keepMeta, setKeepMeta] = useState(false);
  const label = group === QUEUE_MODE ? 'the queue-mode cursor' : `group ${group}`;
  return (
    <Confirm
      title={`Delete consumer group ${group === QUEUE_MODE ? '(queue mode)' : group}?`}
      confirmLabel="Delete group"
      onClose={onClose}
      onConfirm={async () => {
        const q = { deleteMetadata: keepMeta ? 'false' : 'true' };
        if (scope === 'queue' && queue !== undefined) await api(`/api/v1/consumer-groups/${enc(group)}/queues/${enc(queue)}`, { method: 'DELETE', query: q });
        else await api(`/api/v1/consumer-groups/${enc(group)}`, { method: 'DELETE', query: q });
        toast(`Deleted ${label}${scope === 'queue' && queue !== undefined ? ` on ${queue}` : ''}`);
        await refresh();
      }}
    >
      <p>
        This removes the {label}'s positions and leases. Its next pop starts again from its subscription (by default, new messages only), so unconsumed messages may be
        skipped.
      </p>
      {queue !== undefined && queues.length > 1 && (
        <div class="radio-group">
          <label class="check">
            <input type="radio" name="scope" checked={scope === 'queue'} onChange={() => setScope('queue')} /> Only on queue <strong>{queue}</strong>
          </label>
          <label class="check">
            <input type="radio" name="scope" checked={scope === 'all'} onChange={() => setScope('all')} /> On all {queues.length} queues it reads
          </label>
        </div>
      )}
      <label class="check">
        <input type="checkbox" checked={keepMeta} onChange={(e) => setKeepMeta((e.target as HTMLInputElement).checked)} /> Keep its subscription settings
      </label>
    </Confirm>
  );
}

function toLocalInput(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function SeekDialog({ group, queue, onClose }: { group: string; queue: string; onClose: () => void }) {
  const [mode, setMode] = useState<'end' | 'time'>('end');
  const [when, setWhen] = useState(toLocalInput(new Date(Date.now() - 3600_000)));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const go = async () => {
    setBusy(true);
    setError('');
    try {
      const body = mode === 'end' ? { toEnd: true } : { timestamp: new Date(when).toISOString() };
      const r = (await api<Record<string, unknown>>(`/api/v1/consumer-groups/${enc(group)}/queues/${enc(queue)}/seek`, { method: 'POST', body })) ?? {};
      const n = typeof r.partitionsUpdated === 'number' ? ` (${fmtInt(r.partitionsUpdated)} partitions)` : '';
      toast(mode === 'end' ? `${group} now starts after the newest message of ${queue}${n}` : `${group} moved to ${fmtDate(body.timestamp as string)} on ${queue}${n}`);
      await refresh();
      onClose();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <Modal
      title={`Seek ${group === QUEUE_MODE ? 'queue mode' : group} on ${queue}`}
      onClose={onClose}
      testid="seek-dialog"
      footer={
        <>
          <button class="btn" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button class="btn btn-primary" onClick={go} disabled={busy || (mode === 'time' && !when)} data-testid="seek-button">
            {busy ? 'Seeking…' : 'Move position'}
          </button>
        </>
      }
    >
      <p class="muted">Moves the group's position on every partition of the queue and drops its live leases.</p>
      <div class="radio-group">
        <label class="check">
          <input type="radio" name="seek" checked={mode === 'end'} onChange={() => setMode('end')} /> To the end: skip everything pending
        </label>
        <label class="check">
          <input type="radio" name="seek" checked={mode === 'time'} onChange={() => setMode('time')} /> To a time: replay from messages created at or after
        </label>
      </div>
      {mode === 'time' && (
        <Field label="Local time">
          <input class="input" type="datetime-local" value={when} onInput={(e) => setWhen((e.target as HTMLInputElement).value)} />
        </Field>
      )}
      {error && <div class="callout callout-bad">{error}</div>}
    </Modal>
  );
}
