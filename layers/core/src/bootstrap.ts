/**
 * First start: one organisation, a workspace with slug `default`, and an organisation owner key.
 * Idempotent; a given bootstrap key that is not stored yet is added as an owner key, so a fixed
 * GW_BOOTSTRAP_ADMIN_KEY keeps working across data directories.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from './deps.ts';
import { newKeyRecord } from './admin/api-keys/service.ts';
import { generateApiKey, hashApiKey } from './policy/api-key-secret.ts';
import { SCOPES } from './policy/scopes.ts';

export interface BootstrapResult {
  organisationId: string;
  workspaceId: string;
  /** Set only when a new owner key was created and must be shown once. */
  createdAdminKey?: string;
}

export async function ensureBootstrap(deps: CoreDeps, adminKey?: string, retried = false): Promise<BootstrapResult> {
  const existing = await deps.repos.bootstrap.get();
  if (existing) {
    if (adminKey && !(await deps.repos.apiKeys.getByHash(hashApiKey(adminKey)))) {
      await deps.repos.apiKeys.create(ownerKey(deps, existing.organisation_id, adminKey).record);
    }
    return { organisationId: existing.organisation_id, workspaceId: existing.workspace_id };
  }
  const now = new Date(deps.clock.now()).toISOString();
  const orgId = randomUUID();
  const wsId = randomUUID();
  const owner = ownerKey(deps, orgId, adminKey);
  const created = await deps.repos.bootstrap.create(
    { organisation_id: orgId, workspace_id: wsId, created_at: now },
    { id: orgId, name: 'Default organisation', created_at: now, last_updated_at: now },
    {
      id: wsId,
      organisation_id: orgId,
      slug: 'default',
      name: 'Default',
      description: null,
      status: 'active',
      defaults: null,
      created_at: now,
      last_updated_at: now,
    },
    owner.record,
  );
  // Another process won the race: use what it created (once; a second failure is a real fault).
  if (!created) {
    if (retried) throw new Error('Bootstrap failed: the table holds a partial organisation without its bootstrap record');
    return ensureBootstrap(deps, adminKey, true);
  }
  return { organisationId: orgId, workspaceId: wsId, ...(adminKey ? {} : { createdAdminKey: owner.key }) };
}

export interface DeploymentBootstrap {
  organisationId: string;
  workspaceId: string;
  /** False when the organisation already existed: nothing was created and no key was changed. */
  created: boolean;
}

/**
 * A deployment's first run (the CloudFormation bootstrap resource): creates the organisation, the
 * `default` workspace and the owner key, whose value goes to `keepKey` (a secret) before the
 * organisation exists, so the key cannot be lost between the two. Once the organisation exists it
 * does nothing: a stack update never adds a key back after the owner rotated or deleted it.
 */
export async function bootstrapDeployment(deps: CoreDeps, keepKey: (adminKey: string) => Promise<void>): Promise<DeploymentBootstrap> {
  const existing = await deps.repos.bootstrap.get();
  if (existing) return { organisationId: existing.organisation_id, workspaceId: existing.workspace_id, created: false };
  const adminKey = generateApiKey();
  await keepKey(adminKey);
  const { organisationId, workspaceId } = await ensureBootstrap(deps, adminKey);
  return { organisationId, workspaceId, created: true };
}

function ownerKey(deps: CoreDeps, orgId: string, rawKey?: string) {
  return newKeyRecord(
    {
      organisation_id: orgId,
      workspace_id: null,
      user_id: null,
      type: 'organisation-service',
      name: 'Organisation owner key',
      description: 'Created on first start',
      scopes: [...SCOPES],
      expires_at: null,
      owner: true,
      created_by: null,
    },
    deps.clock.now(),
    rawKey,
  );
}
