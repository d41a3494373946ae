/**
 * The scope catalogue: `<resource>.<action>`. Every admin route names exactly one of these, and a
 * key may only grant scopes it holds itself.
 */
export const SCOPES = [
  'completions.write',
  'api_keys.create',
  'api_keys.read',
  'api_keys.list',
  'api_keys.update',
  'api_keys.delete',
  'api_keys.rotate',
  'workspaces.create',
  'workspaces.read',
  'workspaces.list',
  'workspaces.update',
  'workspaces.delete',
  'organisation.read',
  'organisation.update',
  'users.create',
  'users.read',
  'users.list',
  'users.update',
  'users.delete',
  'workspace_users.create',
  'workspace_users.read',
  'workspace_users.list',
  'workspace_users.update',
  'workspace_users.delete',
  'configs.create',
  'configs.read',
  'configs.list',
  'configs.update',
  'configs.delete',
  'guardrails.create',
  'guardrails.read',
  'guardrails.list',
  'guardrails.update',
  'guardrails.delete',
  'prompts.create',
  'prompts.read',
  'prompts.list',
  'prompts.update',
  'prompts.delete',
  'prompt_partials.create',
  'prompt_partials.read',
  'prompt_partials.list',
  'prompt_partials.update',
  'prompt_partials.delete',
  'collections.create',
  'collections.read',
  'collections.list',
  'collections.update',
  'collections.delete',
  'labels.create',
  'labels.read',
  'labels.list',
  'labels.update',
  'labels.delete',
  'integrations.create',
  'integrations.read',
  'integrations.list',
  'integrations.update',
  'integrations.delete',
  'providers.create',
  'providers.read',
  'providers.list',
  'providers.update',
  'providers.delete',
  'virtual_keys.create',
  'virtual_keys.read',
  'virtual_keys.list',
  'virtual_keys.update',
  'virtual_keys.delete',
  'logs.view',
  'logs.list',
  'logs.export',
  'analytics.view',
  'policies.create',
  'policies.read',
  'policies.list',
  'policies.update',
  'policies.delete',
  'audit_logs.list',
  'pricing.read',
  'pricing.update',
  'feedback.create',
  'feedback.update',
  'feedback.list',
  'secret_references.create',
  'secret_references.read',
  'secret_references.list',
  'secret_references.update',
  'secret_references.delete',
] as const;

export type Scope = (typeof SCOPES)[number];

const KNOWN: ReadonlySet<string> = new Set(SCOPES);

export function isScope(s: string): s is Scope {
  return KNOWN.has(s);
}

/** Scopes an organisation-level key may hold but a workspace key may not. */
export const ORGANISATION_ONLY_SCOPES: ReadonlySet<Scope> = new Set<Scope>([
  'workspaces.create',
  'workspaces.delete',
  'organisation.read',
  'organisation.update',
  // Integrations are organisation-level. SPEC's managersWriteWsIntegrations concerns
  // workspace-scoped integrations, which Gantry does not have yet; until it does, only
  // organisation keys manage integrations, and workspaces use them through providers.
  'integrations.create',
  'integrations.read',
  'integrations.list',
  'integrations.update',
  'integrations.delete',
  'users.create',
  'users.read',
  'users.list',
  'users.update',
  'users.delete',
  'audit_logs.list',
  // Where the provider keys live: organisation owners and admins only.
  'secret_references.create',
  'secret_references.read',
  'secret_references.list',
  'secret_references.update',
  'secret_references.delete',
]);

/** Scopes a workspace key may be given. */
export const WORKSPACE_SCOPES: readonly Scope[] = SCOPES.filter((s) => !ORGANISATION_ONLY_SCOPES.has(s));

/** Scopes only workspace principals use: calling the gateway and sending feedback (admin keys cannot). */
export const WORKSPACE_ONLY_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['completions.write', 'feedback.create', 'feedback.update']);
