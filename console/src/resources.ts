/**
 * The admin resources the console manages with one generic page each (list, create, view, edit,
 * delete). Declared as data: the path templates, the scopes behind each action, the columns. Each
 * declaration is checked against the API's generated types (api-types.ts): a column or field that
 * names something the path does not answer fails the type check. A create form starts from the
 * route's example in GET /v1/openapi.json, else from `template`.
 */
import type { AnswerOf, GetPath, ItemOf, Json, ListPath } from './api.ts';
import type { FieldSpec, Format } from './fields.tsx';

/** A column or field: the key the API answers, its label, and how to show it. */
export type Col<T> = readonly [key: keyof T & string, label: string, format?: Format];

/** What an item needs before it can be created: another resource picked (or made) for one field. */
export interface Prerequisite {
  /** The body field that names it. */
  field: string;
  /** The resource of resources.ts to pick from. */
  resource: string;
  why: string;
  /** A body for a quick create of one, with `name` from the form; absent: the reader goes to its page. */
  quickCreate?: Json;
}

interface Spec<L extends ListPath, I extends GetPath, S extends ListPath, V extends ListPath> {
  id: string;
  title: string;
  group: string;
  /** The list path; an item is `${path}/${id}`. */
  path: L;
  /** The item's path template, whose answer `fields` are checked against. */
  item?: I;
  idKey: keyof ItemOf<L> & string;
  columns: readonly Col<ItemOf<L>>[];
  /** The item's fields shown first, in this order (the others follow, labelled from their keys). */
  fields?: readonly Col<AnswerOf<I>>[];
  list: string;
  read?: string;
  create?: string;
  update?: string;
  remove?: string;
  template?: Json;
  needs?: Prerequisite;
  /** Extra query on reads (usage of a budget). */
  readQuery?: string;
  /** The item's versions (`${item}/versions`); `label`: versions take labels; `makeDefault`: one is published. */
  versions?: { path: V; number: keyof ItemOf<V> & string; columns: readonly Col<ItemOf<V>>[]; label?: boolean; makeDefault?: boolean };
  /** `POST ${item}/render` previews the item with variables. */
  render?: boolean;
  /** A list below each item (a workspace's members): `path` with the item's id for its one parameter. */
  sub?: { title: string; path: S; scope: string; columns: readonly Col<ItemOf<S>>[]; create?: string; template?: Json };
}

export interface Column extends FieldSpec {}

/** A resource as the pages use it: the same declaration with its types checked and erased. */
export interface ResourceDef {
  id: string;
  title: string;
  group: string;
  path: string;
  idKey: string;
  columns: Column[];
  fields: Column[];
  list: string;
  read?: string;
  create?: string;
  update?: string;
  remove?: string;
  template?: Json;
  needs?: Prerequisite;
  readQuery?: string;
  versions?: { path: string; number: string; columns: Column[]; label?: boolean; makeDefault?: boolean };
  render?: boolean;
  sub?: { title: string; path: string; scope: string; columns: Column[]; create?: string; template?: Json };
}

const cols = (c: readonly (readonly [string, string, Format?])[] | undefined): Column[] =>
  (c ?? []).map(([key, label, format]) => ({ key, label, ...(format ? { format } : {}) }));

function resource<L extends ListPath, I extends GetPath = never, S extends ListPath = never, V extends ListPath = never>(spec: Spec<L, I, S, V>): ResourceDef {
  const { columns, fields, versions, sub, item: _item, ...rest } = spec;
  return {
    ...rest,
    columns: cols(columns),
    fields: cols(fields),
    ...(versions ? { versions: { ...versions, columns: cols(versions.columns) } } : {}),
    ...(sub ? { sub: { ...sub, columns: cols(sub.columns) } } : {}),
  };
}

const ws = { workspace_id: 'default' };
const created = ['created_at', 'Created'] as const;
const updated = ['last_updated_at', 'Last updated'] as const;

