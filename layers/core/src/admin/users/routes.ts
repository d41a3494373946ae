/** `/v1/admin/users`: the organisation's users (list, get, update role, remove). */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { updateUserSchema } from './schema.ts';
import { UserService } from './service.ts';

const id = (p: Record<string, string>) => p.userId ?? '';

export const userRoutes: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/v1/admin/users',
    scope: 'users.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await new UserService(ctx.deps).list(ctx.principal, ctx.query), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/admin/users/:userId',
    scope: 'users.read',
    handler: async (ctx) => new UserService(ctx.deps).get(ctx.principal, id(ctx.params)),
  },
  {
    method: 'PUT',
    path: '/v1/admin/users/:userId',
    scope: 'users.update',
    audit: { transactional: true },
    ...withBody(updateUserSchema, async (ctx, body) => {
      await new UserService(ctx.deps).update(ctx.principal, id(ctx.params), body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/admin/users/:userId',
    scope: 'users.delete',
    audit: { transactional: true },
    handler: async (ctx) => {
      await new UserService(ctx.deps).delete(ctx.principal, id(ctx.params));
      return {};
    },
  },
];
