/**
 * `/v1/mcp-servers`: create (answers `{id, slug}`), list, get, update, delete; `/test` (connects
 * now), `/capabilities` (as the server narrows its integration's), `/user-access`, `/metadata`
 * (its integration's). The connection routes under /v2 are in connections.ts.
 */
import { performance } from 'node:perf_hooks';
import { withBody } from '../body.ts';
import { page, parsePaging } from '../pagination.ts';
import type { AdminContext, AdminRoute } from '../route.ts';
import { discover, discoveryTarget, syncErrorText } from '../../mcp/discovery.ts';
import { guardedMcpFetch } from '../../mcp/fetch.ts';
import { capabilityList, toCapabilityView } from '../mcp-integrations/capabilities.ts';
import { integrationMetadata } from '../mcp-integrations/routes.ts';
import { capabilitiesUpdateSchema } from '../mcp-integrations/schema.ts';
import { mcpConnectionRoutes } from './connections.ts';
import { createMcpServerSchema, testServerSchema, updateMcpServerSchema, userAccessUpdateSchema } from './schema.ts';
import { McpServerService, toServerView } from './service.ts';

/** `/test` gives up after this long: it answers an admin who waits. */
export const TEST_TIMEOUT_MS = 10_000;

const id = (ctx: AdminContext) => ctx.params.id ?? '';
const service = (ctx: AdminContext) => new McpServerService(ctx.deps);

async function testServer(ctx: AdminContext, timeoutMs: number) {
  const svc = service(ctx);
  const server = await svc.get(ctx.principal, id(ctx));
  const integration = await svc.repo.getIntegration(server.organisation_id, server.mcp_integration_id);
  if (!integration)
    return { success: false, status_code: null, response_time_ms: 0, url: null, server_name: null, error: 'The MCP integration no longer exists' };
  const started = performance.now();
  try {
    const found = await discover(await discoveryTarget(ctx.deps.cipher, integration), guardedMcpFetch(ctx.deps.upstream, ctx.deps.trustedHosts), timeoutMs);
    const ms = Math.round(performance.now() - started);
    return {
      success: true,
      status_code: 200,
      response_time_ms: ms,
      url: integration.url,
      server_name: found.serverName,
      server_version: found.serverVersion,
      protocol_version: found.protocolVersion,
      error: null,
    };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const status = typeof code === 'number' && code >= 100 && code < 600 ? code : null;
    return {
      success: false,
      status_code: status,
      response_time_ms: Math.round(performance.now() - started),
      url: integration.url,
      server_name: null,
      error: syncErrorText(err),
    };
  }
}

export const mcpServerRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/mcp-servers',
    scope: 'mcp_servers.create',
    example: { name: 'Linear', mcp_integration_id: 'linear', workspace_id: 'default' },
    ...withBody(createMcpServerSchema, async (ctx, body) => service(ctx).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/mcp-servers',
    scope: 'mcp_servers.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const svc = service(ctx);
      const all = await svc.list(ctx.principal, { workspace_id: ctx.query.get('workspace_id') ?? undefined, search: ctx.query.get('search') ?? undefined });
      const integrations = new Map((await svc.repo.listIntegrations(ctx.principal.organisationId)).map((i) => [i.id, i]));
      return page(
        all.map((s) => toServerView(s, integrations.get(s.mcp_integration_id))),
        paging,
      );
    },
  },
  {
    method: 'GET',
    path: '/v1/mcp-servers/:id',
    scope: 'mcp_servers.read',
    handler: async (ctx) => {
      const svc = service(ctx);
      const s = await svc.get(ctx.principal, id(ctx));
      return toServerView(s, await svc.repo.getIntegration(s.organisation_id, s.mcp_integration_id));
    },
  },
  {
    method: 'PUT',
    path: '/v1/mcp-servers/:id',
    scope: 'mcp_servers.update',
    ...withBody(updateMcpServerSchema, async (ctx, body) => {
      await service(ctx).update(ctx.principal, id(ctx), body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/mcp-servers/:id',
    scope: 'mcp_servers.delete',
    handler: async (ctx) => {
      await service(ctx).delete(ctx.principal, id(ctx));
      return {};
    },
  },
  {
    method: 'POST',
    path: '/v1/mcp-servers/:id/test',
    scope: 'mcp_servers.read',
    ...withBody(testServerSchema, async (ctx, body) => testServer(ctx, body.timeout_ms ?? TEST_TIMEOUT_MS)),
  },
  {
    method: 'GET',
    path: '/v1/mcp-servers/:id/capabilities',
    scope: 'mcp_servers.read',
    handler: async (ctx) =>
      capabilityList(
        (await service(ctx).capabilities(ctx.principal, id(ctx))).map((c) => ({ ...toCapabilityView(c), integration_enabled: c.integration_enabled })),
        ctx.query,
      ),
  },
  {
    method: 'PUT',
    path: '/v1/mcp-servers/:id/capabilities',
    scope: 'mcp_servers.update',
    ...withBody(capabilitiesUpdateSchema, async (ctx, body) => {
      await service(ctx).updateCapabilities(ctx.principal, id(ctx), body);
      return { success: true };
    }),
  },
  {
    method: 'GET',
    path: '/v1/mcp-servers/:id/user-access',
    scope: 'mcp_servers.read',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const { data, default_user_access } = await service(ctx).userAccess(ctx.principal, id(ctx), ctx.query.get('search') ?? undefined);
      return { ...page(data, paging), default_user_access, has_more: (paging.current_page + 1) * paging.page_size < data.length };
    },
  },
  {
    method: 'PUT',
    path: '/v1/mcp-servers/:id/user-access',
    scope: 'mcp_servers.update',
    ...withBody(userAccessUpdateSchema, async (ctx, body) => {
      await service(ctx).updateUserAccess(ctx.principal, id(ctx), body);
      return { success: true };
    }),
  },
  {
    method: 'GET',
    path: '/v1/mcp-servers/:id/metadata',
    scope: 'mcp_servers.read',
    handler: async (ctx) => {
      const server = await service(ctx).get(ctx.principal, id(ctx));
      return integrationMetadata(ctx, server.mcp_integration_id, 'mcp_servers.update', true);
    },
  },
  ...mcpConnectionRoutes,
];
