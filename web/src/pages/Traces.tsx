/** Traces: a timeline of the events recorded for a trace name or for one message. */
import { useEffect, useState } from 'preact/hooks';
import { api, enc, readTraceNames, readTraces, type TraceEvent } from '../api';
import { Badge, Card, Empty, Icon, Json, LoadError, Loading, Mono, PageHeader } from '../components/ui';
import { fmtAgo, fmtInt, fmtStamp, parseTime, shortId } from '../format';
import { usePoll } from '../live';
import { navigate, useLocation } from '../router';

function tone(t: string): 'good' | 'warn' | 'bad' | 'info' | 'neutral' {
  const s = t.toLowerCase();
  if (/(error|fail|dlq|dead)/.test(s)) return 'bad';
  if (/warn|retry/.test(s)) return 'warn';
  if (/(success|complete|done|ack|ok)/.test(s)) return 'good';
  if (s === 'info') return 'info';
  return 'neutral';
}

function fmtOffset(ms: number): string {
  if (ms < 1000) return `+${Math.round(ms)} ms`;
  if (ms < 60_000) return `+${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `+${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;
}

const LANES = ['#4f46e5', '#0d9488', '#d97706', '#db2777', '#0284c7', '#65a30d', '#7c3aed', '#64748b'];

export function Traces() {
  const { query } = useLocation();
  const name = query.get('name') ?? '';
  const pid = query.get('partitionId') ?? '';
  const txn = query.get('transactionId') ?? '';
  const byMessage = pid !== '' && txn !== '';
  const [input, setInput] = useState(byMessage ? `${pid}/${txn}` : name);
  useEffect(() => setInput(byMessage ? `${pid}/${txn}` : name), [name, pid, txn]);

  const names = usePoll(async (signal) => readTraceNames(await api('/api/v1/traces/names', { signal, query: { limit: 100 } })), 'names');
  const key = byMessage ? `m:${pid}/${txn}` : name ? `n:${name}` : '';
  const events = usePoll(
    async (signal) =>
      readTraces(
        await api(byMessage ? `/api/v1/traces/${enc(pid)}/${enc(txn)}` : `/api/v1/traces/by-name/${enc(name)}`, { signal, query: byMessage ? undefined : { limit: 500 } }),
      ),
    key,
    key !== '',
  );

  const submit = (e: Event) => {
    e.preventDefault();
    const v = input.trim();
    if (!v) return navigate('/traces');
    const slash = v.indexOf('/');
    if (slash > 0 && /^[0-9a-f-]{36}$/i.test(v.slice(0, slash))) {
      navigate(`/traces?partitionId=${enc(v.slice(0, slash))}&transactionId=${enc(v.slice(slash + 1))}`);
    } else navigate(`/traces?name=${enc(v)}`);
  };

  return (
    <div class="page">
      <PageHeader title="Traces" subtitle="Events consumers record on messages (POST /api/v1/traces), laid out in time." />
      <form class="trace-search" onSubmit={submit}>
        <div class="search search-lg">
          <Icon name="search" size={16} />
          <input
            class="input"
            placeholder="Trace name, or partitionId/transactionId"
            value={input}
            onInput={(e) => setInput((e.target as HTMLInputElement).value)}
            aria-label="Trace name or message address"
            data-testid="trace-input"
          />
        </div>
        <button class="btn btn-primary" type="submit">
          Show timeline
        </button>
      </form>
      <div class="grid-trace">
        <Card title="Trace names" pad={false} class="trace-names">
          {names.error ? (
            <LoadError error={names.error} what="trace names" />
          ) : !names.data ? (
            <Loading />
          ) : names.data.length === 0 ? (
            <Empty icon="traces" title="No traces recorded yet">
              Consumers record events with <code>message.trace()</code>.
            </Empty>
          ) : (
            <ul class="list" data-testid="trace-names">
              {names.data.map((n) => (
                <li key={n.name}>
                  <a
                    href={`/traces?name=${enc(n.name)}`}
                    class={!byMessage && n.name === name ? 'active' : ''}
                    onClick={(e) => {
                      e.preventDefault();
                      navigate(`/traces?name=${enc(n.name)}`);
                    }}
                  >
                    <span class="list-main">{n.name}</span>
                    <span class="list-sub muted">
                      {n.traces ? `${fmtInt(n.traces)} events` : ''}
                      {n.messages ? ` · ${fmtInt(n.messages)} msgs` : ''}
                      {n.lastSeen ? ` · ${fmtAgo(n.lastSeen)}` : ''}
                    </span>
                  </a>
                </li>
              ))}
            </ul>
          )}
        </Card>
        <Card title={byMessage ? <>Message <Mono>{shortId(txn, 18, 6)}</Mono></> : name ? <>Trace <Mono>{name}</Mono></> : 'Timeline'} pad={false}>
          {!key ? (
            <Empty icon="traces" title="Pick a trace name, or paste a message address">
              A message address is its <code>partitionId/transactionId</code>, shown on the Messages and Dead letters pages.
            </Empty>
          ) : events.error ? (
            <LoadError error={events.error} what="traces" />
          ) : !events.data ? (
            <Loading />
          ) : events.data.length === 0 ? (
            <Empty icon="traces" title="No events recorded for this trace" />
          ) : (
            <Timeline events={events.data} current={byMessage ? '' : name} />
          )}
        </Card>
      </div>
    </div>
  );
}

function Timeline({ events, current }: { events: TraceEvent[]; current: string }) {
  const sorted = [...events].sort((a, b) => (parseTime(a.createdAt) ?? 0) - (parseTime(b.createdAt) ?? 0) || a.id.localeCompare(b.id));
  const t0 = parseTime(sorted[0]!.createdAt) ?? 0;
  const t1 = parseTime(sorted[sorted.length - 1]!.createdAt) ?? t0;
  const span = Math.max(1, t1 - t0);
  const lanes = new Map<string, number>();
  for (const e of sorted) {
    const k = `${e.partitionId}/${e.transactionId}`;
    if (!lanes.has(k)) lanes.set(k, lanes.size);
  }
  const laneColor = (e: TraceEvent) => LANES[(lanes.get(`${e.partitionId}/${e.transactionId}`) ?? 0) % LANES.length]!;
  const multi = lanes.size > 1;
  return (
    <div class="timeline" data-testid="timeline">
      <div class="timeline-summary">
        <span>
          <strong>{fmtInt(sorted.length)}</strong> events
        </span>
        {multi && (
          <span>
            <strong>{fmtInt(lanes.size)}</strong> messages
          </span>
        )}
        <span>
          over <strong>{fmtOffset(t1 - t0).slice(1)}</strong>
        </span>
        <span class="muted">from {fmtStamp(sorted[0]!.createdAt)}</span>
      </div>
      <div class="ruler" aria-hidden="true">
        {sorted.map((e) => (
          <span key={e.id} class={`ruler-dot tone-bg-${tone(e.eventType)}`} style={{ left: `${(((parseTime(e.createdAt) ?? t0) - t0) / span) * 100}%` }} title={`${e.eventType} ${fmtOffset((parseTime(e.createdAt) ?? t0) - t0)}`} />
        ))}
        <span class="ruler-label">0</span>
        <span class="ruler-label end">{fmtOffset(t1 - t0)}</span>
      </div>
      <ol class="events">
        {sorted.map((e) => {
          const at = parseTime(e.createdAt) ?? t0;
          return (
            <li key={e.id} class="event" data-event-type={e.eventType}>
              <div class="event-when">
                <div class="event-offset">{fmtOffset(at - t0)}</div>
                <div class="muted small" title={fmtStamp(e.createdAt)}>
                  {new Date(at).toLocaleTimeString('en-GB')}
                </div>
              </div>
              <div class="event-rail">
                <span class={`event-dot tone-bg-${tone(e.eventType)}`} />
              </div>
              <div class="event-body">
                <div class="event-head">
                  <Badge tone={tone(e.eventType)}>{e.eventType}</Badge>
                  {e.consumerGroup && <span class="muted small">{e.consumerGroup === '__QUEUE_MODE__' ? 'queue mode' : e.consumerGroup}</span>}
                  {e.workerId && <span class="muted small">worker {shortId(e.workerId)}</span>}
                  {multi && (
                    <span class="lane small" style={{ borderColor: laneColor(e), color: laneColor(e) }}>
                      {e.queue ? `${e.queue}/${e.partition} · ` : ''}
                      {shortId(e.transactionId, 12, 4)}
                    </span>
                  )}
                </div>
                {e.data !== undefined && e.data !== null && <Json value={e.data} class="json-sm" />}
                {e.traceNames.some((n) => n !== current) && (
                  <div class="event-names">
                    {e.traceNames.filter((n) => n !== current).map((n) => (
                      <span key={n} class="tag">
                        {n}
                      </span>
                    ))}
                  </div>
                )}
              </div>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
