/** Which workspaces a caller may see: owners and admins all, workspace principals their own. */
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import type { WorkspaceRecord } from '../../store/entities.ts';

/** The workspace named by id or slug, or 404 when it does not exist or the caller may not see it. */
export async function visibleWorkspace(deps: CoreDeps, caller: Principal, idOrSlug: string, param = 'workspaceId'): Promise<WorkspaceRecord> {
  const ws = await deps.repos.workspaces.resolve(caller.organisationId, idOrSlug);
  if (!ws || (!isOrganisationPrincipal(caller) && ws.id !== caller.workspaceId)) {
    throw new NotFoundError(`Workspace ${idOrSlug} not found`, { param });
  }
  return ws;
}
