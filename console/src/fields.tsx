/**
 * Values as a person reads them: labels instead of snake_case keys, dates in the reader's locale,
 * yes/no, lists, nested objects as nested definition lists, and ids of other resources shown by
 * the referenced item's name (fetched once per id, linked to its page). A missing value is "—".
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { CHANGED, get, type GetPath, type PathParams } from './api.ts';
import { Link } from './router.tsx';

/** How a value is shown; a reference kind shows the referenced item's name. */
export type Format = 'text' | 'code' | 'date' | 'json' | RefKind;

type RefKind = 'workspace' | 'collection' | 'integration' | 'mcp-integration' | 'label' | 'api-key' | 'prompt';

interface RefSource<P extends GetPath> {
  path: P;
  param: keyof PathParams<P>;
  /** The console page of the referenced item. */
  page: string;
  name: (item: Record<string, unknown>) => unknown;
}

const ref = <P extends GetPath>(s: RefSource<P>) => s as unknown as RefSource<GetPath>;

const REFS: Record<RefKind, RefSource<GetPath>> = {
  workspace: ref({ path: '/v1/admin/workspaces/{workspaceId}', param: 'workspaceId', page: 'workspaces', name: (w) => w.name }),
  collection: ref({ path: '/v1/collections/{collectionId}', param: 'collectionId', page: 'collections', name: (c) => c.name }),
  integration: ref({ path: '/v1/integrations/{slug}', param: 'slug', page: 'integrations', name: (i) => i.name }),
  'mcp-integration': ref({ path: '/v1/mcp-integrations/{id}', param: 'id', page: 'mcp-integrations', name: (i) => i.name }),
  label: ref({ path: '/v1/labels/{labelId}', param: 'labelId', page: 'labels', name: (l) => l.name }),
  'api-key': ref({ path: '/v1/api-keys/{id}', param: 'id', page: 'api-keys', name: (k) => k.name }),
  prompt: ref({ path: '/v1/prompts/{promptId}', param: 'promptId', page: 'prompts', name: (p) => p.name }),
};

/** Keys that hold another resource's id, wherever they appear. */
const REF_KEYS: Record<string, RefKind> = {
  workspace_id: 'workspace',
  workspace_ids: 'workspace',
  allowed_workspaces: 'workspace',
  collection_id: 'collection',
  parent_collection_id: 'collection',
  integration_id: 'integration',
  mcp_integration_id: 'mcp-integration',
  label_id: 'label',
  prompt_version_label_id: 'label',
  prompt_version_labels: 'label',
  labels: 'label',
  api_key_id: 'api-key',
  created_by: 'api-key',
  last_updated_by: 'api-key',
  updated_by: 'api-key',
  owner_id: 'api-key',
  invited_by: 'api-key',
  prompt_id: 'prompt',
  // Inside a list of workspaces (an invite's, a user's), `id` is a workspace's.
  'workspaces.id': 'workspace',
};

/** Labels that a word-for-word reading of the key would get wrong or make vague. */
const LABELS: Record<string, string> = {
  id: 'ID',
  uri: 'Path',
  timestamp: 'Time',
  method: 'Method',
  response_status_code: 'Status',
  status_code: 'Status',
  api_key_id: 'API key',
  workspace_id: 'Workspace',
  workspace_ids: 'Workspaces',
  collection_id: 'Collection',
  integration_id: 'Integration',
  integration_slug: 'Integration slug',
  mcp_integration_id: 'MCP integration',
  mcp_integration_slug: 'MCP integration slug',
  mcp_integration_url: 'MCP integration URL',
  ai_provider_id: 'AI provider',
  label_id: 'Label',
  prompt_id: 'Prompt',
  organisation_id: 'Organisation ID',
  created_at: 'Created',
  last_updated_at: 'Last updated',
  created_by: 'Created by',
  last_updated_by: 'Last updated by',
  updated_by: 'Updated by',
  owner_id: 'Owner',
  invited_by: 'Invited by',
  prompt_version: 'Version',
  prompt_description: 'Description',
  prompt_version_description: 'Version description',
  prompt_version_label_id: 'Version label',
  prompt_version_labels: 'Version labels',
  string: 'Template',
  total_ms: 'Latency (ms)',
  cost: 'Cost (¢)',
  input_per_million: 'Input (USD / M tokens)',
  output_per_million: 'Output (USD / M tokens)',
  cached_input_per_million: 'Cached input (USD / M tokens)',
  user_type: 'Principal type',
};

const WORDS: Record<string, string> = {
  id: 'ID',
  ids: 'IDs',
  url: 'URL',
  api: 'API',
  mcp: 'MCP',
  ai: 'AI',
  ttl: 'TTL',
  ip: 'IP',
  json: 'JSON',
  ms: '(ms)',
  rpm: 'RPM',
};

