/**
 * The admin resources the console manages with one generic page each (list, create, view, edit,
 * delete). Declared as data: the path, the scopes behind each action, the columns. A create form
 * starts from the route's example in GET /v1/openapi.json, else from `template`.
 */
import type { Json } from './api.ts';

export interface ResourceDef {
  id: string;
  title: string;
  /** The list path; an item is `${path}/${id}`. */
  path: string;
  idKey: string;
  columns: string[];
  list: string;
  read?: string;
  create?: string;
  update?: string;
  remove?: string;
  /** Where a create goes when it is not `path`. */
  createPath?: string;
  template?: Json;
  /** The list answers with `next_cursor` rather than pages. */
  cursor?: boolean;
  /** The list takes `workspace_id`. */
  workspaced?: boolean;
  /** Extra query on reads (usage of a budget). */
  readQuery?: string;
  group: string;
  /** The item's versions (`${item}/versions`); `label`: versions take labels; `makeDefault`: one is published. */
  versions?: { label?: boolean; makeDefault?: boolean };
  /** `POST ${item}/render` previews the item with variables. */
  render?: boolean;
  /** A list below each item (a workspace's members). */
  sub?: { title: string; suffix: string; scope: string; columns: string[]; create?: string; template?: Json };
}

const ws = { workspace_id: 'default' };

