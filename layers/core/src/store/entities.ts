/** Every entity of the single table, declared as data (key layout in DESIGN.md's "Data"). */
import { Entity } from './entity.ts';

export interface OrganisationRecord {
  id: string;
  name: string;
  created_at: string;
  last_updated_at: string;
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
}

export type ApiKeyType = 'organisation-service' | 'workspace-service' | 'workspace-user';
export type ApiKeyStatus = 'active' | 'expired';

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

export const Bootstrap = new Entity<BootstrapRecord>({
  name: 'Bootstrap',
  key: () => ({ pk: 'META', sk: 'BOOTSTRAP' }),
});
