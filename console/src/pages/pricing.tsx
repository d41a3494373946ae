/**
 * Model pricing: the built-in catalog (about 300 models, the same module the gateway prices with,
 * loaded with this page only) with the organisation's custom prices over it, searchable by provider
 * and model; the custom prices of the organisation and its workspaces; setting and removing one.
 *
 * `GET /v1/model-configs/pricing` answers the custom prices only (none on a fresh install), which is
 * why a page built on it alone was empty: the catalog is not an admin resource.
 */
import { useMemo, useState } from 'preact/hooks';
import { api, get, type ItemOf, query } from '../api.ts';
import { Value } from '../fields.tsx';
import type { ResourceDef } from '../resources.ts';
import { can, type Session } from '../session.ts';
import { Confirm, Dialog, ErrorNote, Field, FormActions, Pager, Table, useLoad, useSubmit } from '../ui.tsx';
import { columnsOf } from './resource.tsx';

type Custom = ItemOf<'/v1/model-configs/pricing'>;

const PRICES = ['input_per_million', 'output_per_million', 'cached_input_per_million'] as const;
type PriceKey = (typeof PRICES)[number];
type Prices = Record<PriceKey, number | null>;

interface Row {
  provider: string;
  model: string;
  catalog: Prices | null;
  custom: Custom | null;
  context_window: number | null;
  types: string[];
}

const PAGE_SIZE = 50;

/** Every custom price (they are few: one per priced model and level), page after page. */
async function allCustomPrices(): Promise<Custom[]> {
  const out: Custom[] = [];
  for (let page = 0; ; page++) {
    const got = await get('/v1/model-configs/pricing', {}, query({ current_page: page, page_size: 100 }));
    out.push(...got.data);
    if (got.data.length < 100 || out.length >= got.total) return out;
  }
}

async function loadRows(): Promise<{ rows: Row[]; custom: Custom[] }> {
  const [{ catalogModels }, custom] = await Promise.all([import('../../../layers/core/src/pricing/catalog.ts'), allCustomPrices()]);
  const orgPrice = new Map(custom.filter((c) => c.workspace_id === null).map((c) => [`${c.provider}/${c.model}`, c]));
  const rows: Row[] = catalogModels().map((m) => {
    const k = `${m.provider}/${m.id}`;
    const row: Row = {
      provider: m.provider,
      model: m.id,
      catalog: { input_per_million: m.price.input ?? null, output_per_million: m.price.output ?? null, cached_input_per_million: m.price.cachedInput ?? null },
      custom: orgPrice.get(k) ?? null,
      context_window: m.contextWindow ?? null,
      types: m.types,
    };
    orgPrice.delete(k);
    return row;
  });
  // Custom prices of models the catalog does not list.
  for (const c of orgPrice.values()) rows.push({ provider: c.provider, model: c.model, catalog: null, custom: c, context_window: null, types: [] });
  rows.sort((a, b) => a.provider.localeCompare(b.provider) || a.model.localeCompare(b.model));
  return { rows, custom };
}

const usd = (v: number | null | undefined) => (v === null || v === undefined ? '—' : `$${v}`);

/** The price charged: the custom one where set, field by field, else the catalog's. */
function PriceCell({ row, k }: { row: Row; k: PriceKey }) {
  const custom = row.custom?.[k];
  if (typeof custom === 'number') {
    return (
      <span>
        {usd(custom)} <span class="badge">custom</span>
        {row.catalog?.[k] != null && <s class="was"> {usd(row.catalog[k])}</s>}
      </span>
    );
  }
  return <span>{usd(row.catalog?.[k])}</span>;
}