export const RESOURCES: readonly ResourceDef[] = [
  { id: 'workspaces', title: 'Workspaces', group: 'Organisation', path: '/v1/admin/workspaces', idKey: 'id', columns: ['name', 'slug', 'id', 'created_at'], list: 'workspaces.list', read: 'workspaces.read', create: 'workspaces.create', update: 'workspaces.update', remove: 'workspaces.delete', template: { name: 'Team', slug: 'team' }, sub: { title: 'Members', suffix: 'users', scope: 'workspace_users.list', columns: ['email', 'role', 'id'], create: 'workspace_users.create', template: { users: [{ user_id: '', role: 'member' }] } } },
  { id: 'users', title: 'Users', group: 'Organisation', path: '/v1/admin/users', idKey: 'id', columns: ['email', 'role', 'first_name', 'last_name', 'id'], list: 'users.list', read: 'users.read', update: 'users.update', remove: 'users.delete' },
  { id: 'invites', title: 'Invites', group: 'Organisation', path: '/v1/admin/users/invites', idKey: 'id', columns: ['email', 'role', 'status', 'expires_at'], list: 'users.list', read: 'users.read', create: 'users.create', remove: 'users.delete', template: { email: 'someone@example.com', role: 'member', workspaces: [{ id: 'default', role: 'member' }] } },
  { id: 'integrations', title: 'Integrations', group: 'Providers', path: '/v1/integrations', idKey: 'slug', columns: ['name', 'slug', 'ai_provider_id', 'status'], list: 'integrations.list', read: 'integrations.read', create: 'integrations.create', update: 'integrations.update', remove: 'integrations.delete' },
  { id: 'providers', title: 'Providers', group: 'Providers', path: '/v1/providers', idKey: 'slug', columns: ['name', 'slug', 'integration_id', 'status'], list: 'providers.list', read: 'providers.read', create: 'providers.create', update: 'providers.update', remove: 'providers.delete', workspaced: true },
  { id: 'secret-references', title: 'Secret references', group: 'Providers', path: '/v1/secret-references', idKey: 'id', columns: ['name', 'slug', 'manager', 'id'], list: 'secret_references.list', read: 'secret_references.read', create: 'secret_references.create', update: 'secret_references.update', remove: 'secret_references.delete' },
  { id: 'mcp-integrations', title: 'MCP integrations', group: 'MCP', path: '/v1/mcp-integrations', idKey: 'id', columns: ['name', 'slug', 'url', 'transport', 'auth_type', 'status'], list: 'mcp_integrations.list', read: 'mcp_integrations.read', create: 'mcp_integrations.create', update: 'mcp_integrations.update', remove: 'mcp_integrations.delete' },
  { id: 'mcp-servers', title: 'MCP servers', group: 'MCP', path: '/v1/mcp-servers', idKey: 'id', columns: ['name', 'slug', 'mcp_integration_id', 'workspace_id'], list: 'mcp_servers.list', read: 'mcp_servers.read', create: 'mcp_servers.create', update: 'mcp_servers.update', remove: 'mcp_servers.delete', workspaced: true },
  { id: 'pricing', title: 'Model pricing', group: 'Providers', path: '/v1/model-configs/pricing', idKey: 'model', columns: ['provider', 'model', 'source', 'pay_as_you_go'], list: 'pricing.read' },
  { id: 'prompts', title: 'Prompts', group: 'Prompts', path: '/v1/prompts', idKey: 'id', columns: ['name', 'slug', 'status', 'updated_at'], list: 'prompts.list', read: 'prompts.read', create: 'prompts.create', update: 'prompts.update', remove: 'prompts.delete', workspaced: true, versions: { label: true, makeDefault: true }, render: true },
  { id: 'partials', title: 'Prompt partials', group: 'Prompts', path: '/v1/prompts/partials', idKey: 'id', columns: ['name', 'slug', 'status', 'updated_at'], list: 'prompt_partials.list', read: 'prompt_partials.read', create: 'prompt_partials.create', update: 'prompt_partials.update', remove: 'prompt_partials.delete', workspaced: true, versions: { makeDefault: true } },
  { id: 'collections', title: 'Collections', group: 'Prompts', path: '/v1/collections', idKey: 'id', columns: ['name', 'slug', 'id'], list: 'collections.list', read: 'collections.read', create: 'collections.create', update: 'collections.update', remove: 'collections.delete', workspaced: true },
  { id: 'labels', title: 'Labels', group: 'Prompts', path: '/v1/labels', idKey: 'id', columns: ['name', 'description', 'id'], list: 'labels.list', read: 'labels.read', create: 'labels.create', update: 'labels.update', remove: 'labels.delete', workspaced: true },
  { id: 'guardrails', title: 'Guardrails', group: 'Routing', path: '/v1/guardrails', idKey: 'id', columns: ['name', 'slug', 'status', 'version_id'], list: 'guardrails.list', read: 'guardrails.read', create: 'guardrails.create', update: 'guardrails.update', remove: 'guardrails.delete', workspaced: true },
  { id: 'rate-limits', title: 'Rate limits', group: 'Limits', path: '/v1/policies/rate-limits', idKey: 'id', columns: ['name', 'type', 'unit', 'value', 'status'], list: 'policies.list', read: 'policies.read', create: 'policies.create', update: 'policies.update', remove: 'policies.delete', workspaced: true, template: { name: 'chat per key', ...ws, conditions: [{ key: 'endpoint_type', value: 'chatComplete' }], group_by: [{ key: 'api_key' }], type: 'requests', unit: 'rpm', value: 60 } },
  { id: 'usage-limits', title: 'Usage limits', group: 'Limits', path: '/v1/policies/usage-limits', idKey: 'id', columns: ['name', 'type', 'credit_limit', 'periodic_reset', 'status'], list: 'policies.list', read: 'policies.read', create: 'policies.create', update: 'policies.update', remove: 'policies.delete', workspaced: true, readQuery: '?include_usage=true', template: { name: 'monthly budget', ...ws, conditions: [], group_by: [{ key: 'api_key' }], type: 'cost', credit_limit: 100, periodic_reset: 'monthly' } },
  { id: 'audit-logs', title: 'Audit logs', group: 'Observability', path: '/v1/audit-logs', idKey: 'id', columns: ['timestamp', 'method', 'path', 'status', 'principal_id'], list: 'audit_logs.list' },
  { id: 'log-exports', title: 'Log exports', group: 'Observability', path: '/v1/logs/exports', idKey: 'id', columns: ['id', 'status', 'description', 'created_at'], list: 'logs.export', read: 'logs.export', create: 'logs.export', update: 'logs.export', workspaced: true, template: { ...ws, filters: {}, requested_data: ['id', 'trace_id', 'created_at', 'status_code', 'model', 'cost'] } },
];

export const resourceById = (id: string): ResourceDef | undefined => RESOURCES.find((r) => r.id === id);
