/** Every entity of the single table, declared as data (key layout: docs/design/design.md#storage). */
import { Entity } from './entity.ts';

export interface OrganisationRecord {
  id: string;
  name: string;
  created_at: string;
  last_updated_at: string;
  /** Security settings changed from their defaults (policy/security-settings.ts). */
  security_settings?: Record<string, boolean> | null;
  /** Organisation auth settings: `max_session_ttl` in seconds (>= 900) or null for none. */
  session_settings?: { max_session_ttl: number | null } | null;
  last_updated_by?: string | null;
}

export type WorkspaceStatus = 'active' | 'archived';

export interface WorkspaceRecord {
  id: string;
  organisation_id: string;
  slug: string;
  name: string;
  description: string | null;
  status: WorkspaceStatus;
  defaults: Record<string, unknown> | null;
  created_at: string;
  last_updated_at: string;
  /** Workspace-level overrides of the organisation's security settings. */
  security_settings?: Record<string, boolean> | null;
  usage_limits?: unknown[] | null;
  rate_limits?: unknown[] | null;
  archived_at?: string | null;
  last_updated_by?: string | null;
}

export type ApiKeyType = 'organisation-service' | 'workspace-service' | 'workspace-user';
export type ApiKeyStatus = 'active' | 'expired' | 'exhausted';

/** Automatic rotation of a key (reference: `rotation_policy`). */
export interface RotationPolicy {
  rotation_period: 'weekly' | 'monthly' | null;
  /** ISO 8601; the next automatic rotation, null when none is planned. */
  next_rotation_at: string | null;
  /** How long the previous key keeps working after a rotation; >= 30 minutes. */
  key_transition_period_ms: number;
}

/** A key's usage limit; the limits engine enforces it, the key lifecycle worker resets it. */
export interface KeyUsageLimits {
  type?: 'cost' | 'tokens';
  credit_limit?: number | null;
  alert_threshold?: number | null;
  periodic_reset?: 'weekly' | 'monthly' | null;
  periodic_reset_days?: number | null;
  /** ISO 8601; when the usage counter is reset next. */
  next_usage_reset_at?: string | null;
}

export interface KeyRateLimit {
  type: 'requests' | 'tokens';
  unit: 'rps' | 'rpm' | 'rph' | 'rpd' | 'rpw';
  value: number;
}

/** Defaults a key applies to its gateway requests. */
export interface ApiKeyDefaults {
  /** A saved config (id or slug) used when the request sends none. */
  config_id?: string;
  /** When false, requests may not send their own x-gw-config. Default true. */
  allow_config_override?: boolean;
  /** Metadata merged under the request's x-gw-metadata. */
  metadata?: Record<string, string>;
}

export interface ApiKeyRecord {
  id: string;
  organisation_id: string;
  workspace_id: string | null;
  user_id: string | null;
  type: ApiKeyType;
  name: string;
  description: string | null;
  scopes: string[];
  status: ApiKeyStatus;
  /** SHA-256 (hex) of the key; the key itself is never stored. */
  key_hash: string;
  /** A masked form for display, e.g. `gw_AbCd****wxyz`. */
  key_mask: string;
  /** Organisation owner keys (the bootstrap key) may do everything. */
  owner: boolean;
  expires_at: string | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
  last_reset_at: string | null;
  defaults?: ApiKeyDefaults | null;
  rotation_policy?: RotationPolicy | null;
  /** The key replaced by the last rotation, accepted until `previous_key_expires_at`. */
  previous_key_hash?: string | null;
  previous_key_expires_at?: string | null;
  last_rotated_at?: string | null;
  /** The `next_rotation_at` for which the upcoming-rotation e-mail went out. */
  rotation_notice_for?: string | null;
  /** The `expires_at` for which the expiry warning went out. */
  expiry_warning_for?: string | null;
  alert_emails?: string[] | null;
  usage_limits?: KeyUsageLimits | null;
  rate_limits?: KeyRateLimit[] | null;
  /** How many times the key's usage was reset (manually or periodically); counters start anew with each. */
  reset_usage?: number;
}

export interface BootstrapRecord {
  organisation_id: string;
  workspace_id: string;
  created_at: string;
}

export const Organisation = new Entity<OrganisationRecord>({
  name: 'Organisation',
  key: (r) => ({ pk: `ORG#${r.id}`, sk: 'ORG' }),
});

export const Workspace = new Entity<WorkspaceRecord>({
  name: 'Workspace',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `WS#${r.id}` }),
});

/** Uniqueness guard and lookup for workspace slugs. */
export const WorkspaceSlug = new Entity<{ organisation_id: string; slug: string; workspace_id: string }>({
  name: 'WorkspaceSlug',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `WSSLUG#${r.slug}` }),
});

export const ApiKey = new Entity<ApiKeyRecord>({
  name: 'ApiKey',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `APIKEY#${r.id}` }),
  gsi1: (r) => ({ pk: `WS#${r.workspace_id ?? '-'}#APIKEYS`, sk: `${r.created_at}#${r.id}` }),
});

/**
 * A copy of the key record under its hash, so that authenticating a cold key is one GetItem.
 * Written in the same transaction as the record, always through ApiKeyRepository.
 */
export const ApiKeyByHash = new Entity<ApiKeyRecord>({
  name: 'ApiKeyByHash',
  key: (r) => ({ pk: `KEYHASH#${r.key_hash}`, sk: 'KEYHASH' }),
});

/**
 * The hash of the key a rotation replaced: a copy of the record under the old hash, accepted until
 * `previous_key_expires_at` (DynamoDB's TTL removes it some time after).
 */
export const ApiKeyPreviousHash = new Entity<ApiKeyRecord>({
  name: 'ApiKeyByHash',
  key: (r) => ({ pk: `KEYHASH#${r.previous_key_hash ?? '-'}`, sk: 'KEYHASH' }),
  ttl: (r) => (r.previous_key_expires_at ? Math.ceil(Date.parse(r.previous_key_expires_at) / 1000) + 86_400 : undefined),
});

export const Bootstrap = new Entity<BootstrapRecord>({
  name: 'Bootstrap',
  key: () => ({ pk: 'META', sk: 'BOOTSTRAP' }),
});