export const RESOURCES: readonly ResourceDef[] = [
  resource({
    id: 'workspaces',
    title: 'Workspaces',
    group: 'Organisation',
    path: '/v1/admin/workspaces',
    item: '/v1/admin/workspaces/{workspaceId}',
    idKey: 'id',
    columns: [['name', 'Name'], ['slug', 'Slug', 'code'], ['status', 'Status'], ['description', 'Description'], created],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['description', 'Description'],
      ['status', 'Status'],
    ],
    list: 'workspaces.list',
    read: 'workspaces.read',
    create: 'workspaces.create',
    update: 'workspaces.update',
    remove: 'workspaces.delete',
    template: { name: 'Team', slug: 'team' },
    sub: {
      title: 'Members',
      path: '/v1/admin/workspaces/{workspaceId}/users',
      scope: 'workspace_users.list',
      columns: [
        ['email', 'Email'],
        ['first_name', 'First name'],
        ['last_name', 'Last name'],
        ['role', 'Role'],
        ['status', 'Status'],
      ],
      create: 'workspace_users.create',
      template: { users: [{ user_id: '', role: 'member' }] },
    },
  }),
  resource({
    id: 'users',
    title: 'Users',
    group: 'Organisation',
    path: '/v1/admin/users',
    item: '/v1/admin/users/{userId}',
    idKey: 'id',
    columns: [['email', 'Email'], ['first_name', 'First name'], ['last_name', 'Last name'], ['role', 'Role'], created],
    fields: [
      ['email', 'Email'],
      ['first_name', 'First name'],
      ['last_name', 'Last name'],
      ['role', 'Role'],
      ['workspace_ids', 'Workspaces'],
    ],
    list: 'users.list',
    read: 'users.read',
    update: 'users.update',
    remove: 'users.delete',
  }),
  resource({
    id: 'invites',
    title: 'Invites',
    group: 'Organisation',
    path: '/v1/admin/users/invites',
    item: '/v1/admin/users/invites/{inviteId}',
    idKey: 'id',
    columns: [
      ['email', 'Email'],
      ['role', 'Role'],
      ['status', 'Status'],
      ['expires_at', 'Expires'],
      ['invited_by', 'Invited by'],
    ],
    fields: [
      ['email', 'Email'],
      ['role', 'Role'],
      ['status', 'Status'],
      ['workspaces', 'Workspaces'],
      ['expires_at', 'Expires'],
    ],
    list: 'users.list',
    read: 'users.read',
    create: 'users.create',
    remove: 'users.delete',
    template: { email: 'someone@example.com', role: 'member', workspaces: [{ id: 'default', role: 'member' }] },
  }),
  resource({
    id: 'integrations',
    title: 'Integrations',
    group: 'Providers',
    path: '/v1/integrations',
    item: '/v1/integrations/{slug}',
    idKey: 'slug',
    columns: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['ai_provider_id', 'AI provider'],
      ['masked_key', 'Key', 'code'],
      ['status', 'Status'],
    ],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['ai_provider_id', 'AI provider'],
      ['masked_key', 'Key', 'code'],
      ['status', 'Status'],
    ],
    list: 'integrations.list',
    read: 'integrations.read',
    create: 'integrations.create',
    update: 'integrations.update',
    remove: 'integrations.delete',
  }),
  resource({
    id: 'providers',
    title: 'Providers',
    group: 'Providers',
    path: '/v1/providers',
    item: '/v1/providers/{slug}',
    idKey: 'slug',
    columns: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['integration_id', 'Integration'],
      ['ai_provider_id', 'AI provider'],
      ['workspace_id', 'Workspace'],
      ['status', 'Status'],
    ],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['integration_id', 'Integration'],
      ['workspace_id', 'Workspace'],
      ['status', 'Status'],
    ],
    list: 'providers.list',
    read: 'providers.read',
    create: 'providers.create',
    update: 'providers.update',
    remove: 'providers.delete',
    needs: {
      field: 'integration_id',
      resource: 'integrations',
      why: 'A provider uses the credentials of an integration: pick one, or create it on the Integrations page first.',
    },
  }),
  resource({
    id: 'secret-references',
    title: 'Secret references',
    group: 'Providers',
    path: '/v1/secret-references',
    item: '/v1/secret-references/{secretReferenceId}',
    idKey: 'id',
    columns: [['name', 'Name'], ['slug', 'Slug', 'code'], ['manager_type', 'Manager'], ['status', 'Status'], created],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['manager_type', 'Manager'],
      ['secret_path', 'Secret path', 'code'],
      ['secret_key', 'Secret key', 'code'],
    ],
    list: 'secret_references.list',
    read: 'secret_references.read',
    create: 'secret_references.create',
    update: 'secret_references.update',
    remove: 'secret_references.delete',
  }),
  resource({
    id: 'mcp-integrations',
    title: 'MCP integrations',
    group: 'MCP',
    path: '/v1/mcp-integrations',
    item: '/v1/mcp-integrations/{id}',
    idKey: 'id',
    columns: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['url', 'URL', 'code'],
      ['transport', 'Transport'],
      ['auth_type', 'Authentication'],
      ['status', 'Status'],
    ],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['url', 'URL', 'code'],
      ['transport', 'Transport'],
      ['auth_type', 'Authentication'],
      ['workspace_id', 'Workspace'],
    ],
    list: 'mcp_integrations.list',
    read: 'mcp_integrations.read',
    create: 'mcp_integrations.create',
    update: 'mcp_integrations.update',
    remove: 'mcp_integrations.delete',
  }),
  resource({
    id: 'mcp-servers',
    title: 'MCP servers',
    group: 'MCP',
    path: '/v1/mcp-servers',
    item: '/v1/mcp-servers/{id}',
    idKey: 'id',
    columns: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['mcp_integration_id', 'MCP integration'],
      ['workspace_id', 'Workspace'],
      ['status', 'Status'],
    ],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['mcp_integration_id', 'MCP integration'],
      ['mcp_integration_url', 'URL', 'code'],
      ['workspace_id', 'Workspace'],
    ],
    list: 'mcp_servers.list',
    read: 'mcp_servers.read',
    create: 'mcp_servers.create',
    update: 'mcp_servers.update',
    remove: 'mcp_servers.delete',
    needs: {
      field: 'mcp_integration_id',
      resource: 'mcp-integrations',
      why: 'An MCP server is a workspace’s instance of an MCP integration: pick one, or register it on the MCP integrations page first.',
    },
  }),
  // Its own page (pages/pricing.tsx): the catalog with the custom prices over it.
  resource({
    id: 'pricing',
    title: 'Model pricing',
    group: 'Providers',
    path: '/v1/model-configs/pricing',
    idKey: 'model',
    columns: [
      ['provider', 'Provider'],
      ['model', 'Model', 'code'],
      ['workspace_id', 'Workspace'],
      ['input_per_million', 'Input'],
      ['output_per_million', 'Output'],
      ['cached_input_per_million', 'Cached input'],
      updated,
    ],
    list: 'pricing.read',
    update: 'pricing.update',
  }),
  resource({
    id: 'prompts',
    title: 'Prompts',
    group: 'Prompts',
    path: '/v1/prompts',
    item: '/v1/prompts/{promptId}',
    idKey: 'id',
    columns: [['name', 'Name'], ['slug', 'Slug', 'code'], ['collection_id', 'Collection'], ['model', 'Model'], ['status', 'Status'], updated],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['collection_id', 'Collection'],
      ['workspace_id', 'Workspace'],
      ['model', 'Model'],
      ['string', 'Template'],
      ['parameters', 'Parameters'],
    ],
    list: 'prompts.list',
    read: 'prompts.read',
    create: 'prompts.create',
    update: 'prompts.update',
    remove: 'prompts.delete',
    needs: {
      field: 'collection_id',
      resource: 'collections',
      why: 'Every prompt lives in a collection (a folder of prompts in a workspace). Pick one, or create one here.',
      quickCreate: { ...ws },
    },
    versions: {
      path: '/v1/prompts/{promptId}/versions',
      number: 'prompt_version',
      columns: [['prompt_version', 'Version'], ['prompt_description', 'Description'], ['labels', 'Labels'], ['status', 'Status'], created],
      label: true,
      makeDefault: true,
    },
    render: true,
  }),
  resource({
    id: 'partials',
    title: 'Prompt partials',
    group: 'Prompts',
    path: '/v1/prompts/partials',
    item: '/v1/prompts/partials/{promptPartialId}',
    idKey: 'id',
    columns: [['name', 'Name'], ['slug', 'Slug', 'code'], ['status', 'Status'], ['default_version', 'Default version'], updated],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['string', 'Template'],
      ['version', 'Version'],
      ['version_description', 'Version description'],
    ],
    list: 'prompt_partials.list',
    read: 'prompt_partials.read',
    create: 'prompt_partials.create',
    update: 'prompt_partials.update',
    remove: 'prompt_partials.delete',
    versions: {
      path: '/v1/prompts/partials/{promptPartialId}/versions',
      number: 'version',
      columns: [['version', 'Version'], ['description', 'Description'], ['prompt_version_status', 'Status'], created],
      makeDefault: true,
    },
  }),
  resource({
    id: 'collections',
    title: 'Collections',
    group: 'Prompts',
    path: '/v1/collections',
    item: '/v1/collections/{collectionId}',
    idKey: 'id',
    columns: [['name', 'Name'], ['slug', 'Slug', 'code'], ['workspace_id', 'Workspace'], ['status', 'Status'], created],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['workspace_id', 'Workspace'],
      ['collection_details', 'Contents'],
    ],
    list: 'collections.list',
    read: 'collections.read',
    create: 'collections.create',
    update: 'collections.update',
    remove: 'collections.delete',
  }),
  resource({
    id: 'labels',
    title: 'Labels',
    group: 'Prompts',
    path: '/v1/labels',
    item: '/v1/labels/{labelId}',
    idKey: 'id',
    columns: [
      ['name', 'Name'],
      ['description', 'Description'],
      ['color_code', 'Colour', 'code'],
      ['is_universal', 'Universal'],
    ],
    fields: [
      ['name', 'Name'],
      ['description', 'Description'],
      ['color_code', 'Colour', 'code'],
      ['is_universal', 'Universal'],
    ],
    list: 'labels.list',
    read: 'labels.read',
    create: 'labels.create',
    update: 'labels.update',
    remove: 'labels.delete',
  }),
  resource({
    id: 'guardrails',
    title: 'Guardrails',
    group: 'Routing',
    path: '/v1/guardrails',
    item: '/v1/guardrails/{guardrailId}',
    idKey: 'id',
    columns: [['name', 'Name'], ['slug', 'Slug', 'code'], ['workspace_id', 'Workspace'], ['status', 'Status'], updated],
    fields: [
      ['name', 'Name'],
      ['slug', 'Slug', 'code'],
      ['workspace_id', 'Workspace'],
      ['checks', 'Checks'],
      ['actions', 'Actions'],
    ],
    list: 'guardrails.list',
    read: 'guardrails.read',
    create: 'guardrails.create',
    update: 'guardrails.update',
    remove: 'guardrails.delete',
  }),
  resource({
    id: 'rate-limits',
    title: 'Rate limits',
    group: 'Limits',
    path: '/v1/policies/rate-limits',
    item: '/v1/policies/rate-limits/{id}',
    idKey: 'id',
    columns: [
      ['name', 'Name'],
      ['type', 'Type'],
      ['unit', 'Unit'],
      ['value', 'Limit'],
      ['workspace_id', 'Workspace'],
      ['status', 'Status'],
    ],
    fields: [
      ['name', 'Name'],
      ['type', 'Type'],
      ['unit', 'Unit'],
      ['value', 'Limit'],
      ['conditions', 'Conditions'],
      ['group_by', 'Grouped by'],
    ],
    list: 'policies.list',
    read: 'policies.read',
    create: 'policies.create',
    update: 'policies.update',
    remove: 'policies.delete',
    template: {
      name: 'chat per key',
      ...ws,
      conditions: [{ key: 'endpoint_type', value: 'chatComplete' }],
      group_by: [{ key: 'api_key' }],
      type: 'requests',
      unit: 'rpm',
      value: 60,
    },
  }),
  resource({
    id: 'usage-limits',
    title: 'Usage limits',
    group: 'Limits',
    path: '/v1/policies/usage-limits',
    item: '/v1/policies/usage-limits/{id}',
    idKey: 'id',
    columns: [
      ['name', 'Name'],
      ['type', 'Type'],
      ['credit_limit', 'Limit'],
      ['periodic_reset', 'Resets'],
      ['workspace_id', 'Workspace'],
      ['status', 'Status'],
    ],
    fields: [
      ['name', 'Name'],
      ['type', 'Type'],
      ['credit_limit', 'Limit'],
      ['periodic_reset', 'Resets'],
      ['conditions', 'Conditions'],
      ['group_by', 'Grouped by'],
    ],
    list: 'policies.list',
    read: 'policies.read',
    create: 'policies.create',
    update: 'policies.update',
    remove: 'policies.delete',
    readQuery: '?include_usage=true',
    template: {
      name: 'monthly budget',
      ...ws,
      conditions: [{ key: 'endpoint_type', value: 'chatComplete' }],
      group_by: [{ key: 'api_key' }],
      type: 'cost',
      credit_limit: 100,
      periodic_reset: 'monthly',
    },
  }),
  resource({
    id: 'audit-logs',
    title: 'Audit logs',
    group: 'Observability',
    path: '/v1/audit-logs',
    idKey: 'id',
    columns: [
      ['timestamp', 'Time', 'date'],
      ['method', 'Method'],
      ['uri', 'Path', 'code'],
      ['response_status_code', 'Status'],
      ['outcome', 'Outcome'],
      ['resource_type', 'Resource'],
      ['action', 'Action'],
      ['api_key_id', 'API key'],
      ['email', 'User'],
    ],
    list: 'audit_logs.list',
  }),
  resource({
    id: 'log-exports',
    title: 'Log exports',
    group: 'Observability',
    path: '/v1/logs/exports',
    item: '/v1/logs/exports/{exportId}',
    idKey: 'id',
    columns: [['description', 'Description'], ['status', 'Status'], ['workspace_id', 'Workspace'], ['requested_data', 'Fields'], created],
    fields: [
      ['description', 'Description'],
      ['status', 'Status'],
      ['workspace_id', 'Workspace'],
      ['requested_data', 'Fields'],
      ['filters', 'Filters'],
      ['progress', 'Progress'],
    ],
    list: 'logs.export',
    read: 'logs.export',
    create: 'logs.export',
    update: 'logs.export',
    template: {
      ...ws,
      description: 'Last week’s logs',
      filters: {},
      requested_data: ['id', 'trace_id', 'created_at', 'response_status_code', 'ai_model', 'cost'],
    },
  }),
];

export const resourceById = (id: string): ResourceDef | undefined => RESOURCES.find((r) => r.id === id);
