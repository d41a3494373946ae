/**
 * `/v1/mcp-integrations`: create, list, get, update, delete; `/workspaces` (which workspaces may use
 * it), `/capabilities` (list and bulk enable/disable), `/metadata` (`?refresh=true` syncs now).
 */
import * as z from 'zod';
import { NotFoundError } from '../../http/errors.ts';
import { authorize } from '../../policy/rbac.ts';
import { page, parsePaging } from '../pagination.ts';
import { parseWith, type AdminContext, type AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { syncDeps } from '../../mcp/sync-queue.ts';
import { syncIntegration } from '../../mcp/discovery.ts';
import { capabilityList, toCapabilityView } from './capabilities.ts';
import { listWorkspaceAccess, updateWorkspaceAccess } from './access.ts';
import { capabilitiesUpdateSchema, createMcpIntegrationSchema, updateMcpIntegrationSchema, workspacesUpdateSchema } from './schema.ts';
import { McpIntegrationService, toIntegrationView } from './service.ts';

const id = (ctx: AdminContext) => ctx.params.id ?? '';
const service = (ctx: AdminContext) => new McpIntegrationService(ctx.deps);

const listQuery = z.object({ type: z.enum(['organisation', 'workspace'], { error: 'must be one of organisation, workspace' }).optional() });
const refreshQuery = z.object({ refresh: z.enum(['true', 'false'], { error: 'must be true or false' }).optional() });

export const metadataView = (m: {
  server_name: string | null;
  server_version: string | null;
  protocol_version: string | null;
  capability_flags: Record<string, unknown>;
  sync_status: string;
  last_synced_at: string | null;
  sync_error: string | null;
}) => ({
  server_name: m.server_name,
  server_version: m.server_version,
  protocol_version: m.protocol_version,
  capability_flags: m.capability_flags,
  sync_status: m.sync_status,
  last_synced_at: m.last_synced_at,
  sync_error: m.sync_error,
});

/** The metadata of an integration; with `refresh=true` (a caller who may change it) a sync runs first. */
export async function integrationMetadata(
  ctx: AdminContext,
  integrationIdOrSlug: string,
  updateScope: 'mcp_integrations.update' | 'mcp_servers.update',
  viaServer = false,
) {
  const { refresh } = parseWith(refreshQuery, { refresh: ctx.query.get('refresh') ?? undefined });
  const svc = service(ctx);
  // Through a server the caller may see, its integration is visible whatever the grants say now.
  const rec = viaServer ? await svc.repo.getIntegration(ctx.principal.organisationId, integrationIdOrSlug) : await svc.get(ctx.principal, integrationIdOrSlug);
  if (!rec) throw new NotFoundError(`MCP integration ${integrationIdOrSlug} not found`);
  if (refresh === 'true') {
    await authorize(ctx.principal, updateScope, { setting: (n) => ctx.setting(n) });
    await syncIntegration(syncDeps(ctx.deps), rec.organisation_id, rec.id);
  }
  return metadataView(await svc.repo.getMetadata(rec.organisation_id, rec.id));
}

export const mcpIntegrationRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/mcp-integrations',
    scope: 'mcp_integrations.create',
    example: {
      name: 'Linear',
      url: 'https://mcp.linear.app/mcp',
      auth_type: 'headers',
      transport: 'http',
      workspace_id: 'default',
      configurations: { custom_headers: { Authorization: 'Bearer lin_api_...' } },
    },
    ...withBody(createMcpIntegrationSchema, async (ctx, body) => service(ctx).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/mcp-integrations',
    scope: 'mcp_integrations.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const q = parseWith(listQuery, { type: ctx.query.get('type') ?? undefined });
      const all = await service(ctx).list(ctx.principal, {
        type: q.type,
        workspace_id: ctx.query.get('workspace_id') ?? undefined,
        search: ctx.query.get('search') ?? undefined,
      });
      return page(all.map(toIntegrationView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/mcp-integrations/:id',
    scope: 'mcp_integrations.read',
    handler: async (ctx) => toIntegrationView(await service(ctx).get(ctx.principal, id(ctx))),
  },
  {
    method: 'PUT',
    path: '/v1/mcp-integrations/:id',
    scope: 'mcp_integrations.update',
    ...withBody(updateMcpIntegrationSchema, async (ctx, body) => {
      await service(ctx).update(ctx.principal, id(ctx), body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/mcp-integrations/:id',
    scope: 'mcp_integrations.delete',
    handler: async (ctx) => {
      await service(ctx).delete(ctx.principal, id(ctx));
      return {};
    },
  },
  {
    method: 'GET',
    path: '/v1/mcp-integrations/:id/workspaces',
    scope: 'mcp_integrations.read',
    handler: async (ctx) => listWorkspaceAccess(ctx.deps, ctx.principal, await service(ctx).get(ctx.principal, id(ctx))),
  },
  {
    method: 'PUT',
    path: '/v1/mcp-integrations/:id/workspaces',
    scope: 'mcp_integrations.update',
    ...withBody(workspacesUpdateSchema, async (ctx, body) => {
      await updateWorkspaceAccess(ctx.deps, service(ctx), ctx.principal, id(ctx), body);
      return { success: true };
    }),
  },
  {
    method: 'GET',
    path: '/v1/mcp-integrations/:id/capabilities',
    scope: 'mcp_integrations.read',
    handler: async (ctx) => {
      const svc = service(ctx);
      const rec = await svc.get(ctx.principal, id(ctx));
      return capabilityList((await svc.repo.getCapabilities(rec.organisation_id, rec.id)).map(toCapabilityView), ctx.query);
    },
  },
  {
    method: 'PUT',
    path: '/v1/mcp-integrations/:id/capabilities',
    scope: 'mcp_integrations.update',
    ...withBody(capabilitiesUpdateSchema, async (ctx, body) => {
      await service(ctx).updateCapabilities(ctx.principal, id(ctx), body);
      return { success: true };
    }),
  },
  {
    method: 'GET',
    path: '/v1/mcp-integrations/:id/metadata',
    scope: 'mcp_integrations.read',
    handler: async (ctx) => integrationMetadata(ctx, id(ctx), 'mcp_integrations.update'),
  },
];
