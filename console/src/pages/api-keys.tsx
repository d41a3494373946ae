/** API keys: list (cursor-paged on the server: a page reads only its keys, at a million of them), create with scopes and expiry, the show-once dialog, rotate, revoke. */
import { useState } from 'preact/hooks';
import { can, homeWorkspace, type Session } from '../session.ts';
import { api, get, type ItemOf, problemsFor, query, type Json } from '../api.ts';
import { Value } from '../fields.tsx';
import { Confirm, CreateButton, CursorPager, Dialog, ErrorNote, Field, FormActions, problemsOf, Table, useLoad, useSubmit } from '../ui.tsx';

const PAGE_SIZE = 20;

const TYPES: Record<string, string> = {
  'workspace/service': 'Workspace service key',
  'workspace/user': 'Workspace user key',
  'organisation/service': 'Organisation service key',
};

type Key = ItemOf<'/v1/api-keys'>;

const KINDS: Record<Key['type'], string> = {
  'workspace-service': 'Workspace service key',
  'workspace-user': 'Workspace user key',
  'organisation-service': 'Organisation service key',
};

interface Shown {
  title: string;
  key: string;
}

export function ApiKeys({ session }: { session: Session }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1] ?? '';
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<Shown | null>(null);
  const [confirm, setConfirm] = useState<{ question: string; action: () => Promise<unknown> } | null>(null);
  // `cursor=` even on the first page: without it the server counts every key for `total`.
  const keys = useLoad(() => get('/v1/api-keys', {}, `${query({ page_size: PAGE_SIZE })}&cursor=${encodeURIComponent(cursor)}`), [cursor, session]);
  const rotate = (k: Key) =>
    setConfirm({
      question: `Rotate the key "${String(k.name)}"? The old key keeps working only for its transition period.`,
      action: async () => {
        const r = await api<Json>('POST', `/v1/api-keys/${encodeURIComponent(String(k.id))}/rotate`, {});
        setShown({ title: 'Rotated key', key: String(r.key) });
      },
    });
  const revoke = (k: Key) =>
    setConfirm({
      question: `Revoke the key "${String(k.name)}"? Requests with it will be refused at once.`,
      action: () => api('DELETE', `/v1/api-keys/${encodeURIComponent(String(k.id))}`),
    });
  return (
    <section>
      <h1>API keys</h1>
      <CreateButton shown={can(session, 'api_keys.create')} label="Create key" onClick={() => setCreating(true)} />
      <ErrorNote error={keys.error} />
      <Table<Key>
        caption="API keys"
        rows={keys.data?.data ?? []}
        loading={keys.loading}
        rowKey={(r) => r.id}
        columns={[
          { label: 'Name', field: 'name', render: (r) => r.name },
          { label: 'Type', field: 'type', render: (r) => KINDS[r.type] },
          { label: 'Key', field: 'key', render: (r) => <code>{r.key}</code> },
          { label: 'Workspace', field: 'workspace_id', render: (r) => <Value name="workspace_id" value={r.workspace_id} /> },
          { label: 'Status', field: 'status', render: (r) => r.status },
          { label: 'Expires', field: 'expires_at', render: (r) => <Value name="expires_at" value={r.expires_at} /> },
          { label: 'Scopes', field: 'scopes', render: (r) => r.scopes.length },
          {
            label: 'Actions',
            render: (r) => (
              <span class="row-actions">
                {can(session, 'api_keys.rotate') && (
                  <button type="button" onClick={() => rotate(r)} aria-label={`Rotate ${String(r.name)}`}>
                    Rotate
                  </button>
                )}
                {can(session, 'api_keys.delete') && (
                  <button type="button" class="danger" onClick={() => revoke(r)} aria-label={`Revoke ${String(r.name)}`}>
                    Revoke
                  </button>
                )}
              </span>
            ),
          },
        ]}
      />
      <CursorPager cursors={cursors} next={keys.data && 'next_cursor' in keys.data ? keys.data.next_cursor : null} onChange={setCursors} />
      {creating && (
        <CreateKey
          session={session}
          onClose={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setShown({ title: 'Your new key', key });
            keys.reload();
          }}
        />
      )}
      {shown && <ShowOnce shown={shown} onClose={() => setShown(null)} />}
      {confirm && (
        <Confirm
          question={confirm.question}
          action={confirm.action}
          onCancel={() => setConfirm(null)}
          onDone={() => {
            setConfirm(null);
            keys.reload();
          }}
        />
      )}
    </section>
  );
}

