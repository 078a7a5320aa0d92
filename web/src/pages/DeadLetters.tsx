/** Dead letters: filter, read the error, replay into the queue, delete, purge (confirmed). */
import { useState } from 'preact/hooks';
import { api, ApiError, canAdmin, enc, obj, readDlq, str, type DeadLetter } from '../api';
import { Confirm, Drawer, toast } from '../components/overlay';
import { Card, Empty, Field, Icon, Json, Link, LoadError, Loading, Mono, NameSelect, PageHeader } from '../components/ui';
import { fmtAgo, fmtInt, fmtStamp, plural, preview, shortId } from '../format';
import { refresh, snapshot, usePoll } from '../live';
import { setQuery, useDebounced, useLocation } from '../router';
import { useStore } from '../store';

const LIMIT = 200;

/** Replays one dead letter into its queue; falls back to the per-message retry route. */
export async function replay(d: DeadLetter): Promise<string> {
  let r: Record<string, unknown>;
  try {
    r = obj(await api(`/api/v1/dlq/${enc(d.id)}/replay`, { method: 'POST', body: {} }));
  } catch (e) {
    if (!(e instanceof ApiError && e.missingRoute)) throw e;
    r = obj(await api(`/api/v1/messages/${enc(d.partitionId)}/${enc(d.transactionId)}/retry`, { method: 'POST', body: {} }));
  }
  if (r.success === false) throw new Error(str(r.error, r.message) || 'The broker refused the replay');
  const q = str(r.queue) || d.queue;
  const p = str(r.partition) || d.partition;
  if (str(r.result) === 'duplicate') return `Already replayed earlier: ${q}/${p} has it`;
  return `Replayed into ${q} / ${p}`;
}

