/** `/v1/virtual-keys` (legacy): create, list, get, update, delete (`workspace_id` names the workspace). */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createVirtualKeySchema, updateVirtualKeySchema } from './schema.ts';
import { toView, VirtualKeyService } from './service.ts';

const slug = (params: Record<string, string>) => params.slug ?? '';

export const virtualKeyRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/virtual-keys',
    scope: 'virtual_keys.create',
    ...withBody(createVirtualKeySchema, async (ctx, body) => new VirtualKeyService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/virtual-keys',
    scope: 'virtual_keys.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const all = await new VirtualKeyService(ctx.deps).list(ctx.principal, ctx.query.get('workspace_id'));
      const now = ctx.deps.clock.now();
      return page(
        all.map((v) => toView(v, now)),
        paging,
      );
    },
  },
  {
    method: 'GET',
    path: '/v1/virtual-keys/:slug',
    scope: 'virtual_keys.read',
    handler: async (ctx) =>
      toView(await new VirtualKeyService(ctx.deps).get(ctx.principal, slug(ctx.params), ctx.query.get('workspace_id')), ctx.deps.clock.now()),
  },
  {
    method: 'PUT',
    path: '/v1/virtual-keys/:slug',
    scope: 'virtual_keys.update',
    ...withBody(updateVirtualKeySchema, async (ctx, body) => {
      await new VirtualKeyService(ctx.deps).update(ctx.principal, slug(ctx.params), ctx.query.get('workspace_id'), body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/virtual-keys/:slug',
    scope: 'virtual_keys.delete',
    handler: async (ctx) => {
      await new VirtualKeyService(ctx.deps).delete(ctx.principal, slug(ctx.params), ctx.query.get('workspace_id'));
      return {};
    },
  },
];
