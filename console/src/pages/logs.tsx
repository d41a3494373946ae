/** Logs: filters, cursor paging on the server, and one log's detail with bodies and hook results. */
import { useState } from 'preact/hooks';
import { api, query, type Json, type ListBody } from '../api.ts';
import { Link } from '../router.tsx';
import type { Session } from '../session.ts';
import { cell, CursorPager, ErrorNote, Field, JsonView, Table, useLoad } from '../ui.tsx';

const FILTERS: { name: string; label: string; hint?: string }[] = [
  { name: 'trace_id', label: 'Trace id' },
  { name: 'model', label: 'Model' },
  { name: 'provider', label: 'Provider' },
  { name: 'status_code', label: 'Status codes', hint: 'comma-separated, e.g. 200,429' },
  { name: 'workspace_id', label: 'Workspace' },
  { name: 'time_of_generation_min', label: 'From', hint: 'ISO 8601, e.g. 2026-11-24T00:00:00Z' },
  { name: 'time_of_generation_max', label: 'To' },
];

const PAGE_SIZE = 25;

export function Logs({ session, id }: { session: Session; id: string | undefined }) {
  return id ? <LogDetail id={id} /> : <LogList session={session} />;
}

function LogList({ session }: { session: Session }) {
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [filters, setFilters] = useState<Record<string, string>>({});
  // Cursors of the pages before this one, so Previous works without the server keeping state.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const logs = useLoad(() => api<ListBody>('GET', `/v1/logs${query({ ...filters, page_size: PAGE_SIZE, cursor })}`), [filters, cursor, session]);
  const apply = (e: Event) => {
    e.preventDefault();
    setCursors([]);
    setFilters({ ...draft });
  };
  const rows = logs.data?.data ?? [];
  return (
    <section>
      <h1>Logs</h1>
      <form class="filters" onSubmit={apply} aria-label="Log filters">
        {FILTERS.map((f) => (
          <Field key={f.name} label={f.label} name={f.name} error={logs.error} {...(f.hint ? { hint: f.hint } : {})}>
            {(fid, describedBy) => <input id={fid} name={f.name} value={draft[f.name] ?? ''} aria-describedby={describedBy} onInput={(e) => setDraft({ ...draft, [f.name]: (e.target as HTMLInputElement).value })} />}
          </Field>
        ))}
        <button type="submit">Apply filters</button>
      </form>
      <ErrorNote error={logs.error} shown={FILTERS.map((f) => f.name)} />
      <Table<Json>
        caption={logs.data?.total != null ? `Logs (${logs.data.total} in range)` : 'Logs'}
        rows={rows}
        rowKey={(r) => String(r.id)}
        columns={[
          { label: 'Time', render: (r) => <Link to={`logs/${encodeURIComponent(String(r.id))}`}>{cell(r.created_at)}</Link> },
          { label: 'Status', render: (r) => cell(r.status_code) },
          { label: 'Provider', render: (r) => cell(r.provider) },
          { label: 'Model', render: (r) => cell(r.model) },
          { label: 'Tokens', render: (r) => cell(r.total_tokens) },
          { label: 'Cost (¢)', render: (r) => cell(r.cost) },
          { label: 'Latency (ms)', render: (r) => cell(r.total_ms) },
          { label: 'Trace', render: (r) => <code>{cell(r.trace_id)}</code> },
        ]}
      />
      <CursorPager cursors={cursors} next={logs.data?.next_cursor} onChange={setCursors} />
    </section>
  );
}

function LogDetail({ id }: { id: string }) {
  const log = useLoad(() => api<Json>('GET', `/v1/logs/${encodeURIComponent(id)}`), [id]);
  const l = log.data;
  return (
    <section>
      <p>
        <Link to="logs">← All logs</Link>
      </p>
      <h1>Log {id}</h1>
      <ErrorNote error={log.error} />
      {l && (
        <>
          <dl class="facts">
            {['created_at', 'status_code', 'provider', 'model', 'endpoint', 'trace_id', 'total_tokens', 'cost', 'total_ms', 'cache_status', 'config_id', 'api_key_id'].map((k) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{cell(l[k])}</dd>
              </div>
            ))}
          </dl>
          <h2>Request body</h2>
          <JsonView label="Request body" value={l.request_body} />
          <h2>Response body</h2>
          <JsonView label="Response body" value={l.response_body} />
          <h2>Hook results</h2>
          <JsonView label="Hook results" value={l.hook_results ?? null} />
          {Array.isArray(l.feedback) && l.feedback.length > 0 && (
            <>
              <h2>Feedback</h2>
              <JsonView label="Feedback" value={l.feedback} />
            </>
          )}
        </>
      )}
    </section>
  );
}
