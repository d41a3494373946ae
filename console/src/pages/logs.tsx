/**
 * Logs: filters, cursor paging on the server, and one log's detail with bodies and hook results.
 * A page the server's read budget cut short (`partial`) says how far it searched, and More searches
 * on from its cursor, adding the rows to the page.
 */
import { useState } from 'preact/hooks';
import { type AnswerOf, get, type ItemOf, query } from '../api.ts';
import { Link } from '../router.tsx';
import type { Session } from '../session.ts';
import { Facts, Value } from '../fields.tsx';
import { CursorPager, ErrorNote, Field, JsonView, Table, useLoad } from '../ui.tsx';

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

type Row = ItemOf<'/v1/logs'>;
type List = AnswerOf<'/v1/logs'>;

/** The answers More added to the page that began with `first`. */
interface Continued {
  first?: List;
  answers: List[];
  loading: boolean;
  error?: unknown;
}

/** The detail's facts first, in this order; the bodies and hook results have their own sections. */
const DETAIL = [
  ['created_at', 'Time'],
  ['status_code', 'Status'],
  ['provider', 'Provider'],
  ['model', 'Model'],
  ['endpoint', 'Endpoint'],
  ['trace_id', 'Trace ID'],
  ['total_tokens', 'Tokens'],
  ['cost', 'Cost (¢)'],
  ['total_ms', 'Latency (ms)'],
  ['cache_status', 'Cache'],
  ['config_id', 'Config'],
  ['api_key_id', 'API key'],
  ['workspace_id', 'Workspace'],
] as const satisfies readonly (readonly [keyof AnswerOf<'/v1/logs/{logId}'>, string])[];
const SECTIONS = new Set(['request_body', 'response_body', 'hook_results', 'feedback']);

export function Logs({ session, id }: { session: Session; id: string | undefined }) {
  return id ? <LogDetail id={id} /> : <LogList session={session} />;
}

function LogList({ session }: { session: Session }) {
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [filters, setFilters] = useState<Record<string, string>>({});
  // Cursors of the pages before this one, so Previous works without the server keeping state.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const logs = useLoad(() => get('/v1/logs', {}, query({ ...filters, page_size: PAGE_SIZE, cursor })), [filters, cursor, session]);
  const [continued, setContinued] = useState<Continued>({ answers: [], loading: false });
  // Another page, or other filters, start again from their own first answer.
  const answers = logs.data ? [logs.data, ...(continued.first === logs.data ? continued.answers : [])] : [];
  const last = answers.at(-1);
  const rows = answers.flatMap((a) => a.data);
  const apply = (e: Event) => {
    e.preventDefault();
    setCursors([]);
    setFilters({ ...draft });
  };
  const searchOn = async () => {
    const first = logs.data;
    if (!first || !last?.next_cursor) return;
    const before = continued.first === first ? continued.answers : [];
    setContinued({ first, answers: before, loading: true });
    try {
      const next = await get('/v1/logs', {}, query({ ...filters, page_size: PAGE_SIZE - rows.length, cursor: last.next_cursor }));
      setContinued((c) => (c.first === first ? { first, answers: [...c.answers, next], loading: false } : c));
    } catch (error) {
      setContinued((c) => (c.first === first ? { ...c, loading: false, error } : c));
    }
  };
  const searching = continued.first === logs.data && continued.loading;
  return (
    <section>
      <h1>Logs</h1>
      <form class="filters" onSubmit={apply} aria-label="Log filters">
        {FILTERS.map((f) => (
          <Field key={f.name} label={f.label} name={f.name} error={logs.error} {...(f.hint ? { hint: f.hint } : {})}>
            {(fid, describedBy) => (
              <input
                id={fid}
                name={f.name}
                value={draft[f.name] ?? ''}
                aria-describedby={describedBy}
                onInput={(e) => setDraft({ ...draft, [f.name]: (e.target as HTMLInputElement).value })}
              />
            )}
          </Field>
        ))}
        <button type="submit">Apply filters</button>
      </form>
      <ErrorNote error={logs.error} shown={FILTERS.map((f) => f.name)} />
      {/* Paging above the table, and below it only a cut-short page's More: rows arriving push nothing down (no layout shift). */}
      <CursorPager cursors={cursors} next={last?.next_cursor} onChange={setCursors} />
      <div class="logs">
        <Table<Row>
          caption={logs.data?.total != null ? `Logs (${logs.data.total} in range)` : 'Logs'}
          rows={rows}
          loading={logs.loading}
          placeholder={PAGE_SIZE}
          rowKey={(r) => r.id}
          columns={[
            {
              label: 'Time',
              field: 'created_at',
              render: (r) => <Link to={`logs/${encodeURIComponent(r.id)}`}>{<Value name="created_at" value={r.created_at} />}</Link>,
            },
            { label: 'Status', field: 'status_code', render: (r) => <Value name="status_code" value={r.status_code} /> },
            { label: 'Provider', field: 'provider', render: (r) => <Value name="provider" value={r.provider} /> },
            { label: 'Model', field: 'model', render: (r) => <Value name="model" value={r.model} /> },
            { label: 'Tokens', field: 'total_tokens', render: (r) => <Value name="total_tokens" value={r.total_tokens} /> },
            { label: 'Cost (¢)', field: 'cost', render: (r) => <Value name="cost" value={r.cost} /> },
            { label: 'Latency (ms)', field: 'total_ms', render: (r) => <Value name="total_ms" value={r.total_ms} /> },
            { label: 'Trace', field: 'trace_id', render: (r) => <code>{r.trace_id}</code> },
          ]}
        />
      </div>
      {last?.partial && rows.length < PAGE_SIZE && (
        <div class="pager">
          <p role="status">
            Searched back to <Value name="scanned_until" value={last.scanned_until} /> (a search stops there to answer quickly); older logs are not searched
            yet.
          </p>
          <button type="button" onClick={searchOn} disabled={searching}>
            {searching ? 'Searching…' : 'More'}
          </button>
        </div>
      )}
      {continued.first === logs.data && <ErrorNote error={continued.error} />}
    </section>
  );
}

function LogDetail({ id }: { id: string }) {
  const log = useLoad(() => get('/v1/logs/{logId}', { logId: id }), [id]);
  const l = log.data as Record<string, unknown> | undefined;
  const facts = l && Object.fromEntries(Object.entries(l).filter(([k]) => !SECTIONS.has(k)));
  return (
    <section>
      <p>
        <Link to="logs">← All logs</Link>
      </p>
      <h1>Log {id}</h1>
      <ErrorNote error={log.error} />
      {l && facts && (
        <>
          <Facts item={facts} fields={DETAIL.map(([key, label]) => ({ key, label }))} />
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
