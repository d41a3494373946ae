/**
 * Whose logs and analytics a caller reads: a workspace key its own workspace (a `workspace_id` it
 * names is ignored, as in the reference API); an organisation key the workspace it names, or every
 * workspace of the organisation where a route allows it. Managers and members whose security
 * settings hide other people's data see only requests made with their own keys.
 */
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import type { LogFilters } from '../../observability/filters.ts';
import type { AnalyticsScope } from '../../observability/analytics.ts';
import type { AdminContext } from '../route.ts';

/** Requests refused before their key was known belong to no workspace; the owner key reads them as `-`. */
export const UNATTRIBUTED = '-';

export function requestedWorkspace(ctx: AdminContext): string | undefined {
  return ctx.query.get('workspace_id') ?? ctx.query.get('workspace_slug') ?? undefined;
}

export async function readScope(ctx: AdminContext, requested: string | undefined, opts: { organisationWide: boolean }): Promise<AnalyticsScope> {
  const p = ctx.principal;
  if (p.workspaceId) return { organisationId: p.organisationId, workspaces: [p.workspaceId] };
  if (requested === UNATTRIBUTED && p.owner) return { organisationId: p.organisationId, workspaces: [UNATTRIBUTED] };
  if (requested) {
    const ws = await ctx.deps.repos.workspaces.resolve(p.organisationId, requested);
    if (!ws) throw new NotFoundError(`Workspace ${requested} not found`, { param: 'workspace_id' });
    return { organisationId: p.organisationId, workspaces: [ws.id] };
  }
  if (!opts.organisationWide) throw ValidationError.field('workspace_id', 'is required when the caller is an organisation key');
  const all = await ctx.deps.repos.workspaces.list(p.organisationId);
  return { organisationId: p.organisationId, workspaces: all.map((w) => w.id) };
}

/** Narrows filters to the caller's own requests when a security setting says so. */
export async function ownDataOnly(ctx: AdminContext, f: LogFilters): Promise<LogFilters> {
  const p = ctx.principal;
  if (p.owner || p.role === 'owner' || p.role === 'admin') return f;
  const allowed = await ctx.setting(p.role === 'member' ? 'membersViewAllData' : 'managersViewAllData');
  if (allowed) return f;
  if (p.userId) return { ...f, keyUserIds: [p.userId] };
  // Asking for other keys as well narrows to none of them.
  return { ...f, apiKeyIds: f.apiKeyIds ? f.apiKeyIds.filter((k) => k === p.keyId) : [p.keyId] };
}