export function DeadLetters() {
  const { query } = useLocation();
  const snap = useStore(snapshot);
  const admin = useStore(canAdmin);
  const queue = query.get('queue') ?? '';
  const group = query.get('group') ?? '';
  const [text, setText] = useState(query.get('q') ?? '');
  const term = useDebounced(text.trim().toLowerCase());
  const [selected, setSelected] = useState<DeadLetter | null>(null);
  const [purge, setPurge] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);

  const list = usePoll(
    async (signal) => readDlq(await api('/api/v1/dlq', { signal, query: { queue: queue || undefined, consumerGroup: group || undefined, limit: LIMIT } })),
    `${queue}\u0000${group}`,
  );
  const rows = (list.data ?? []).filter(
    (d) => !term || d.errorMessage.toLowerCase().includes(term) || d.transactionId.toLowerCase().includes(term) || preview(d.data, 10_000).toLowerCase().includes(term),
  );
  const queues = (snap.queues ?? []).map((q) => q.name).sort();
  const groups = [...new Set([...(list.data ?? []).map((d) => d.consumerGroup), ...(snap.groups ?? []).filter((g) => !queue || g.queue === queue).map((g) => g.name)])]
    .filter(Boolean)
    .sort();

  const doReplay = async (d: DeadLetter) => {
    setBusy(d.id);
    try {
      toast(await replay(d));
      setSelected(null);
      list.reload();
      void refresh();
    } catch (e) {
      toast(`Replay failed: ${(e as Error).message}`, 'bad');
    } finally {
      setBusy(null);
    }
  };

  return (
    <div class="page">
      <PageHeader
        title="Dead letters"
        subtitle="Messages that ran out of retries or were sent to the DLQ by a consumer."
      />
      <Card pad={false}>
        <div class="toolbar">
          <NameSelect label="Queue" value={queue} names={queues} any="All queues" testid="dlq-queue" onPick={(q) => setQuery({ queue: q })} />
          <NameSelect label="Consumer group" value={group} names={groups} any="Any group" onPick={(g) => setQuery({ group: g })}
            display={(n) => (n === '__QUEUE_MODE__' ? 'queue mode' : n)} />
          <Field label="Search" class="field-grow">
            <input
              class="input"
              type="search"
              placeholder="Error, transaction or payload"
              value={text}
              onInput={(e) => {
                const v = (e.target as HTMLInputElement).value;
                setText(v);
                setQuery({ q: v || undefined });
              }}
              data-testid="dlq-search"
            />
          </Field>
          <div class="toolbar-end">
            {!admin ? null : queue ? (
              <button class="btn btn-danger-ghost" disabled={!list.data?.length} onClick={() => setPurge(true)} data-testid="purge">
                <Icon name="trash" size={16} /> Purge {queue}
              </button>
            ) : (
              <span class="muted small">Choose a queue to purge its dead letters</span>
            )}
          </div>
        </div>
        {list.error ? (
          <LoadError error={list.error} what="dead letters" />
        ) : !list.data ? (
          <Loading />
        ) : list.data.length === 0 ? (
          <Empty icon="check" title={queue ? `No dead letters in ${queue}` : 'No dead letters'}>
            Messages land here after exhausting their queue's <code>retryLimit</code>, or when a consumer acks with <code>status: "dlq"</code>.
          </Empty>
        ) : rows.length === 0 ? (
          <Empty icon="search" title={`Nothing matches “${text}”`} action={<button class="btn" onClick={() => { setText(''); setQuery({ q: undefined }); }}>Clear search</button>} />
        ) : (
          <>
            <div class="table-wrap">
              <table class="table table-click" data-testid="dlq-table">
                <thead>
                  <tr>
                    <th class="hide-sm">Failed</th>
                    <th class="hide-sm">Queue / partition</th>
                    <th>Error</th>
                    <th class="hide-sm">Group</th>
                    <th class="num hide-sm">Retries</th>
                    <th class="hide-md">Transaction</th>
                    <th class="right">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((d) => (
                    <tr key={d.id} onClick={() => setSelected(d)} data-dlq={d.id} data-txn={d.transactionId}>
                      <td class="muted nowrap hide-sm" title={fmtStamp(d.failedAt)}>
                        {fmtAgo(d.failedAt)}
                      </td>
                      <td class="nowrap hide-sm">
                        <span class="strong">{d.queue}</span>
                        <span class="muted"> / {d.partition}</span>
                      </td>
                      <td class="error-cell">
                        <span class="error-text">{d.errorMessage || <span class="muted">no reason given</span>}</span>
                        <span class="only-sm muted small">
                          {d.queue} / {d.partition} · {fmtAgo(d.failedAt)}
                        </span>
                      </td>
                      <td class="hide-sm">{d.consumerGroup === '__QUEUE_MODE__' ? <span class="muted">queue mode</span> : d.consumerGroup}</td>
                      <td class="num hide-sm">{fmtInt(d.retryCount)}</td>
                      <td class="hide-md">
                        <Mono title={d.transactionId}>{shortId(d.transactionId, 12, 4)}</Mono>
                      </td>
                      <td class="right nowrap" onClick={(e) => e.stopPropagation()}>
                        {admin && (
                          <button class="btn btn-sm" disabled={busy === d.id} onClick={() => doReplay(d)} data-testid="replay">
                            <Icon name="replay" size={14} /> <span class="btn-label">{busy === d.id ? 'Replaying…' : 'Replay'}</span>
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div class="pager">
              <span class="muted small">
                {plural(rows.length, 'dead letter')}
                {rows.length !== list.data.length ? ` of ${fmtInt(list.data.length)} loaded` : ''}
                {list.data.length >= LIMIT ? ` (first ${LIMIT} shown)` : ''}
              </span>
            </div>
          </>
        )}
      </Card>

      {selected && (
        <Drawer
          title="Dead letter"
          subtitle={
            <>
              {selected.queue} / {selected.partition} · failed {fmtAgo(selected.failedAt)}
            </>
          }
          onClose={() => setSelected(null)}
          footer={admin ? (
            <>
              <DeleteOne d={selected} onDone={() => { setSelected(null); list.reload(); void refresh(); }} />
              <button class="btn btn-primary" disabled={busy === selected.id} onClick={() => doReplay(selected)} data-testid="drawer-replay">
                <Icon name="replay" size={16} /> Replay into {selected.queue}
              </button>
            </>
          ) : undefined}
        >
          <h3 class="section-title">Error</h3>
          <div class="callout callout-bad error-full" data-testid="dlq-error">
            {selected.errorMessage || 'No reason was given.'}
          </div>
          <h3 class="section-title">Payload</h3>
          <Json value={selected.data} />
          <h3 class="section-title">Details</h3>
          <dl class="kv">
            {(
              [
                ['Queue', selected.queue],
                ['Partition', selected.partition],
                ['Consumer group', selected.consumerGroup === '__QUEUE_MODE__' ? 'queue mode' : selected.consumerGroup],
                ['Retries', String(selected.retryCount)],
                ['Transaction id', selected.transactionId],
                ['Dead letter id', selected.id],
                ['Partition id', selected.partitionId],
                ['Trace id', selected.traceId],
                ['Created', fmtStamp(selected.createdAt)],
                ['Failed', fmtStamp(selected.failedAt)],
              ] as [string, string][]
            )
              .filter(([, v]) => v)
              .map(([k, v]) => (
                <div key={k}>
                  <dt>{k}</dt>
                  <dd class="mono">{v}</dd>
                </div>
              ))}
          </dl>
          <p>
            <Link href={`/traces?partitionId=${enc(selected.partitionId)}&transactionId=${enc(selected.transactionId)}`}>Traces of this message →</Link>
          </p>
        </Drawer>
      )}

      {purge && queue && (
        <Confirm
          title={`Purge dead letters of ${queue}?`}
          confirmLabel="Purge"
          typeToConfirm={queue}
          onClose={() => setPurge(false)}
          onConfirm={async () => {
            const r = obj(await api('/api/v1/dlq', { method: 'DELETE', query: { queue, consumerGroup: group || undefined } }));
            toast(typeof r.deleted === 'number' ? `Purged ${plural(r.deleted, 'dead letter')} from ${queue}` : `Purged dead letters of ${queue}`);
            list.reload();
            void refresh();
          }}
        >
          Permanently deletes {group ? `the dead letters of group ${group}` : 'every dead letter'} in queue <strong>{queue}</strong> ({list.data && list.data.length >= LIMIT ? `${LIMIT}+` : fmtInt(list.data?.length ?? 0)}).
          They cannot be replayed afterwards.
        </Confirm>
      )}
    </div>
  );
}

function DeleteOne({ d, onDone }: { d: DeadLetter; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button class="btn btn-danger-ghost" onClick={() => setOpen(true)}>
        <Icon name="trash" size={16} /> Delete
      </button>
      {open && (
        <Confirm
          title="Delete this dead letter?"
          confirmLabel="Delete"
          onClose={() => setOpen(false)}
          onConfirm={async () => {
            await api(`/api/v1/messages/${enc(d.partitionId)}/${enc(d.transactionId)}`, { method: 'DELETE' });
            toast('Dead letter deleted');
            onDone();
          }}
        >
          Deletes the dead letter of <span class="mono">{d.transactionId}</span> in {d.queue} / {d.partition}. It cannot be replayed afterwards.
        </Confirm>
      )}
    </>
  );
}
