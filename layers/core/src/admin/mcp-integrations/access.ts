/**
 * Which workspaces may use an organisation MCP integration: every workspace
 * (`global_workspace_access`) or the ones listed. Only organisation owners and admins change it; a
 * workspace that loses access can no longer reach the servers it made from the integration.
 */
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { integrationAllows, type McpIntegrationRecord } from '../../store/mcp.ts';
import type { McpIntegrationService } from './service.ts';
import type { WorkspacesUpdateBody } from './schema.ts';

export interface WorkspaceAccessItem {
  id: string;
  slug: string;
  enabled: boolean;
  status: string;
}

export async function listWorkspaceAccess(deps: CoreDeps, caller: Principal, rec: McpIntegrationRecord) {
  const all = await deps.repos.workspaces.list(rec.organisation_id);
  const visible = all.filter((w) => isOrganisationPrincipal(caller) || w.id === caller.workspaceId);
  const data: WorkspaceAccessItem[] = visible.map((w) => ({ id: w.id, slug: w.slug, enabled: integrationAllows(rec, w.id), status: w.status }));
  return {
    object: 'list' as const,
    total: data.length,
    data,
    global_workspace_access: rec.workspace_id === null ? { enabled: rec.global_workspace_access } : null,
  };
}

export async function updateWorkspaceAccess(
  deps: CoreDeps,
  service: McpIntegrationService,
  caller: Principal,
  idOrSlug: string,
  body: WorkspacesUpdateBody,
): Promise<void> {
  const rec = await service.get(caller, idOrSlug);
  if (!isOrganisationPrincipal(caller)) throw new ForbiddenError('Which workspaces may use an MCP integration is set by organisation owners and admins only');
  if (rec.workspace_id !== null)
    throw ValidationError.field('workspaces', 'a workspace MCP integration belongs to its workspace; only organisation integrations are granted to workspaces');
  const problems: FieldProblem[] = [];
  const granted = new Set(body.override_existing_workspace_access ? [] : rec.workspace_ids);
  for (const [i, w] of body.workspaces.entries()) {
    const ws = await deps.repos.workspaces.resolve(rec.organisation_id, w.id);
    if (!ws) problems.push({ path: `workspaces[${i}].id`, message: `no workspace "${w.id}" in this organisation` });
    else if (w.enabled) granted.add(ws.id);
    else granted.delete(ws.id);
  }
  if (problems.length) throw new ValidationError(problems);
  const next: McpIntegrationRecord = {
    ...rec,
    workspace_ids: [...granted],
    global_workspace_access: body.global_workspace_access?.enabled ?? rec.global_workspace_access,
    last_updated_at: new Date(deps.clock.now()).toISOString(),
    last_updated_by: caller.userId ?? caller.keyId,
  };
  auditTarget(rec.id, null);
  await service.repo.updateIntegration(next);
}
