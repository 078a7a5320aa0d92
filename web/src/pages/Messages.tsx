/** Messages: browse a queue or one partition, read a payload, delete. */
import { useState } from 'preact/hooks';
import { api, enc, obj, readMessage, readMessages, readQueueDetail, str, type MessageRow } from '../api';
import { Confirm, Drawer, toast } from '../components/overlay';
import { Badge, Card, Empty, Field, Icon, Json, Link, LoadError, Loading, Mono, NameSelect, PageHeader } from '../components/ui';
import { fmtAgo, fmtInt, fmtStamp, preview, shortId } from '../format';
import { snapshot, usePoll } from '../live';
import { setQuery, useLocation } from '../router';
import { useStore } from '../store';

const PAGE = 50;

export function statusTone(s: string): 'good' | 'warn' | 'bad' | 'info' | 'neutral' {
  switch (s) {
    case 'completed':
      return 'good';
    case 'processing':
      return 'info';
    case 'pending':
      return 'neutral';
    case 'dead_letter':
    case 'failed':
      return 'bad';
    default:
      return 'neutral';
  }
}

export function Messages() {
  const { query } = useLocation();
  const snap = useStore(snapshot);
  const queue = query.get('queue') ?? '';
  const partition = query.get('partition') ?? '';
  const status = query.get('status') ?? '';
  // keyset pages: cursors[i] opens page i (undefined for the first); offsets for brokers without cursors
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const page = cursors.length - 1;
  const cursor = cursors[page];
  const [selected, setSelected] = useState<MessageRow | null>(null);

  const queues = (snap.queues ?? []).map((q) => q.name).sort();
  const detail = usePoll(async (signal) => readQueueDetail(await api(`/api/v1/resources/queues/${enc(queue)}`, { signal })), `d:${queue}`, queue !== '' || queues.includes(''));
  const list = usePoll(
    async (signal) =>
      readMessages(
        await api('/api/v1/messages', {
          signal,
          query: { queue, partition: partition || undefined, status: status || undefined, limit: PAGE, ...(cursor ? { cursor } : page > 0 ? { offset: page * PAGE } : {}) },
        }),
      ),
    `m:${queue}:${partition}:${status}:${page}:${cursor ?? ''}`,
    queue !== '',
  );
  const pick = (patch: Record<string, string | undefined>) => {
    setCursors([undefined]);
    setQuery(patch);
  };
  const next = () => setCursors([...cursors, list.data?.next || undefined]);
  const prev = () => setCursors(cursors.slice(0, -1));

  return (
    <div class="page">
      <PageHeader title="Messages" subtitle="Browse what a queue holds. Newest first where the broker supports it." />
      <Card pad={false}>
        <div class="toolbar">
          <NameSelect label="Queue" value={queue} names={queues} any="Choose a queue…" testid="msg-queue" onPick={(q) => pick({ queue: q, partition: undefined })} />
          <NameSelect label="Partition" value={partition} names={(detail.data?.partitions ?? []).map((p) => p.name)} any="All partitions" disabled={!queue}
            testid="msg-partition" onPick={(p) => pick({ partition: p })}
            display={(n) => { const p = detail.data?.partitions.find((x) => x.name === n); return p ? `${n} (${fmtInt(p.total)})` : n; }} />
          <Field label="Status">
            <select class="select select-narrow" value={status} disabled={!queue} onChange={(e) => pick({ status: (e.target as HTMLSelectElement).value || undefined })}>
              <option value="">Any status</option>
              <option value="pending">Pending</option>
              <option value="processing">Processing</option>
              <option value="completed">Completed</option>
            </select>
          </Field>
          {queue && (
            <div class="toolbar-end">
              <Link href={`/queues/${enc(queue)}`} class="btn btn-sm">
                Queue details
              </Link>
            </div>
          )}
        </div>
        {!queue ? (
          <Empty icon="messages" title="Choose a queue to browse its messages">
            {queues.length === 0 ? 'There are no queues yet.' : `${fmtInt(queues.length)} queues available.`}
          </Empty>
        ) : list.error ? (
          <LoadError error={list.error} what="message listings" />
        ) : !list.data ? (
          <Loading />
        ) : list.data.messages.length === 0 ? (
          <Empty icon="inbox" title={page > 0 ? 'No more messages' : status ? `No ${status} messages here` : partition ? `Partition ${partition} holds no messages` : `${queue} holds no messages`}>
            {page > 0 ? (
              <button class="btn" onClick={() => setCursors([undefined])}>
                Back to the first page
              </button>
            ) : (
              'Consumed messages may already have been removed by retention.'
            )}
          </Empty>
        ) : (
          <>
            <div class="table-wrap">
              <table class="table table-click" data-testid="messages-table">
                <thead>
                  <tr>
                    <th>Transaction</th>
                    <th class="hide-sm">Partition</th>
                    <th>Payload</th>
                    <th class="hide-sm">Status</th>
                    <th class="hide-sm">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.messages.map((m) => (
                    <tr key={`${m.partitionId}/${m.transactionId}`} onClick={() => setSelected(m)} tabIndex={0} onKeyDown={(e) => e.key === 'Enter' && setSelected(m)} data-txn={m.transactionId}>
                      <td>
                        <Mono title={m.transactionId}>{shortId(m.transactionId, 14, 6)}</Mono>
                      </td>
                      <td class="hide-sm">{m.partition || '—'}</td>
                      <td class="payload-cell">
                        <Mono>{preview(m.data, 90)}</Mono>
                      </td>
                      <td class="hide-sm">{m.status ? <Badge tone={statusTone(m.status)}>{m.status.replace('_', ' ')}</Badge> : '—'}</td>
                      <td class="hide-sm muted" title={fmtStamp(m.createdAt)}>
                        {fmtAgo(m.createdAt)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div class="pager">
              <span class="muted small">
                Showing {fmtInt(page * PAGE + 1)}–{fmtInt(page * PAGE + list.data.messages.length)}
              </span>
              <div>
                <button class="btn btn-sm" disabled={page === 0} onClick={prev}>
                  Newer
                </button>{' '}
                <button class="btn btn-sm" disabled={list.data.messages.length < PAGE || (list.data.hasMore === false)} onClick={next}>
                  Older
                </button>
              </div>
            </div>
          </>
        )}
      </Card>
      {selected && <MessageDrawer row={selected} onClose={() => setSelected(null)} onDeleted={() => { setSelected(null); list.reload(); }} />}
    </div>
  );
}

function MessageDrawer({ row, onClose, onDeleted }: { row: MessageRow; onClose: () => void; onDeleted: () => void }) {
  const path = `/api/v1/messages/${enc(row.partitionId)}/${enc(row.transactionId)}`;
  const full = usePoll(async (signal) => obj(await api(path, { signal })), path, row.partitionId !== '' && row.transactionId !== '');
  const [confirm, setConfirm] = useState(false);
  const d = full.data ? readMessage(full.data) : row;
  const extra = full.data ?? {};
  const status = str(extra.status) || row.status;
  const live = status !== '' && status !== 'dead_letter';
  const meta: [string, string][] = [
    ['Queue', d.queue || row.queue],
    ['Partition', d.partition || row.partition],
    ['Transaction id', d.transactionId],
    ['Message id', d.id],
    ['Partition id', d.partitionId],
    ['Created', fmtStamp(d.createdAt)],
    ['Trace id', d.traceId],
    ['Producer', d.producerSub],
    ['Retries', extra.retryCount === undefined ? '' : String(extra.retryCount)],
    ['Lease expires', str(extra.leaseExpiresAt) ? fmtStamp(str(extra.leaseExpiresAt)) : ''],
  ];
  return (
    <Drawer
      title="Message"
      subtitle={<Mono>{d.transactionId}</Mono>}
      onClose={onClose}
      footer={
        <>
          <Link href={`/traces?partitionId=${enc(d.partitionId)}&transactionId=${enc(d.transactionId)}`} class="btn">
            <Icon name="traces" size={16} /> Traces
          </Link>
          <button
            class="btn btn-danger-ghost"
            onClick={() => setConfirm(true)}
            disabled={live}
            title={live ? 'Live messages cannot be deleted: they leave by consumption or retention' : undefined}
            data-testid="delete-message"
          >
            <Icon name="trash" size={16} /> Delete
          </button>
        </>
      }
    >
      {status && (
        <p>
          <Badge tone={statusTone(status)}>{status.replace('_', ' ')}</Badge>
        </p>
      )}
      {str(extra.errorMessage) && <div class="callout callout-bad">{str(extra.errorMessage)}</div>}
      {live && (
        <p class="muted small">
          This broker keeps live messages immutable: they leave by consumption or retention. Only dead letters can be deleted.
        </p>
      )}
      <h3 class="section-title">Payload</h3>
      <Json value={d.data} />
      <h3 class="section-title">Details</h3>
      <dl class="kv">
        {meta
          .filter(([, v]) => v)
          .map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd class="mono">{v}</dd>
            </div>
          ))}
      </dl>
      {confirm && (
        <Confirm
          title="Delete this message?"
          confirmLabel="Delete message"
          onClose={() => setConfirm(false)}
          onConfirm={async () => {
            const r = obj(await api(path, { method: 'DELETE' }));
            toast(str(r.message) || 'Message deleted');
            onDeleted();
          }}
        >
          Deletes message <span class="mono">{d.transactionId}</span> from partition <strong>{d.partition}</strong>. The broker may refuse to delete a live message that
          consumers have not finished; dead letters can always be deleted.
        </Confirm>
      )}
    </Drawer>
  );
}