export function Pricing({ def, session }: { def: ResourceDef; session: Session }) {
  const data = useLoad(loadRows, [session]);
  const [search, setSearch] = useState('');
  const [provider, setProvider] = useState('');
  const [page, setPage] = useState(0);
  const [editing, setEditing] = useState<Row | null>(null);
  const [removing, setRemoving] = useState<Custom | null>(null);
  const rows = data.data?.rows ?? [];
  const providers = useMemo(() => [...new Set(rows.map((r) => r.provider))], [rows]);
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = rows.filter((r) => (!provider || r.provider === provider) && words.every((w) => `${r.provider} ${r.model}`.toLowerCase().includes(w)));
  const mayEdit = def.update !== undefined && can(session, def.update);
  const changed = () => {
    setEditing(null);
    setRemoving(null);
    data.reload();
  };
  return (
    <section>
      <h1>Model pricing</h1>
      <p>
        Prices in USD per million tokens. The catalog lists providers’ published prices; a custom price (for the organisation, or a workspace) replaces a
        catalog price field by field.
      </p>
      <ErrorNote error={data.error} />
      <form class="filters" role="search" aria-label="Models" onSubmit={(e) => e.preventDefault()}>
        <Field label="Search models" name="search" hint="provider or model, e.g. openai gpt-4o">
          {(id) => (
            <input
              id={id}
              type="search"
              value={search}
              onInput={(e) => {
                setSearch((e.target as HTMLInputElement).value);
                setPage(0);
              }}
            />
          )}
        </Field>
        <Field label="Provider" name="provider">
          {(id) => (
            <select
              id={id}
              value={provider}
              onChange={(e) => {
                setProvider((e.target as HTMLSelectElement).value);
                setPage(0);
              }}
            >
              <option value="">All providers</option>
              {providers.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          )}
        </Field>
      </form>
      <Table<Row>
        caption={data.data ? `Models (${shown.length} of ${rows.length})` : 'Models'}
        rows={shown.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE)}
        loading={data.loading}
        placeholder={10}
        rowKey={(r) => `${r.provider}/${r.model}`}
        columns={[
          { label: 'Provider', field: 'provider', render: (r) => r.provider },
          { label: 'Model', field: 'model', render: (r) => <code>{r.model}</code> },
          { label: 'Input', field: 'input_per_million', render: (r) => <PriceCell row={r} k="input_per_million" /> },
          { label: 'Output', field: 'output_per_million', render: (r) => <PriceCell row={r} k="output_per_million" /> },
          { label: 'Cached input', field: 'cached_input_per_million', render: (r) => <PriceCell row={r} k="cached_input_per_million" /> },
          {
            label: 'Context window',
            field: 'context_window',
            render: (r) => <Value name="context_window" value={r.context_window?.toLocaleString('en-US')} />,
          },
          { label: 'Types', field: 'types', render: (r) => <Value name="types" value={r.types} /> },
          {
            label: 'Actions',
            render: (r) =>
              mayEdit && (
                <button type="button" onClick={() => setEditing(r)} aria-label={`Set price of ${r.provider} ${r.model}`}>
                  Set price
                </button>
              ),
          },
        ]}
      />
      <Pager page={page} size={PAGE_SIZE} total={shown.length} count={Math.min(PAGE_SIZE, shown.length - page * PAGE_SIZE)} onPage={setPage} />
      <h2>Custom prices</h2>
      <Table<Custom>
        caption="Custom prices"
        rows={data.data?.custom ?? []}
        loading={data.loading}
        placeholder={1}
        rowKey={(c) => `${c.workspace_id ?? ''}/${c.provider}/${c.model}`}
        columns={[
          ...columnsOf<Custom>(def.columns),
          {
            label: 'Actions',
            render: (c) =>
              mayEdit && (
                <button type="button" class="danger" onClick={() => setRemoving(c)} aria-label={`Remove custom price of ${c.provider} ${c.model}`}>
                  Remove
                </button>
              ),
          },
        ]}
      />
      {editing && <SetPrice row={editing} onClose={() => setEditing(null)} onDone={changed} />}
      {removing && (
        <Confirm
          question={`Remove the custom price of ${removing.provider} ${removing.model}${removing.workspace_id ? ' for its workspace' : ''}? The catalog price applies again.`}
          action={() => api('DELETE', `${priceUrl(removing.provider, removing.model)}${query({ workspace_id: removing.workspace_id })}`)}
          onCancel={() => setRemoving(null)}
          onDone={changed}
        />
      )}
    </section>
  );
}

// The model is the rest of the path, slashes included (`together-ai/meta-llama/...`).
const priceUrl = (provider: string, model: string) =>
  `/v1/model-configs/pricing/${encodeURIComponent(provider)}/${model.split('/').map(encodeURIComponent).join('/')}`;

function SetPrice({ row, onClose, onDone }: { row: Row; onClose: () => void; onDone: () => void }) {
  // Only the custom fields are filled in: an empty field keeps the catalog's price (shown as the placeholder).
  const start = (k: PriceKey) => String(row.custom?.[k] ?? '');
  const [values, setValues] = useState<Record<PriceKey, string>>({
    input_per_million: start('input_per_million'),
    output_per_million: start('output_per_million'),
    cached_input_per_million: start('cached_input_per_million'),
  });
  const [workspace, setWorkspace] = useState('');
  const { error, submit } = useSubmit(async () => {
    const body: Record<string, unknown> = {};
    for (const k of PRICES) if (values[k].trim() !== '') body[k] = Number(values[k]);
    if (workspace.trim()) body.workspace_id = workspace.trim();
    await api('PUT', priceUrl(row.provider, row.model), body);
    onDone();
  });
  const labels: Record<PriceKey, string> = {
    input_per_million: 'Input (USD per million tokens)',
    output_per_million: 'Output (USD per million tokens)',
    cached_input_per_million: 'Cached input (USD per million tokens)',
  };
  return (
    <Dialog title={`Price of ${row.provider} ${row.model}`} onClose={onClose}>
      <form onSubmit={submit}>
        {PRICES.map((k) => (
          <Field key={k} label={labels[k]} name={k} error={error}>
            {(id, d) => (
              <input
                id={id}
                inputMode="decimal"
                value={values[k]}
                placeholder={row.catalog?.[k] != null ? `catalog: ${row.catalog[k]}` : undefined}
                aria-describedby={d}
                onInput={(e) => setValues({ ...values, [k]: (e.target as HTMLInputElement).value })}
              />
            )}
          </Field>
        ))}
        <Field label="Workspace (id or slug; empty: the organisation’s price)" name="workspace_id" error={error}>
          {(id, d) => <input id={id} value={workspace} aria-describedby={d} onInput={(e) => setWorkspace((e.target as HTMLInputElement).value)} />}
        </Field>
        <ErrorNote error={error} shown={[...PRICES, 'workspace_id']} />
        <FormActions label="Save price" onCancel={onClose} />
      </form>
    </Dialog>
  );
}
