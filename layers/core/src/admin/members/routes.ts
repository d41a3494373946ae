/** Workspace members: `/v1/admin/workspaces/{id}/users` (and `/v1/workspaces/{id}/users`). */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { addMembersSchema, updateMemberSchema } from './schema.ts';
import { MemberService } from './service.ts';

const ws = (p: Record<string, string>) => p.workspaceId ?? '';
const user = (p: Record<string, string>) => p.userId ?? '';

const routesUnder = (base: string): AdminRoute[] => [
  {
    method: 'POST',
    path: `${base}/:workspaceId/users`,
    scope: 'workspace_users.create',
    audit: { transactional: true },
    ...withBody(addMembersSchema, async (ctx, body) => {
      await new MemberService(ctx.deps).add(ctx.principal, ws(ctx.params), body);
      return {};
    }),
  },
  {
    method: 'GET',
    path: `${base}/:workspaceId/users`,
    scope: 'workspace_users.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await new MemberService(ctx.deps).list(ctx.principal, ws(ctx.params), ctx.query), paging);
    },
  },
  {
    method: 'GET',
    path: `${base}/:workspaceId/users/:userId`,
    scope: 'workspace_users.read',
    handler: async (ctx) => new MemberService(ctx.deps).get(ctx.principal, ws(ctx.params), user(ctx.params)),
  },
  {
    method: 'PUT',
    path: `${base}/:workspaceId/users/:userId`,
    scope: 'workspace_users.update',
    audit: { transactional: true },
    ...withBody(updateMemberSchema, async (ctx, body) => {
      await new MemberService(ctx.deps).update(ctx.principal, ws(ctx.params), user(ctx.params), body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: `${base}/:workspaceId/users/:userId`,
    scope: 'workspace_users.delete',
    audit: { transactional: true },
    handler: async (ctx) => {
      await new MemberService(ctx.deps).remove(ctx.principal, ws(ctx.params), user(ctx.params));
      return {};
    },
  },
];

export const memberRoutes: readonly AdminRoute[] = [...routesUnder('/v1/admin/workspaces'), ...routesUnder('/v1/workspaces')];
