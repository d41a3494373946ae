/**
 * `/v2/mcp-servers/{id}/connections`: users' OAuth connections to a server (tokens never shown).
 * Listing: owners, admins and the workspace's managers see every user's; other users their own.
 * Revoking (docs/design/spec.md#admin-resources): owners, admins and workspace managers revoke anyone's; every other user
 * only their own (403 AB03 otherwise).
 */
import * as z from 'zod';
import { ForbiddenError, NotFoundError, ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import type { McpConnectionRecord } from '../../store/mcp.ts';
import { page, parsePaging } from '../pagination.ts';
import { parseWith, type AdminContext, type AdminRoute } from '../route.ts';
import { McpServerService } from './service.ts';

export const MAX_CONNECTIONS_PAGE_SIZE = 500;

const filterQuery = z.object({
  user_id: z.string().min(1, 'must not be empty').optional(),
  workspace_id: z.string().min(1, 'must not be empty').optional(),
});

/** Whether the caller may see and revoke every user's connection to a server of this workspace. */
const managesConnections = (p: Principal, workspaceId: string): boolean =>
  p.role === 'owner' || p.role === 'admin' || (p.role === 'manager' && p.workspaceId === workspaceId);

const connectionView = (c: McpConnectionRecord) => ({
  user_id: c.user_id,
  workspace_id: c.workspace_id,
  connected: true,
  expires_at: c.expires_at,
  created_at: c.created_at,
  last_updated_at: c.last_updated_at,
});

function filters(ctx: AdminContext) {
  return parseWith(filterQuery, { user_id: ctx.query.get('user_id') ?? undefined, workspace_id: ctx.query.get('workspace_id') ?? undefined });
}

async function listConnections(ctx: AdminContext) {
  const paging = parsePaging(ctx.query, MAX_CONNECTIONS_PAGE_SIZE);
  const f = filters(ctx);
  const svc = new McpServerService(ctx.deps);
  const server = await svc.get(ctx.principal, ctx.params.id ?? '');
  let all = await svc.repo.listConnections(server.organisation_id, server.id);
  if (!managesConnections(ctx.principal, server.workspace_id)) all = all.filter((c) => c.user_id === ctx.principal.userId);
  if (f.user_id !== undefined) all = all.filter((c) => c.user_id === f.user_id);
  if (f.workspace_id !== undefined) {
    const ws = await ctx.deps.repos.workspaces.resolve(server.organisation_id, f.workspace_id);
    all = all.filter((c) => c.workspace_id === ws?.id);
  }
  const body = page(all.map(connectionView), paging);
  return { ...body, has_more: (paging.current_page + 1) * paging.page_size < all.length };
}

async function revokeConnection(ctx: AdminContext) {
  const f = filters(ctx);
  const svc = new McpServerService(ctx.deps);
  const server = await svc.get(ctx.principal, ctx.params.id ?? '');
  const userId = f.user_id ?? ctx.principal.userId;
  if (!userId) throw ValidationError.field('user_id', 'is required when the caller is not a user');
  if (userId !== ctx.principal.userId && !managesConnections(ctx.principal, server.workspace_id)) {
    throw new ForbiddenError("Only organisation admins and the workspace's managers may revoke another user's MCP connection");
  }
  auditTarget(server.id, server.workspace_id);
  if (!(await svc.repo.deleteConnection(server.organisation_id, server.id, userId))) {
    throw new NotFoundError(`User ${userId} has no connection to MCP server ${server.slug}`, { param: 'user_id' });
  }
  return { success: true };
}

export const mcpConnectionRoutes: readonly AdminRoute[] = [
  { method: 'GET', path: '/v2/mcp-servers/:id/connections', scope: 'mcp_connections.list', handler: listConnections },
  { method: 'DELETE', path: '/v2/mcp-servers/:id/connections', scope: 'mcp_connections.delete', handler: revokeConnection },
];
