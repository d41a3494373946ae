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
import { cell, Confirm, CreateButton, CursorPager, Dialog, ErrorNote, FormActions, JsonEditor, JsonView, Pager, parseJson, pretty, Table, useLoad, useSubmit } from '../ui.tsx';

const PAGE_SIZE = 20;
const enc = encodeURIComponent;

type OpenApiDoc = { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { example?: unknown }> } }>> };
let openapi: Promise<OpenApiDoc> | undefined;

/** A route's example body from the API's own description (fetched once): `path` with `{param}` segments. */
async function exampleFor(method: 'post' | 'put', path: RegExp | string): Promise<unknown> {
  openapi ??= api<OpenApiDoc>('GET', '/v1/openapi.json').catch(() => ({}));
  const paths = (await openapi).paths ?? {};
  const key = typeof path === 'string' ? path : Object.keys(paths).find((p) => path.test(p));
  return key ? paths[key]?.[method]?.requestBody?.content?.['application/json']?.example : undefined;
}

const itemPattern = (base: string) => new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\{[^}/]+\\}$`);

// Fields the server sets itself; an edit starts without them.
const READ_ONLY = new Set(['id', 'object', 'created_at', 'updated_at', 'last_updated_at', 'created_by', 'last_updated_by', 'organisation_id', 'version_id', 'prompt_version', 'versions']);

/** The edit body: the item's fields the update route's example names, else the item minus server-set fields. */
function editable(item: Json, example: unknown): Json {
  if (example && typeof example === 'object' && !Array.isArray(example)) {
    const ex = example as Json;
    return Object.fromEntries(Object.keys(ex).map((k) => [k, k in item ? item[k] : ex[k]]));
  }
  return Object.fromEntries(Object.entries(item).filter(([k]) => !READ_ONLY.has(k)));
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
      <CreateButton shown={!!create && can(session, create)} label="Create" onClick={() => setCreating(true)} />
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
        <CursorPager cursors={cursors} next={list.data?.next_cursor} onChange={setCursors} />
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
  const example = useLoad(async () => (await exampleFor('post', path)) ?? template ?? {}, [path]);
  const value = text ?? (example.data !== undefined ? pretty(example.data) : '');
  const { error, submit } = useSubmit(async () => {
    const body = parseJson(value);
    if (body !== null) onCreated((await api<Json>('POST', path, body)) ?? {});
  });
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={submit}>
        <JsonEditor label="Body (JSON)" name="*" value={value} onInput={setText} error={error} />
        <ErrorNote error={error} shown={['*']} />
        <FormActions label="Create" onCancel={onClose} />
      </form>
    </Dialog>
  );
}

function Item({ def, session, id }: { def: ResourceDef; session: Session; id: string }) {
  const url = `${def.path}/${enc(id)}`;
  const item = useLoad(async () => {
    const [got, example] = await Promise.all([api<Json>('GET', url + (def.readQuery ?? '')), exampleFor('put', itemPattern(def.path))]);
    return { got, body: editable(got, example) };
  }, [url]);
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const value = text ?? (item.data ? pretty(item.data.body) : '');
  const { error, submit: save } = useSubmit(async () => {
    const body = parseJson(value);
    setSaved(false);
    if (body === null) return;
    await api('PUT', url, body);
    setSaved(true);
    setText(null);
    item.reload();
  });
  const canEdit = def.update !== undefined && can(session, def.update);
  return (
    <section>
      <p>
        <Link to={def.id}>← {def.title}</Link>
      </p>
      <h1>
        {def.title}: {id}
      </h1>
      <ErrorNote error={item.error} />
      {item.data && <JsonView label={`${def.title} as stored`} value={item.data.got} />}
      {item.data &&
        (canEdit ? (
          <form onSubmit={save}>
            <JsonEditor label="Edit (JSON)" name="*" value={value} onInput={setText} error={error} rows={18} />
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
          null
        ))}
      {def.versions && <Versions def={def} session={session} url={url} onChange={item.reload} />}
      {def.render && <RenderPreview url={url} />}
      {deleting && <Confirm question={`Delete ${def.title.toLowerCase()} "${id}"? This cannot be undone.`} action={() => api('DELETE', url)} onCancel={() => setDeleting(false)} onDone={() => navigate(def.id)} />}
      {def.sub && can(session, def.sub.scope) && (
        <List def={def} session={session} path={`${url}/${def.sub.suffix}`} title={def.sub.title} columns={def.sub.columns} create={def.sub.create} template={def.sub.template} level={2} />
      )}
    </section>
  );
}

function Versions({ def, session, url, onChange }: { def: ResourceDef; session: Session; url: string; onChange: () => void }) {
  const [page, setPage] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const list = useLoad(() => api<ListBody>('GET', `${url}/versions${query({ current_page: page, page_size: PAGE_SIZE })}`), [url, page]);
  const labels = useLoad(() => (def.versions?.label ? api<ListBody>('GET', `/v1/labels${query({ page_size: 100 })}`) : Promise.resolve(undefined)), [def.id]);
  const editable = def.update !== undefined && can(session, def.update);
  const act = async (method: string, path: string, body: Json) => {
    setError(null);
    try {
      await api(method, path, body);
      list.reload();
      onChange();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <>
      <h2>Versions</h2>
      <ErrorNote error={list.error ?? error} />
      <Table<Json>
        caption="Versions"
        rows={list.data?.data ?? []}
        rowKey={(r) => String(r.id ?? r.prompt_version_id ?? r.version)}
        columns={[
          { label: 'Version', render: (r) => cell(r.prompt_version ?? r.version) },
          { label: 'Description', render: (r) => cell(r.prompt_version_description ?? r.version_description ?? r.description) },
          { label: 'Labels', render: (r) => cell(r.label_id ?? r.labels) },
          { label: 'Created', render: (r) => cell(r.created_at) },
          {
            label: 'Actions',
            render: (r) =>
              editable && (
                <span class="row-actions">
                  {def.versions?.makeDefault && (
                    <button type="button" onClick={() => act('PUT', `${url}/makeDefault`, { version: Number(r.prompt_version ?? r.version) })}>
                      Make default
                    </button>
                  )}
                  {def.versions?.label && (
                    <select aria-label={`Label version ${String(r.prompt_version ?? r.version)}`} value="" onChange={(e) => act('PUT', `${url}/versions/${enc(String(r.id))}`, { label_id: (e.target as HTMLSelectElement).value })}>
                      <option value="">Set label…</option>
                      {(labels.data?.data ?? []).map((l) => (
                        <option key={String(l.id)} value={String(l.id)}>
                          {String(l.name)}
                        </option>
                      ))}
                    </select>
                  )}
                </span>
              ),
          },
        ]}
      />
      <Pager page={page} size={PAGE_SIZE} total={list.data?.total ?? null} count={list.data?.data.length ?? 0} onPage={setPage} />
    </>
  );
}

/** Renders the item with variables on the server (nothing is sent to a provider). */
function RenderPreview({ url }: { url: string }) {
  const [text, setText] = useState(pretty({ variables: {} }));
  const [result, setResult] = useState<unknown>(undefined);
  const { error, submit } = useSubmit(async () => {
    const body = parseJson(text);
    setResult(undefined);
    if (body !== null) setResult(await api('POST', `${url}/render`, body));
  });
  return (
    <form onSubmit={submit}>
      <h2>Render preview</h2>
      <JsonEditor label="Variables and parameters (JSON)" name="*" value={text} onInput={setText} error={error} rows={6} />
      <ErrorNote error={error} shown={['*']} />
      <button type="submit">Render</button>
      {result !== undefined && <JsonView label="Rendered" value={result} />}
    </form>
  );
}