/** The key, once: it lives only in this dialog's state and is gone when the dialog closes. */
function ShowOnce({ shown, onClose }: { shown: Shown; onClose: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <Dialog title={shown.title} onClose={onClose}>
      <p>Copy the key now. It is shown only this once; Gantry keeps only its hash.</p>
      <p>
        <code class="secret" data-testid="new-key">
          {shown.key}
        </code>
      </p>
      <div class="actions">
        <button
          type="button"
          onClick={() =>
            navigator.clipboard?.writeText(shown.key).then(
              () => setCopied(true),
              () => undefined,
            )
          }
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onClose}>
          I have saved it
        </button>
      </div>
    </Dialog>
  );
}

function CreateKey({ session, onClose, onCreated }: { session: Session; onClose: () => void; onCreated: (key: string) => void }) {
  const [type, setType] = useState('workspace/service');
  const [name, setName] = useState('');
  const [workspace, setWorkspace] = useState(homeWorkspace(session) ?? 'default');
  const [scopes, setScopes] = useState<string[]>(['completions.write'].filter((s) => can(session, s)));
  const [expires, setExpires] = useState('');
  const { error, submit } = useSubmit(async () => {
    const body: Json = { name, scopes };
    if (type !== 'organisation/service') body.workspace_id = workspace;
    if (expires) body.expires_at = expires;
    const r = await api<Json>('POST', `/v1/api-keys/${type}`, body);
    onCreated(String(r.key));
  });
  const toggle = (s: string) => setScopes(scopes.includes(s) ? scopes.filter((x) => x !== s) : [...scopes, s]);
  return (
    <Dialog title="Create an API key" onClose={onClose}>
      <form onSubmit={submit}>
        <Field label="Type" name="type" error={error}>
          {(id) => (
            <select id={id} value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
              {Object.entries(TYPES).map(([v, l]) => (
                <option key={v} value={v}>
                  {l}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Name" name="name" error={error}>
          {(id, d) => <input id={id} name="name" value={name} aria-describedby={d} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}
        </Field>
        {type !== 'organisation/service' && (
          <Field label="Workspace (id or slug)" name="workspace_id" error={error}>
            {(id, d) => (
              <input id={id} name="workspace_id" value={workspace} aria-describedby={d} onInput={(e) => setWorkspace((e.target as HTMLInputElement).value)} />
            )}
          </Field>
        )}
        <Field label="Expires at (ISO 8601, optional)" name="expires_at" error={error}>
          {(id, d) => (
            <input
              id={id}
              name="expires_at"
              placeholder="2030-01-01T00:00:00Z"
              value={expires}
              aria-describedby={d}
              onInput={(e) => setExpires((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <fieldset class="scopes">
          <legend>Scopes (only those your own key holds)</legend>
          {session.scopes.map((s) => (
            <label key={s}>
              <input type="checkbox" name="scope" value={s} checked={scopes.includes(s)} onChange={() => toggle(s)} /> {s}
            </label>
          ))}
        </fieldset>
        <ScopeProblems error={error} />
        <ErrorNote error={error} shown={['name', 'workspace_id', 'expires_at', 'type', 'scopes']} />
        <FormActions label="Create" onCancel={onClose} />
      </form>
    </Dialog>
  );
}

function ScopeProblems({ error }: { error: unknown }) {
  const problems = problemsFor(problemsOf(error), 'scopes');
  return problems.length ? (
    <p class="field-error" data-field="scopes">
      {problems.map((p) => `${p.path}: ${p.message}`).join('; ')}
    </p>
  ) : null;
}
