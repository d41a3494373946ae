/** Roles, scopes and security settings as rules, without the HTTP layer. */
import { describe, expect, it } from 'vitest';
import { ForbiddenError } from '../../../../layers/core/src/http/errors.ts';
import type { Principal, Role } from '../../../../layers/core/src/kernel/principal.ts';
import { authorize, roleAllows, settingRulesFor, SETTING_RULES, type AuthorizeOptions } from '../../../../layers/core/src/policy/rbac.ts';
import { SCOPES, type Scope } from '../../../../layers/core/src/policy/scopes.ts';
import {
  organisationSettings,
  SECURITY_SETTING_DEFAULTS,
  SECURITY_SETTING_NAMES,
  workspaceSettings,
} from '../../../../layers/core/src/policy/security-settings.ts';

const principal = (role: Role, scopes: string[] = [...SCOPES], extra: Partial<Principal> = {}): Principal => ({
  kind: 'api-key',
  keyId: 'k',
  organisationId: 'o',
  workspaceId: role === 'owner' || role === 'admin' ? null : 'w',
  userId: null,
  email: null,
  keyType: role === 'owner' || role === 'admin' ? 'organisation-service' : 'workspace-service',
  role,
  owner: false,
  scopes: new Set(scopes),
  defaults: null,
  limits: null,
  ...extra,
});

const allowAll: AuthorizeOptions = { setting: async () => true };
const outcome = (p: Principal, scope: Scope, opts: AuthorizeOptions = allowAll) =>
  authorize(p, scope, opts).then(
    () => 'allow',
    (e: unknown) => (e instanceof ForbiddenError ? e.message : 'error'),
  );

describe('roleAllows (the roles table of the contract)', () => {
  it.each([
    ['owner', 'workspaces.create', true],
    ['admin', 'audit_logs.list', true],
    ['manager', 'audit_logs.list', false],
    ['manager', 'api_keys.create', true],
    ['member', 'api_keys.list', false],
    ['member', 'configs.read', true],
    ['member', 'configs.create', false],
    ['member', 'logs.export', false],
    ['member', 'completions.write', true],
    ['member', 'feedback.create', true],
    ['admin', 'feedback.create', false],
    ['owner', 'completions.write', false],
    ['member', 'prompts.create', true],
    ['member', 'users.list', false],
    // A scope added by someone else later is classified by its name.
    ['member', 'guardrails.list', true],
    ['member', 'guardrails.update', false],
    ['manager', 'guardrails.update', true],
  ] as const)('%s may use %s: %s', (role, scope, allowed) => {
    expect(roleAllows(role, scope)).toBe(allowed);
  });
});

describe('authorize', () => {
  it('names the missing scope, for keys and tokens', async () => {
    expect(await outcome(principal('manager', ['configs.read']), 'configs.create')).toBe('This API key lacks the scope configs.create');
    expect(await outcome(principal('manager', ['configs.read'], { kind: 'jwt' }), 'configs.create')).toBe('This token lacks the scope configs.create');
  });

  it('the owner key needs no listed scope, but its role still applies', async () => {
    const owner = principal('owner', [], { owner: true });
    expect(await outcome(owner, 'workspaces.create')).toBe('allow');
    expect(await outcome(owner, 'feedback.create')).toContain('admin keys cannot');
  });

  it('route roles restrict whatever the scopes', async () => {
    expect(await outcome(principal('manager'), 'api_keys.create', { ...allowAll, roles: ['owner', 'admin'] })).toContain(
      'only organisation owners and organisation admins may',
    );
  });

  it('a setting that is off takes its scope away from its role only, naming the setting', async () => {
    const off: AuthorizeOptions = { setting: async (n) => n !== 'membersViewAnalytics' };
    expect(await outcome(principal('member'), 'analytics.view', off)).toContain('membersViewAnalytics is off');
    expect(await outcome(principal('manager'), 'analytics.view', off)).toBe('allow');
    expect(await outcome(principal('admin'), 'analytics.view', off)).toBe('allow');
  });

  it('membersWritePrompts (default off) gates prompt writes for members; managers have their own settings', () => {
    expect(settingRulesFor('member', 'prompts.create').map((r) => r.setting)).toEqual(['membersWritePrompts']);
    expect(settingRulesFor('member', 'prompts.read').map((r) => r.setting)).toEqual(['membersViewPrompts']);
    expect(settingRulesFor('manager', 'prompt_partials.update').map((r) => r.setting)).toEqual(['managersWritePrompts']);
    expect(settingRulesFor('manager', 'integrations.create').map((r) => r.setting)).toEqual(['managersWriteWsIntegrations']);
    expect(settingRulesFor('manager', 'mcp_servers.delete').map((r) => r.setting)).toEqual(['managersWriteMcpServers']);
    expect(settingRulesFor('manager', 'mcp_integrations.update').map((r) => r.setting)).toEqual(['managersWriteWsMcpIntegrations']);
    expect(settingRulesFor('admin', 'prompts.create')).toEqual([]);
    expect(SECURITY_SETTING_DEFAULTS.membersWritePrompts).toBe(false);
  });

  it('every setting rule names a known setting', () => {
    for (const r of SETTING_RULES) expect(SECURITY_SETTING_NAMES).toContain(r.setting);
  });
});

describe('security settings', () => {
  it('defaults: every setting true except membersWritePrompts', () => {
    expect(organisationSettings(undefined)).toEqual({
      managersWriteWsIntegrations: true,
      managersWriteWsMcpIntegrations: true,
      managersWriteMcpServers: true,
      membersViewAllData: true,
      managersViewAllData: true,
      membersViewAnalytics: true,
      managersViewAnalytics: true,
      membersViewPrompts: true,
      managersViewPrompts: true,
      managersWritePrompts: true,
      membersWritePrompts: false,
    });
  });

  it('workspace overrides win over the organisation, which wins over the defaults; unknown keys are ignored', () => {
    const org = organisationSettings({ security_settings: { membersViewAnalytics: false, bogus: true } });
    expect(org.membersViewAnalytics).toBe(false);
    expect('bogus' in org).toBe(false);
    const ws = workspaceSettings(org, { security_settings: { membersViewAnalytics: true, membersWritePrompts: true } });
    expect([ws.membersViewAnalytics, ws.membersWritePrompts, ws.managersViewAnalytics]).toEqual([true, true, true]);
  });
});
