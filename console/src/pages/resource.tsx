/**
 * One page for each resource of resources.ts: the list (paged on the server), create from a JSON
 * body (the route's OpenAPI example to start from), an item's view and edit, delete with a
 * confirmation, and a list below the item (a workspace's members). Problems appear by path.
 */
import { useState } from 'preact/hooks';
import { api, query, type Json, type ListBody } from '../api.ts';
import type { ResourceDef } from '../resources.ts';
import { Link, navigate } from '../router.tsx';
import { can, type Session } from '../session.ts';
import { cell, Confirm, Dialog, ErrorNote, JsonEditor, JsonView, Pager, parseJson, pretty, Table, useLoad } from '../ui.tsx';

const PAGE_SIZE = 20;
const enc = encodeURIComponent;

let examples: Promise<Record<string, unknown>> | undefined;

/** Each admin POST route's example body, from the API's own description (fetched once). */
function exampleFor(path: string): Promise<unknown> {
  examples ??= api<{ paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { example?: unknown }> } }>> }>('GET', '/v1/openapi.json').then(
    (doc) => Object.fromEntries(Object.entries(doc.paths ?? {}).map(([p, ops]) => [p, ops.post?.requestBody?.content?.['application/json']?.example])),
    () => ({}),
  );
  return examples.then((e) => e[path]);
}

export function ResourcePage({ def, session, id }: { def: ResourceDef; session: Session; id: string | undefined }) {
  return id && def.read ? <Item def={def} session={session} id={id} /> : <List def={def} session={session} path={def.path} title={def.title} columns={def.columns} create={def.create} template={def.template} link />;
}

interface ListProps {
  def: ResourceDef;
  session: Session;
  path: string;
  title: string;
  columns: string[];
  create: string | undefined;
  template: Json | undefined;
  link?: boolean;
  level?: 1 | 2;
}

function List({ def, session, path, title, columns, create, template, link, level = 1 }: ListProps) {
  const [page, setPage] = useState(0);
  const [cursors, setCursors] = useState<string[]>([]);
  const [creating, setCreating] = useState(false);
  const cursor = cursors[cursors.length - 1];
  const list = useLoad(() => api<ListBody>('GET', `${path}${query({ current_page: cursor ? undefined : page, page_size: PAGE_SIZE, cursor })}`), [path, page, cursor, session]);
  const rows = list.data?.data ?? [];
  const H = level === 1 ? 'h1' : 'h2';
  const cursorMode = list.data !== undefined && 'next_cursor' in list.data;
  return (
    <section>
      <H>{title}</H>
      {create && can(session, create) && (
        <div class="toolbar">
          <button type="button" onClick={() => setCreating(true)}>
            Create
          </button>
        </div>
      )}
      <ErrorNote error={list.error} />
      <Table<Json>
        caption={title}
        rows={rows}
        rowKey={(r) => String(r[def.idKey] ?? r.id ?? JSON.stringify(r))}
        columns={columns.map((c, i) => ({
          label: c,
          render: (r: Json) => (i === 0 && link && def.read ? <Link to={`${def.id}/${enc(String(r[def.idKey]))}`}>{cell(r[c])}</Link> : cell(r[c])),
        }))}
      />
      {cursorMode ? (
        <nav class="pager" aria-label="Pages">
          <button type="button" disabled={!cursors.length} onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous
          </button>
          <button type="button" disabled={!list.data?.next_cursor} onClick={() => list.data?.next_cursor && setCursors([...cursors, list.data.next_cursor])}>
            Next
          </button>
        </nav>
      ) : (
        <Pager page={page} size={PAGE_SIZE} total={list.data?.total ?? null} count={rows.length} onPage={setPage} />
      )}
      {creating && (
        <CreateDialog
          path={path}
          template={template}
          title={`Create: ${title}`}
          onClose={() => setCreating(false)}
          onCreated={(r) => {
            setCreating(false);
            list.reload();
            const newId = r[def.idKey] ?? r.id;
            if (link && def.read && newId !== undefined) navigate(`${def.id}/${enc(String(newId))}`);
          }}
        />
      )}
    </section>
  );
}

function CreateDialog({ path, template, title, onClose, onCreated }: { path: string; template: Json | undefined; title: string; onClose: () => void; onCreated: (r: Json) => void }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const example = useLoad(async () => (await exampleFor(path)) ?? template ?? {}, [path]);
  const value = text ?? (example.data !== undefined ? pretty(example.data) : '');
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = parseJson(value);
    if (body === null) return;
    setError(null);
    try {
      onCreated((await api<Json>('POST', path, body)) ?? {});
    } catch (err) {
      setError(err);
    }
  };
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={submit}>
        <JsonEditor label="Body (JSON)" name="*" value={value} onInput={setText} error={error} />
        <ErrorNote error={error} shown={['*']} />
        <div class="actions">
          <button type="submit">Create</button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function Item({ def, session, id }: { def: ResourceDef; session: Session; id: string }) {
  const url = `${def.path}/${enc(id)}`;
  const item = useLoad(() => api<Json>('GET', url + (def.readQuery ?? '')), [url]);
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const value = text ?? (item.data ? pretty(item.data) : '');
  const save = async (e: Event) => {
    e.preventDefault();
    const body = parseJson(value);
    if (body === null) return;
    setError(null);
    setSaved(false);
    try {
      await api('PUT', url, body);
      setSaved(true);
      setText(null);
      item.reload();
    } catch (err) {
      setError(err);
    }
  };
  const editable = def.update !== undefined && can(session, def.update);
  return (
    <section>
      <p>
        <Link to={def.id}>← {def.title}</Link>
      </p>
      <h1>
        {def.title}: {id}
      </h1>
      <ErrorNote error={item.error} />
      {item.data &&
        (editable ? (
          <form onSubmit={save}>
            <JsonEditor label="Edit (JSON; fields the server does not take on update are named in its answer)" name="*" value={value} onInput={setText} error={error} rows={18} />
            <ErrorNote error={error} shown={['*']} />
            {saved && <p role="status">Saved.</p>}
            <div class="actions">
              <button type="submit">Save</button>
              {def.remove && can(session, def.remove) && (
                <button type="button" class="danger" onClick={() => setDeleting(true)}>
                  Delete
                </button>
              )}
            </div>
          </form>
        ) : (
          <JsonView label={def.title} value={item.data} />
        ))}
      {deleting && <Confirm question={`Delete ${def.title.toLowerCase()} "${id}"? This cannot be undone.`} action={() => api('DELETE', url)} onCancel={() => setDeleting(false)} onDone={() => navigate(def.id)} />}
      {def.sub && can(session, def.sub.scope) && (
        <List def={def} session={session} path={`${url}/${def.sub.suffix}`} title={def.sub.title} columns={def.sub.columns} create={def.sub.create} template={def.sub.template} level={2} />
      )}
    </section>
  );
}
