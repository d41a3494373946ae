/**
 * Roles and scopes: what each of the four roles (docs/design/spec.md#roles-and-keys) may do with a scope, and which security
 * setting narrows it. `admin/route.ts` calls `authorize` for every admin route, so a route added
 * by anyone is covered by these rules through the scope it names.
 *
 * - Organisation owners and admins: every scope except the workspace-only ones (calling the
 *   gateway, feedback: "admin keys cannot").
 * - Workspace managers (and workspace service keys): every scope that is not organisation-only,
 *   in their own workspace.
 * - Workspace members: reading (`.read`, `.list`, `.view`) of workspace resources except API keys,
 *   the workspace-only scopes, prompts as the security settings allow, and revoking their own MCP
 *   connections.
 */
import { ForbiddenError } from '../http/errors.ts';
import { describePrincipal, type Principal, type Role } from '../kernel/principal.ts';
import { ORGANISATION_ONLY_SCOPES, WORKSPACE_ONLY_SCOPES, type Scope } from './scopes.ts';
import type { SecuritySettingName } from './security-settings.ts';

const READ_ACTIONS: ReadonlySet<string> = new Set(['read', 'list', 'view']);
const PROMPT_RESOURCES = /^(prompts|prompt_partials|prompt_collections|collections|labels)$/;

export const resourceOf = (scope: string): string => scope.slice(0, scope.lastIndexOf('.'));
export const actionOf = (scope: string): string => scope.slice(scope.lastIndexOf('.') + 1);
export const isReadScope = (scope: string): boolean => READ_ACTIONS.has(actionOf(scope));

/** Why a role may not use a scope, or null when it may (before security settings). */
export function roleDenial(role: Role, scope: string): string | null {
  const organisationRole = role === 'owner' || role === 'admin';
  if (ORGANISATION_ONLY_SCOPES.has(scope as Scope)) {
    return organisationRole ? null : `${scope} is for organisation owners and admins only`;
  }
  if (WORKSPACE_ONLY_SCOPES.has(scope as Scope)) {
    return organisationRole ? `${scope} is for workspace keys and users only (admin keys cannot use it)` : null;
  }
  if (role !== 'member') return null;
  const resource = resourceOf(scope);
  if (resource === 'api_keys') return 'workspace members cannot manage API keys';
  if (isReadScope(scope) || PROMPT_RESOURCES.test(resource)) return null;
  // Every user may revoke their own MCP connection; the route refuses anyone else's.
  if (resource === 'mcp_connections') return null;
  return `workspace members may only read ${resource}`;
}

export const roleAllows = (role: Role, scope: string): boolean => roleDenial(role, scope) === null;

/** A security setting that, when off, takes a scope away from managers or members. */
export interface SettingRule {
  setting: SecuritySettingName;
  role: 'manager' | 'member';
  applies(scope: string): boolean;
  /** What the setting allows, for messages and documentation. */
  what: string;
}

const writeOf = (resources: RegExp) => (scope: string) => resources.test(resourceOf(scope)) && !isReadScope(scope);
const readOf = (resources: RegExp) => (scope: string) => resources.test(resourceOf(scope)) && isReadScope(scope);

export const SETTING_RULES: readonly SettingRule[] = [
  { setting: 'managersWriteWsIntegrations', role: 'manager', applies: writeOf(/^integrations$/), what: 'change workspace integrations' },
  { setting: 'managersWriteWsMcpIntegrations', role: 'manager', applies: writeOf(/^mcp_integrations$/), what: 'change workspace MCP integrations' },
  { setting: 'managersWriteMcpServers', role: 'manager', applies: writeOf(/^mcp_servers$/), what: 'change MCP servers' },
  { setting: 'managersViewAnalytics', role: 'manager', applies: (s) => resourceOf(s) === 'analytics', what: 'view analytics' },
  { setting: 'membersViewAnalytics', role: 'member', applies: (s) => resourceOf(s) === 'analytics', what: 'view analytics' },
  { setting: 'managersViewPrompts', role: 'manager', applies: readOf(PROMPT_RESOURCES), what: 'view prompts' },
  { setting: 'membersViewPrompts', role: 'member', applies: readOf(PROMPT_RESOURCES), what: 'view prompts' },
  { setting: 'managersWritePrompts', role: 'manager', applies: writeOf(PROMPT_RESOURCES), what: 'change prompts' },
  { setting: 'membersWritePrompts', role: 'member', applies: writeOf(PROMPT_RESOURCES), what: 'change prompts' },
];

/**
 * Settings that narrow what data a manager or member sees rather than which routes they call; the
 * owners of those routes ask `securitySetting(deps, principal, name)` (policy/security-settings.ts).
 */
export const DATA_SETTINGS: readonly SecuritySettingName[] = ['membersViewAllData', 'managersViewAllData'];

export const settingRulesFor = (role: Role, scope: string): SettingRule[] => SETTING_RULES.filter((r) => r.role === role && r.applies(scope));

export interface AuthorizeOptions {
  /** When set, only these roles may call the route whatever their scopes. */
  roles?: readonly Role[] | undefined;
  /** Looks a security setting up for the caller (cached). */
  setting(name: SecuritySettingName): Promise<boolean>;
}

const ROLE_NAMES: Record<Role, string> = {
  owner: 'organisation owners',
  admin: 'organisation admins',
  manager: 'workspace managers',
  member: 'workspace members',
};

/** Throws 403 AB03 unless the caller holds the scope, its role allows it and no setting forbids it. */
export async function authorize(p: Principal, scope: Scope, opts: AuthorizeOptions): Promise<void> {
  if (!p.owner && !p.scopes.has(scope)) {
    throw new ForbiddenError(`${p.kind === 'jwt' ? 'This token' : 'This API key'} lacks the scope ${scope}`);
  }
  const denial = roleDenial(p.role, scope);
  if (denial) throw new ForbiddenError(`${describePrincipal(p)} may not use ${scope}: ${denial}`);
  if (opts.roles && !opts.roles.includes(p.role)) {
    throw new ForbiddenError(`${describePrincipal(p)} may not call this route: only ${opts.roles.map((r) => ROLE_NAMES[r]).join(' and ')} may`);
  }
  for (const rule of settingRulesFor(p.role, scope)) {
    if (!(await opts.setting(rule.setting))) {
      throw new ForbiddenError(`${describePrincipal(p)} may not ${rule.what} here: the security setting ${rule.setting} is off`);
    }
  }
}