/** A field's label: the known one, else its key in words (`periodic_reset_days` -> "Periodic reset days"). */
export function labelOf(key: string): string {
  const known = LABELS[key];
  if (known) return known;
  const words = key
    .split(/[_\s]+/)
    .filter(Boolean)
    .map((w) => WORDS[w.toLowerCase()] ?? w.toLowerCase());
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;
const DATES = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export const EMPTY = '—';

// One request per referenced id for the page's life; a change (any write) forgets them all.
const names = new Map<string, Promise<string | undefined>>();
addEventListener(CHANGED, () => names.clear());

function nameOf(kind: RefKind, id: string): Promise<string | undefined> {
  const k = `${kind}:${id}`;
  let found = names.get(k);
  if (!found) {
    const src = REFS[kind];
    found = get(src.path, { [src.param]: id } as PathParams<GetPath>).then(
      (item) => {
        const n = src.name(item as Record<string, unknown>);
        return typeof n === 'string' && n ? n : undefined;
      },
      () => undefined,
    );
    names.set(k, found);
  }
  return found;
}

/** A referenced item by name, linked to its page; its id until (or unless) the name is known. */
export function RefName({ kind, id }: { kind: RefKind; id: string }) {
  const [name, setName] = useState<string | undefined>(undefined);
  useEffect(() => {
    let live = true;
    void nameOf(kind, id).then((n) => live && setName(n));
    return () => {
      live = false;
    };
  }, [kind, id]);
  return (
    <Link to={`${REFS[kind].page}/${encodeURIComponent(id)}`} title={id}>
      {name ?? <code>{id.length > 13 ? `${id.slice(0, 8)}…` : id}</code>}
    </Link>
  );
}

export function DateTime({ iso }: { iso: string }) {
  const d = new Date(iso);
  return <time dateTime={iso}>{Number.isNaN(d.getTime()) ? iso : DATES.format(d)}</time>;
}

const isEmpty = (v: unknown) => v === null || v === undefined || v === '';
const refKindOf = (key: string, format: Format | undefined): RefKind | undefined => (format && format in REFS ? (format as RefKind) : REF_KEYS[key]);

/** Where a nested object sits: `workspaces` makes its `id` a workspace's. */
const scoped = (scope: string | undefined, key: string) => (scope && REF_KEYS[`${scope}.${key}`] ? (REF_KEYS[`${scope}.${key}`] as Format) : undefined);

/** One value, shown by its key and format. Objects nest as definition lists up to `depth` 3. */
export function Value({ name, value, format, depth = 0 }: { name: string; value: unknown; format?: Format; depth?: number }): ComponentChildren {
  if (isEmpty(value)) return EMPTY;
  const kind = refKindOf(name, format);
  if (Array.isArray(value)) return <ListValue name={name} items={value} kind={kind} depth={depth} />;
  if (typeof value === 'object') {
    if (!Object.keys(value).length) return 'None';
    if (format === 'json' || depth >= 3) return <code class="json-inline">{JSON.stringify(value)}</code>;
    return <Facts item={value as Record<string, unknown>} depth={depth + 1} scope={name} />;
  }
  if (kind && typeof value === 'string') return <RefName kind={kind} id={value} />;
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (typeof value === 'string' && (format === 'date' || ISO.test(value))) return <DateTime iso={value} />;
  if (format === 'code') return <code>{String(value)}</code>;
  if (typeof value === 'string' && (value.includes('\n') || value.length > 120)) return <pre class="text">{value}</pre>;
  return String(value);
}

function ListValue({ name, items, kind, depth }: { name: string; items: unknown[]; kind: RefKind | undefined; depth: number }) {
  if (!items.length) return 'None';
  if (items.every((i) => typeof i !== 'object' || i === null)) {
    return (
      <span class="inline-list">
        {items.map((i, n) => (
          <span key={n}>{kind && typeof i === 'string' ? <RefName kind={kind} id={i} /> : <Value name={name} value={i} depth={depth} />}</span>
        ))}
      </span>
    );
  }
  return (
    <ol class="items">
      {items.map((i, n) => (
        <li key={n}>
          {i && typeof i === 'object' && depth < 3 ? (
            <Facts item={i as Record<string, unknown>} depth={depth + 1} scope={name} />
          ) : (
            <Value name={name} value={i} depth={depth} />
          )}
        </li>
      ))}
    </ol>
  );
}

export interface FieldSpec {
  key: string;
  label: string;
  format?: Format;
}

/**
 * An item as a labelled definition list: the fields named first (in their order, with their
 * labels), then every other field the API answered, labelled from its key. `object` is left out.
 */
export function Facts({
  item,
  fields = [],
  depth = 0,
  scope,
}: {
  item: Record<string, unknown>;
  fields?: readonly FieldSpec[];
  depth?: number;
  scope?: string;
}) {
  const named = new Set(fields.map((f) => f.key));
  const rest = Object.keys(item)
    .filter((k) => k !== 'object' && !named.has(k))
    .map((k): FieldSpec => {
      const format = scoped(scope, k);
      return { key: k, label: labelOf(k), ...(format ? { format } : {}) };
    });
  const all = [...fields.filter((f) => f.key in item), ...rest];
  return (
    <dl class={depth ? 'facts nested' : 'facts'}>
      {all.map((f) => (
        <div key={f.key} data-field={depth ? undefined : f.key}>
          <dt>{f.label}</dt>
          <dd>
            <Value name={f.key} value={item[f.key]} depth={depth} {...(f.format ? { format: f.format } : {})} />
          </dd>
        </div>
      ))}
    </dl>
  );
}
