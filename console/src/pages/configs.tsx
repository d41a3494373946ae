/**
 * Configs: list (paged on the server), create, and a config's page: the JSON editor (checked by the
 * server, whose problems appear beside it by path), versions, and the diff between two versions.
 */
import { useState } from 'preact/hooks';
import { api, get, type ItemOf, query, type Json } from '../api.ts';
import { Value } from '../fields.tsx';
import { diffLines } from '../diff.ts';
import { Link, navigate } from '../router.tsx';
import { can, homeWorkspace, type Session } from '../session.ts';
import { Confirm, CreateButton, Dialog, ErrorNote, Field, FormActions, JsonEditor, Pager, parseJson, pretty, Table, useLoad, useSubmit } from '../ui.tsx';

const PAGE_SIZE = 20;
const enc = encodeURIComponent;

export function Configs({ session, slug }: { session: Session; slug: string | undefined }) {
  return slug ? <ConfigPage session={session} slug={slug} /> : <ConfigList session={session} />;
}

function ConfigList({ session }: { session: Session }) {
  const [page, setPage] = useState(0);
  const [creating, setCreating] = useState(false);
  const list = useLoad(() => get('/v1/configs', {}, query({ current_page: page, page_size: PAGE_SIZE })), [page, session]);
  return (
    <section>
      <h1>Configs</h1>
      <CreateButton shown={can(session, 'configs.create')} label="Create config" onClick={() => setCreating(true)} />
      <ErrorNote error={list.error} />
      <Table<ItemOf<'/v1/configs'>>
        caption="Configs"
        rows={list.data?.data ?? []}
        loading={list.loading}
        rowKey={(r) => r.id}
        columns={[
          { label: 'Name', field: 'name', render: (r) => <Link to={`configs/${enc(r.slug)}`}>{r.name}</Link> },
          { label: 'Slug', field: 'slug', render: (r) => <code>{r.slug}</code> },
          { label: 'Workspace', field: 'workspace_id', render: (r) => <Value name="workspace_id" value={r.workspace_id} /> },
          { label: 'Version', field: 'version', render: (r) => r.version },
          { label: 'Status', field: 'status', render: (r) => r.status },
          { label: 'Default', field: 'is_default', render: (r) => (r.is_default ? 'Yes' : 'No') },
          { label: 'Last updated', field: 'last_updated_at', render: (r) => <Value name="last_updated_at" value={r.last_updated_at} /> },
        ]}
      />
      <Pager page={page} size={PAGE_SIZE} total={list.data?.total ?? null} count={list.data?.data.length ?? 0} onPage={setPage} />
      {creating && <CreateConfig session={session} onClose={() => setCreating(false)} />}
    </section>
  );
}

function CreateConfig({ session, onClose }: { session: Session; onClose: () => void }) {
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const [workspace, setWorkspace] = useState(homeWorkspace(session) ?? 'default');
  const [text, setText] = useState(pretty({ strategy: { mode: 'fallback' }, targets: [{ provider: 'openai' }] }));
  const { error, submit } = useSubmit(async () => {
    const config = parseJson(text);
    if (config === null) return;
    const r = await api<Json>('POST', '/v1/configs', { name, ...(slug ? { slug } : {}), workspace_id: workspace, config });
    onClose();
    navigate(`configs/${enc(String(r.slug ?? slug))}`);
  });
  return (
    <Dialog title="Create a config" onClose={onClose}>
      <form onSubmit={submit}>
        <Field label="Name" name="name" error={error}>
          {(id, d) => <input id={id} value={name} aria-describedby={d} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}
        </Field>
        <Field label="Slug (optional)" name="slug" error={error}>
          {(id, d) => <input id={id} value={slug} aria-describedby={d} onInput={(e) => setSlug((e.target as HTMLInputElement).value)} />}
        </Field>
        <Field label="Workspace" name="workspace_id" error={error}>
          {(id, d) => <input id={id} value={workspace} aria-describedby={d} onInput={(e) => setWorkspace((e.target as HTMLInputElement).value)} />}
        </Field>
        <JsonEditor label="Config" name="config" value={text} onInput={setText} error={error} />
        <ErrorNote error={error} shown={['name', 'slug', 'workspace_id', 'config']} />
        <FormActions label="Create" onCancel={onClose} />
      </form>
    </Dialog>
  );
}

