/**
 * One page for each resource of resources.ts: the list (paged on the server) with labelled
 * columns, create from a JSON body (the route's OpenAPI example to start from, with what it needs
 * first picked or made), an item as a labelled definition list with its edit (JSON) and delete
 * with a confirmation, and a list below the item (a workspace's members). Problems appear by path.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, query, type Json, type ListBody } from '../api.ts';
import { Facts, Value } from '../fields.tsx';
import { type Column, type Prerequisite, resourceById, type ResourceDef } from '../resources.ts';
import { Link, navigate } from '../router.tsx';
import { can, type Session } from '../session.ts';
import {
  Confirm,
  CreateButton,
  CursorPager,
  Dialog,
  ErrorNote,
  Field,
  FormActions,
  JsonEditor,
  JsonView,
  Pager,
  parseJson,
  pretty,
  Table,
  useLoad,
  useSubmit,
} from '../ui.tsx';

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
const READ_ONLY = new Set([
  'id',
  'object',
  'created_at',
  'updated_at',
  'last_updated_at',
  'created_by',
  'last_updated_by',
  'organisation_id',
  'version_id',
  'prompt_version',
  'versions',
]);

/** The edit body: the item's fields the update route's example names, else the item minus server-set fields. */
function editable(item: Json, example: unknown): Json {
  if (example && typeof example === 'object' && !Array.isArray(example)) {
    const ex = example as Json;
    return Object.fromEntries(Object.keys(ex).map((k) => [k, k in item ? item[k] : ex[k]]));
  }
  return Object.fromEntries(Object.entries(item).filter(([k]) => !READ_ONLY.has(k)));
}

export function ResourcePage({ def, session, id }: { def: ResourceDef; session: Session; id: string | undefined }) {
  return id && def.read ? (
    <Item def={def} session={session} id={id} />
  ) : (
    <List
      def={def}
      session={session}
      path={def.path}
      title={def.title}
      columns={def.columns}
      create={def.create}
      template={def.template}
      needs={def.needs}
      link
    />
  );
}

interface ListProps {
  def: ResourceDef;
  session: Session;
  path: string;
  title: string;
  columns: Column[];
  create: string | undefined;
  template: Json | undefined;
  needs?: Prerequisite | undefined;
  link?: boolean;
  level?: 1 | 2;
}

/** Table columns from declared fields: each cell shown by its format, the first linked to the item. */
export function columnsOf<T extends object = Json>(
  columns: Column[],
  link?: (r: T) => string | undefined,
): { label: string; field: string; render: (r: T) => ComponentChildren }[] {
  return columns.map((c, i) => ({
    label: c.label,
    field: c.key,
    render: (r: T) => {
      const shown = <Value name={c.key} value={(r as Record<string, unknown>)[c.key]} {...(c.format ? { format: c.format } : {})} />;
      const to = i === 0 ? link?.(r) : undefined;
      return to ? <Link to={to}>{shown}</Link> : shown;
    },
  }));
}

function List({ def, session, path, title, columns, create, template, needs, link, level = 1 }: ListProps) {
  const [page, setPage] = useState(0);
  const [cursors, setCursors] = useState<string[]>([]);
  const [creating, setCreating] = useState(false);
  const cursor = cursors[cursors.length - 1];
  const list = useLoad(
    () => api<ListBody>('GET', `${path}${query({ current_page: cursor ? undefined : page, page_size: PAGE_SIZE, cursor })}`),
    [path, page, cursor, session],
  );
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
        loading={list.loading}
        rowKey={(r) => String(r[def.idKey] ?? r.id ?? JSON.stringify(r))}
        columns={columnsOf(columns, link && def.read ? (r) => `${def.id}/${enc(String(r[def.idKey]))}` : undefined)}
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
          needs={needs}
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

function CreateDialog({
  path,
  template,
  needs,
  title,
  onClose,
  onCreated,
}: {
  path: string;
  template: Json | undefined;
  needs: Prerequisite | undefined;
  title: string;
  onClose: () => void;
  onCreated: (r: Json) => void;
}) {
  const [text, setText] = useState<string | null>(null);
  const example = useLoad(async () => (await exampleFor('post', path)) ?? template ?? {}, [path]);
  // What it needs is chosen in its own field; the example's value (a made-up id) is not kept.
  const start = example.data && needs ? withField(example.data, needs.field, undefined) : example.data;
  const [picked, setPicked] = useState('');
  const value = text ?? (start !== undefined ? pretty(start) : '');
  const { error, submit } = useSubmit(async () => {
    const body = parseJson(value);
    if (body === null) return;
    onCreated((await api<Json>('POST', path, needs && picked ? withField(body, needs.field, picked) : body)) ?? {});
  });
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={submit}>
        {needs && <PickPrerequisite needs={needs} value={picked} onPick={setPicked} error={error} />}
        <JsonEditor
          label={needs ? 'The rest of the body (JSON)' : 'Body (JSON)'}
          name="*"
          value={value}
          onInput={setText}
          error={error}
          {...(needs ? { shownElsewhere: [needs.field] } : {})}
        />
        <ErrorNote error={error} shown={['*']} />
        <FormActions label="Create" onCancel={onClose} />
      </form>
    </Dialog>
  );
}

