/** Streams: registered streaming queries, their source and sink queues, and state rows per source partition (docs/streams.md). */
import { api, arr, enc, num, obj, str } from '../api';
import { Badge, Card, Empty, Link, LoadError, Loading, Mono, PageHeader } from '../components/ui';
import { fmtAgo, fmtInt, shortId } from '../format';
import { usePoll } from '../live';

/** One registered query as the page shows it. */
export interface StreamQuery {
  id: string;
  name: string;
  source: string;
  sink: string;
  configHash: string;
  updatedAt: string;
  partitions: { partitionId: string; rows: number }[];
}

/** Reads `GET /api/v1/streams/queries`. */
export function readStreamQueries(body: unknown): StreamQuery[] {
  return arr(obj(body).queries).map((x) => {
    const q = obj(x);
    return {
      id: str(q.query_id), name: str(q.name), source: str(q.source_queue), sink: str(q.sink_queue), configHash: str(q.config_hash),
      updatedAt: str(q.updated_at),
      partitions: arr(q.partitions).map((p) => ({ partitionId: str(obj(p).partition_id), rows: num(obj(p).rows) })),
    };
  });
}

export function Streams() {
  const queries = usePoll(async (signal) => readStreamQueries(await api('/api/v1/streams/queries', { signal, query: { limit: 1000 } })), 'streams');
  return (
    <div class="page">
      <PageHeader title="Streams" subtitle="Streaming queries registered by the SDKs' Stream API: where they read, where they write, and the state they keep per source partition." />
      <Card pad={false}>
        {queries.error ? (
          <LoadError error={queries.error} what="streams" />
        ) : !queries.data ? (
          <Loading />
        ) : queries.data.length === 0 ? (
          <Empty icon="queues" title="No streaming queries yet">
            A query registers when a worker runs <code>Stream.from(queue)…run(&#123; queryId &#125;)</code>.
          </Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="streams-table">
              <thead>
                <tr>
                  <th>Query</th>
                  <th>Source</th>
                  <th>Sink</th>
                  <th class="num">Partitions</th>
                  <th class="num">State rows</th>
                  <th class="hide-sm">State rows per partition</th>
                  <th class="hide-md">Config hash</th>
                  <th class="hide-sm">Updated</th>
                </tr>
              </thead>
              <tbody>
                {queries.data.map((q) => (
                  <tr key={q.id} data-query={q.name}>
                    <td class="strong" title={q.id}>{q.name}</td>
                    <td>
                      <Link href={`/queues/${enc(q.source)}`}>{q.source}</Link>
                    </td>
                    <td data-testid="stream-sink">{q.sink ? <Link href={`/queues/${enc(q.sink)}`}>{q.sink}</Link> : <span class="muted">none</span>}</td>
                    <td class="num">{fmtInt(q.partitions.length)}</td>
                    <td class="num" data-testid="stream-rows">{fmtInt(q.partitions.reduce((a, p) => a + p.rows, 0))}</td>
                    <td class="hide-sm" data-testid="stream-partitions">
                      {q.partitions.length === 0 ? (
                        <span class="muted">—</span>
                      ) : (
                        q.partitions.map((p) => (
                          <span key={p.partitionId} class="nowrap" title={p.partitionId}>
                            <Mono>{shortId(p.partitionId, 8, 4)}</Mono> <Badge tone="info">{fmtInt(p.rows)}</Badge>{' '}
                          </span>
                        ))
                      )}
                    </td>
                    <td class="hide-md">
                      <Mono title={q.configHash}>{shortId(q.configHash, 10, 4)}</Mono>
                    </td>
                    <td class="hide-sm muted">{q.updatedAt ? fmtAgo(q.updatedAt) : '—'}</td>
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
