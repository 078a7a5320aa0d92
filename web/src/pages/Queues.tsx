/** Queues: search, sort by depth or lag, jump to a queue's detail. */
import { useState } from 'preact/hooks';
import { QUEUE_MODE, type GroupRow, type QueueRow } from '../api';
import { Card, Empty, Icon, Link, LoadError, Loading, PageHeader } from '../components/ui';
import { fmtAgo, fmtInt } from '../format';
import { snapshot } from '../live';
import { setQuery, useLocation } from '../router';
import { useStore } from '../store';

type SortKey = 'name' | 'depth' | 'lag' | 'total' | 'partitions';

const SORTS: { key: SortKey; label: string }[] = [
  { key: 'depth', label: 'Depth' },
  { key: 'lag', label: 'Lag' },
  { key: 'total', label: 'Total' },
  { key: 'name', label: 'Name' },
];

/** Lag per queue: the sum over its consumer groups (queue mode excluded: that is the depth). */
export function lagByQueue(groups: GroupRow[] | undefined): Map<string, number> {
  const m = new Map<string, number>();
  for (const g of groups ?? []) if (g.name !== QUEUE_MODE) m.set(g.queue, (m.get(g.queue) ?? 0) + g.totalLag);
  return m;
}

export function Queues() {
  const { query } = useLocation();
  const snap = useStore(snapshot);
  const [search, setSearch] = useState(query.get('q') ?? '');
  const sort = (query.get('sort') as SortKey) || 'depth';
  const lag = lagByQueue(snap.groups);

  const term = search.trim().toLowerCase();
  const rows = (snap.queues ?? []).filter((q) => !term || q.name.toLowerCase().includes(term) || q.namespace.toLowerCase().includes(term) || q.task.toLowerCase().includes(term));
  const key = (q: QueueRow): number => (sort === 'depth' ? q.pending : sort === 'lag' ? lag.get(q.name) ?? 0 : sort === 'total' ? q.total : sort === 'partitions' ? q.partitions : 0);
  rows.sort((a, b) => (sort === 'name' ? a.name.localeCompare(b.name) : key(b) - key(a) || a.name.localeCompare(b.name)));

  return (
    <div class="page">
      <PageHeader title="Queues" subtitle={snap.queues ? `${fmtInt(snap.queues.length)} queues on this broker` : undefined} />
      <Card pad={false}>
        <div class="toolbar">
          <div class="search">
            <Icon name="search" size={16} />
            <input
              class="input"
              type="search"
              placeholder="Search by name, namespace or task"
              value={search}
              onInput={(e) => {
                const v = (e.target as HTMLInputElement).value;
                setSearch(v);
                setQuery({ q: v || undefined });
              }}
              aria-label="Search queues"
              data-testid="queue-search"
            />
          </div>
          <div class="segmented" role="group" aria-label="Sort by">
            <span class="segmented-label">Sort</span>
            {SORTS.map((s) => (
              <button key={s.key} class={sort === s.key ? 'on' : ''} onClick={() => setQuery({ sort: s.key })} aria-pressed={sort === s.key} data-testid={`sort-${s.key}`}>
                {s.label}
              </button>
            ))}
          </div>
        </div>
        {snap.at === 0 ? (
          <Loading />
        ) : snap.queuesError ? (
          <LoadError error={snap.queuesError} what="the queue list" />
        ) : (snap.queues ?? []).length === 0 ? (
          <Empty title="No queues yet">
            Queues appear with their first push (<code>POST /api/v1/push</code>) or when configured (<code>POST /api/v1/configure</code>).
          </Empty>
        ) : rows.length === 0 ? (
          <Empty icon="search" title={`No queue matches “${search}”`} action={<button class="btn" onClick={() => { setSearch(''); setQuery({ q: undefined }); }}>Clear search</button>} />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="queues-table">
              <thead>
                <tr>
                  <th>Queue</th>
                  <th class="hide-sm">Namespace / task</th>
                  <th class="num">Pending</th>
                  <th class="num hide-sm">Processing</th>
                  <th class="num">Lag</th>
                  <th class="num hide-sm">Partitions</th>
                  <th class="num hide-sm">Groups</th>
                  <th class="num hide-md">Total</th>
                  <th class="hide-md">Created</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((q) => {
                  const groups = q.groups.filter((g) => g !== QUEUE_MODE);
                  const l = lag.get(q.name);
                  return (
                    <tr key={q.name} data-queue={q.name}>
                      <td class="strong">
                        <Link href={`/queues/${encodeURIComponent(q.name)}`}>{q.name || '(empty name)'}</Link>
                      </td>
                      <td class="hide-sm muted">{[q.namespace, q.task].filter(Boolean).join(' / ') || '—'}</td>
                      <td class="num">{fmtInt(q.pending)}</td>
                      <td class="num hide-sm">{fmtInt(q.processing)}</td>
                      <td class={`num ${l ? 'tone-warn' : ''}`}>{l === undefined ? '—' : fmtInt(l)}</td>
                      <td class="num hide-sm">{fmtInt(q.partitions)}</td>
                      <td class="num hide-sm">{fmtInt(groups.length)}</td>
                      <td class="num hide-md">{fmtInt(q.total)}</td>
                      <td class="hide-md muted">{fmtAgo(q.createdAt)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </Card>
    </div>
  );
}