function ConfigPage({ session, slug }: { session: Session; slug: string }) {
  const config = useLoad(() => get('/v1/configs/{slug}', { slug }), [slug]);
  const versions = useLoad(() => get('/v1/configs/{slug}/versions', { slug }, query({ page_size: 100 })), [slug]);
  const [text, setText] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const current = text ?? (config.data ? pretty(config.data.config) : '');
  const { error, submit: save } = useSubmit(async () => {
    setSaved(false);
    const body = parseJson(current);
    if (body === null) return;
    await api('PUT', `/v1/configs/${enc(slug)}`, { config: body });
    setSaved(true);
    setText(null);
    config.reload();
    versions.reload();
  });
  return (
    <section>
      <p>
        <Link to="configs">← All configs</Link>
      </p>
      <h1>Config {slug}</h1>
      <ErrorNote error={config.error} />
      {config.data && (
        <form onSubmit={save}>
          <JsonEditor label="Config (JSON)" name="config" value={current} onInput={(v) => setText(v)} error={error} rows={18} />
          <ErrorNote error={error} shown={['config']} />
          {saved && <p role="status">Saved as a new version.</p>}
          <div class="actions">
            {can(session, 'configs.update') && <button type="submit">Save new version</button>}
            {can(session, 'configs.delete') && (
              <button type="button" class="danger" onClick={() => setDeleting(true)}>
                Delete config
              </button>
            )}
          </div>
        </form>
      )}
      {deleting && (
        <Confirm
          question={`Delete the config "${slug}"?`}
          action={() => api('DELETE', `/v1/configs/${enc(slug)}`)}
          onCancel={() => setDeleting(false)}
          onDone={() => navigate('configs')}
        />
      )}
      <Versions versions={versions.data?.data ?? []} />
    </section>
  );
}

function Versions({ versions }: { versions: ItemOf<'/v1/configs/{slug}/versions'>[] }) {
  const [pick, setPick] = useState<string[]>([]);
  const byId = (id: string | undefined) => versions.find((v) => String(v.id) === id);
  const toggle = (id: string) => setPick(pick.includes(id) ? pick.filter((p) => p !== id) : [...pick.slice(-1), id]);
  const [a, b] = [...pick].map(byId).sort((x, y) => Number(x?.version) - Number(y?.version));
  return (
    <>
      <h2>Versions</h2>
      <p>Pick two versions to compare.</p>
      <Table<ItemOf<'/v1/configs/{slug}/versions'>>
        caption="Versions"
        rows={versions}
        rowKey={(r) => r.id}
        columns={[
          {
            label: 'Compare',
            render: (r) => (
              <input
                type="checkbox"
                aria-label={`Compare version ${String(r.version)}`}
                checked={pick.includes(String(r.id))}
                onChange={() => toggle(String(r.id))}
              />
            ),
          },
          { label: 'Version', field: 'version', render: (r) => r.version },
          { label: 'Created', field: 'created_at', render: (r) => <Value name="created_at" value={r.created_at} /> },
          { label: 'By', field: 'created_by', render: (r) => <Value name="created_by" value={r.created_by} /> },
        ]}
      />
      {a && b && (
        <figure class="diff" aria-label={`Changes from version ${String(a.version)} to ${String(b.version)}`}>
          <figcaption>
            Version {String(a.version)} → {String(b.version)}
          </figcaption>
          <pre tabIndex={0}>
            {diffLines(pretty(a.config), pretty(b.config)).map((l, i) => (
              <span key={i} class={`d-${l.kind}`}>
                {l.kind === 'added' ? '+ ' : l.kind === 'removed' ? '- ' : '  '}
                {l.text}
                {'\n'}
              </span>
            ))}
          </pre>
        </figure>
      )}
    </>
  );
}
