/**
 * Organisation security settings (docs/design/spec.md#security-settings): booleans with defaults, set on the organisation and
 * overridden per workspace. They narrow what workspace managers and members may do; organisation
 * owners and admins always have full access. Read through a short-lived in-process cache.
 */
import type { CoreDeps } from '../deps.ts';
import type { OrganisationRecord, WorkspaceRecord } from '../store/entities.ts';
import type { Principal } from '../kernel/principal.ts';

export const SECURITY_SETTING_DEFAULTS = {
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
} as const satisfies Record<string, boolean>;

export type SecuritySettingName = keyof typeof SECURITY_SETTING_DEFAULTS;
export type SecuritySettings = Record<SecuritySettingName, boolean>;

export const SECURITY_SETTING_NAMES = Object.keys(SECURITY_SETTING_DEFAULTS) as SecuritySettingName[];

export const isSecuritySettingName = (s: string): s is SecuritySettingName => Object.hasOwn(SECURITY_SETTING_DEFAULTS, s);

/** The organisation's settings: its stored values over the defaults. */
export function organisationSettings(org: Pick<OrganisationRecord, 'security_settings'> | undefined): SecuritySettings {
  const out: SecuritySettings = { ...SECURITY_SETTING_DEFAULTS };
  for (const [k, v] of Object.entries(org?.security_settings ?? {})) if (isSecuritySettingName(k) && typeof v === 'boolean') out[k] = v;
  return out;
}

/** A workspace's effective settings: its overrides over the organisation's settings. */
export function workspaceSettings(org: SecuritySettings, ws: Pick<WorkspaceRecord, 'security_settings'> | undefined): SecuritySettings {
  const out = { ...org };
  for (const [k, v] of Object.entries(ws?.security_settings ?? {})) if (isSecuritySettingName(k) && typeof v === 'boolean') out[k] = v;
  return out;
}

interface Cached<T> {
  value: T;
  at: number;
}

/** Organisation and workspace records as the settings need them, cached for the key cache TTL. */
class SettingsCache {
  readonly #deps: CoreDeps;
  readonly #orgs = new Map<string, Cached<OrganisationRecord | undefined>>();
  readonly #workspaces = new Map<string, Cached<WorkspaceRecord | undefined>>();
  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  async #cached<T>(map: Map<string, Cached<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#deps.clock.now();
    const hit = map.get(key);
    if (hit && now - hit.at < this.#deps.config.keyCacheTtlMs) return hit.value;
    const value = await load();
    if (map.size > 10_000) map.clear();
    map.set(key, { value, at: now });
    return value;
  }

  organisation(orgId: string): Promise<OrganisationRecord | undefined> {
    return this.#cached(this.#orgs, orgId, () => this.#deps.repos.organisations.get(orgId));
  }

  workspace(orgId: string, wsId: string): Promise<WorkspaceRecord | undefined> {
    return this.#cached(this.#workspaces, `${orgId}/${wsId}`, () => this.#deps.repos.workspaces.getById(orgId, wsId));
  }

  clear(): void {
    this.#orgs.clear();
    this.#workspaces.clear();
  }
}

const caches = new WeakMap<CoreDeps, SettingsCache>();

function cacheOf(deps: CoreDeps): SettingsCache {
  let c = caches.get(deps);
  if (!c) {
    c = new SettingsCache(deps);
    caches.set(deps, c);
  }
  return c;
}

/** Drops cached settings after this process changed an organisation or a workspace. */
export function invalidateSettings(deps: CoreDeps): void {
  caches.get(deps)?.clear();
}

/** The cached organisation record (settings, session settings). */
export function cachedOrganisation(deps: CoreDeps, orgId: string): Promise<OrganisationRecord | undefined> {
  return cacheOf(deps).organisation(orgId);
}

/** The cached workspace record (status, overrides). */
export function cachedWorkspace(deps: CoreDeps, orgId: string, wsId: string): Promise<WorkspaceRecord | undefined> {
  return cacheOf(deps).workspace(orgId, wsId);
}

/** The settings in force for a workspace (or the organisation's with no workspace). */
export async function effectiveSettings(deps: CoreDeps, orgId: string, workspaceId: string | null): Promise<SecuritySettings> {
  const org = organisationSettings(await cacheOf(deps).organisation(orgId));
  return workspaceId ? workspaceSettings(org, await cacheOf(deps).workspace(orgId, workspaceId)) : org;
}

/**
 * Whether a setting allows something for this caller: always true for organisation owners and
 * admins; otherwise the caller's workspace override, else the organisation's value, else the default.
 */
export async function securitySetting(deps: CoreDeps, principal: Principal, name: SecuritySettingName): Promise<boolean> {
  if (principal.role === 'owner' || principal.role === 'admin') return true;
  return (await effectiveSettings(deps, principal.organisationId, principal.workspaceId))[name];
}
