/** `/v1/workspaces` and the reference spec's `/v1/admin/workspaces` aliases: create, list, get, update, archive, delete. */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createWorkspaceSchema, updateWorkspaceSchema } from './schema.ts';
import { WorkspaceService, workspaceView } from './service.ts';

const id = (params: Record<string, string>) => params.workspaceId ?? '';

const routesUnder = (base: string): AdminRoute[] => [
  {
    method: 'POST',
    path: base,
    scope: 'workspaces.create',
    audit: { transactional: true },
    example: { name: 'Search team', slug: 'search-team', description: 'The search product' },
    ...withBody(createWorkspaceSchema, async (ctx, body) => new WorkspaceService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: base,
    scope: 'workspaces.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page((await new WorkspaceService(ctx.deps).list(ctx.principal, ctx.query)).map(workspaceView), paging);
    },
  },
  {
    method: 'GET',
    path: `${base}/:workspaceId`,
    scope: 'workspaces.read',
    handler: async (ctx) => new WorkspaceService(ctx.deps).get(ctx.principal, id(ctx.params)),
  },
  {
    method: 'PUT',
    path: `${base}/:workspaceId`,
    scope: 'workspaces.update',
    audit: { transactional: true },
    ...withBody(updateWorkspaceSchema, async (ctx, body) => {
      await new WorkspaceService(ctx.deps).update(ctx.principal, id(ctx.params), body);
      return {};
    }),
  },
  {
    method: 'POST',
    path: `${base}/:workspaceId/archive`,
    // Archiving takes a workspace out of service: the same power as deleting it.
    scope: 'workspaces.delete',
    audit: { transactional: true, action: 'archive' },
    handler: async (ctx) => {
      await new WorkspaceService(ctx.deps).archive(ctx.principal, id(ctx.params));
      return {};
    },
  },
  {
    method: 'DELETE',
    path: `${base}/:workspaceId`,
    scope: 'workspaces.delete',
    audit: { transactional: true },
    handler: async (ctx) => {
      await new WorkspaceService(ctx.deps).delete(ctx.principal, id(ctx.params));
      return {};
    },
  },
];

export const workspaceRoutes: readonly AdminRoute[] = [...routesUnder('/v1/workspaces'), ...routesUnder('/v1/admin/workspaces')];
