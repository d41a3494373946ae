/** Who is calling: resolved from an API key or a JWT. */
import type { ApiKeyDefaults, ApiKeyType, KeyRateLimit, KeyUsageLimits } from '../store/entities.ts';

/**
 * The four roles of docs/design/spec.md#roles-and-keys. Organisation owners and admins act on the whole organisation;
 * workspace managers and members on one workspace.
 */
export type Role = 'owner' | 'admin' | 'manager' | 'member';

export const ROLES: readonly Role[] = ['owner', 'admin', 'manager', 'member'];

/** A key's limits as the limits engine reads them (no table read on the hot path). */
export interface PrincipalLimits {
  usage_limits: KeyUsageLimits | null;
  rate_limits: KeyRateLimit[] | null;
  /** Increments with every usage reset; usage counters are kept per value. */
  reset_usage: number;
  last_reset_at: string | null;
}

export interface Principal {
  /** How the caller authenticated. */
  kind: 'api-key' | 'jwt';
  /** The key's id; for a JWT `jwt:<sub>`. Recorded as `created_by` / `last_updated_by`. */
  keyId: string;
  organisationId: string;
  /** The workspace of a workspace principal; null for organisation owners and admins. */
  workspaceId: string | null;
  userId: string | null;
  email: string | null;
  /** For a JWT: `organisation-service` for owners and admins, `workspace-user` otherwise. */
  keyType: ApiKeyType;
  role: Role;
  /** The organisation owner key (the bootstrap key): every scope, whatever it lists. */
  owner: boolean;
  scopes: ReadonlySet<string>;
  /** Defaults the key applies to gateway requests (pinned config, metadata). */
  defaults: ApiKeyDefaults | null;
  /** The key's own limits; null for a JWT. */
  limits: PrincipalLimits | null;
}

/** Organisation owners and admins: the whole organisation, every workspace. */
export const isOrganisationPrincipal = (p: Principal): boolean => p.role === 'owner' || p.role === 'admin';

/** How a principal is named in messages: "The workspace manager key", "The member token". */
export function describePrincipal(p: Principal): string {
  const who = { owner: 'organisation owner', admin: 'organisation admin', manager: 'workspace manager', member: 'workspace member' }[p.role];
  return `${p.kind === 'jwt' ? 'This token' : 'This API key'} (${who})`;
}
