/** Who is calling: resolved from an API key (and, later, a JWT). */
import type { ApiKeyDefaults, ApiKeyType } from '../store/entities.ts';

export interface Principal {
  keyId: string;
  organisationId: string;
  /** The key's workspace; null for organisation keys. */
  workspaceId: string | null;
  userId: string | null;
  keyType: ApiKeyType;
  /** Organisation owner (the bootstrap key). */
  owner: boolean;
  scopes: ReadonlySet<string>;
  /** Defaults the key applies to gateway requests (pinned config, metadata). */
  defaults: ApiKeyDefaults | null;
}

export const isOrganisationPrincipal = (p: Principal): boolean => p.keyType === 'organisation-service';