const withField = (body: unknown, field: string, value: string | undefined): unknown => {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const { [field]: _dropped, ...rest } = body as Json;
  return value === undefined ? rest : { ...rest, [field]: value };
};

/**
 * The item a new one needs (a prompt's collection): why, a choice among those that exist, and,
 * where a name is enough, a quick create of one that is then chosen.
 */
function PickPrerequisite({ needs, value, onPick, error }: { needs: Prerequisite; value: string; onPick: (id: string) => void; error: unknown }) {
  const def = resourceById(needs.resource);
  const options = useLoad(() => api<ListBody>('GET', `${def?.path ?? ''}${query({ page_size: 100 })}`), [needs.resource]);
  const [name, setName] = useState('');
  const [made, setMade] = useState<unknown>(null);
  const items = options.data?.data ?? [];
  const make = async () => {
    setMade(null);
    try {
      const r = await api<Json>('POST', def?.path ?? '', { ...needs.quickCreate, name });
      setName('');
      onPick(String(r.id));
      options.reload();
    } catch (e) {
      setMade(e);
    }
  };
  const label = def?.title.replace(/s$/, '') ?? needs.field;
  return (
    <fieldset class="needs">
      <legend>{label}</legend>
      <p class="hint">{needs.why}</p>
      <Field label={label} name={needs.field} error={error}>
        {(id, d) => (
          <select id={id} value={value} aria-describedby={d} onChange={(e) => onPick((e.target as HTMLSelectElement).value)}>
            <option value="">{options.loading ? 'Loading…' : items.length ? 'Choose one…' : 'None exists yet'}</option>
            {items.map((o) => (
              <option key={String(o.id)} value={String(o.id)}>
                {String(o.name ?? o.slug ?? o.id)}
              </option>
            ))}
          </select>
        )}
      </Field>
      {needs.quickCreate ? (
        <div class="quick-create">
          <Field label={`New ${label.toLowerCase()} name`} name={`new-${needs.resource}`} error={made}>
            {(id, d) => <input id={id} value={name} aria-describedby={d} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}
          </Field>
          <button type="button" disabled={!name.trim()} onClick={make}>
            Create {label.toLowerCase()}
          </button>
          <ErrorNote error={made} shown={['name']} />
        </div>
      ) : (
        def && (
          <p>
            Or <Link to={def.id}>go to {def.title}</Link>.
          </p>
        )
      )}
    </fieldset>
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
  const got = item.data?.got;
  const name = got && (typeof got.name === 'string' ? got.name : typeof got.slug === 'string' ? got.slug : undefined);
  return (
    <section>
      <p>
        <Link to={def.id}>← {def.title}</Link>
      </p>
      <h1>
        {def.title}: {name ?? id}
      </h1>
      <ErrorNote error={item.error} />
      {got && <Facts item={got} fields={def.fields} />}
      {got && (
        <div class="actions">
          {def.remove && can(session, def.remove) && (
            <button type="button" class="danger" onClick={() => setDeleting(true)}>
              Delete
            </button>
          )}
        </div>
      )}
      {got && canEdit && (
        <details class="edit" open={error ? true : undefined}>
          <summary>Edit</summary>
          <form onSubmit={save}>
            <JsonEditor label="Edit (JSON)" name="*" value={value} onInput={setText} error={error} rows={18} />
            <ErrorNote error={error} shown={['*']} />
            <div class="actions">
              <button type="submit">Save</button>
            </div>
          </form>
        </details>
      )}
      {saved && <p role="status">Saved.</p>}
      {def.versions && <Versions def={def} session={session} url={url} onChange={item.reload} />}
      {def.render && <RenderPreview url={url} />}
      {deleting && (
        <Confirm
          question={`Delete ${def.title.toLowerCase()} "${name ?? id}"? This cannot be undone.`}
          action={() => api('DELETE', url)}
          onCancel={() => setDeleting(false)}
          onDone={() => navigate(def.id)}
        />
      )}
      {def.sub && can(session, def.sub.scope) && (
        <List
          def={def}
          session={session}
          path={def.sub.path.replace(/\{[^}]+\}/, enc(id))}
          title={def.sub.title}
          columns={def.sub.columns}
          create={def.sub.create}
          template={def.sub.template}
          level={2}
        />
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
  const versions = def.versions;
  if (!versions) return null;
  const numberOf = (r: Json) => String(r[versions.number]);
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
  const actions = {
    label: 'Actions',
    render: (r: Json) =>
      editable && (
        <span class="row-actions">
          {versions.makeDefault && (
            <button type="button" onClick={() => act('PUT', `${url}/makeDefault`, { version: Number(numberOf(r)) })}>
              Make default
            </button>
          )}
          {versions.label && (
            <select
              aria-label={`Label version ${numberOf(r)}`}
              value=""
              onChange={(e) => act('PUT', `${url}/versions/${enc(String(r.id))}`, { label_id: (e.target as HTMLSelectElement).value })}
            >
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
  };
  return (
    <>
      <h2>Versions</h2>
      <ErrorNote error={list.error ?? error} />
      <Table<Json>
        caption="Versions"
        rows={list.data?.data ?? []}
        loading={list.loading}
        placeholder={1}
        rowKey={numberOf}
        columns={[...columnsOf(versions.columns), actions]}
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
