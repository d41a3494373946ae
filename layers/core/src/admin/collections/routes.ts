/** `/v1/collections`: create, list, get (id or slug, with child collections), rename, delete. */
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { page, parsePaging } from '../pagination.ts';
import { createCollectionSchema, updateCollectionSchema } from './schema.ts';
import { CollectionService } from './service.ts';

const id = (params: Record<string, string>) => params.collectionId ?? '';
const transactional = { transactional: true } as const;

export const collectionRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/collections',
    scope: 'collections.create',
    audit: transactional,
    example: { name: 'Support bot', workspace_id: 'default' },
    ...withBody(createCollectionSchema, async (ctx, body) => new CollectionService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/collections',
    scope: 'collections.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await new CollectionService(ctx.deps).list(ctx.principal, ctx.query), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/collections/:collectionId',
    scope: 'collections.read',
    handler: async (ctx) => new CollectionService(ctx.deps).detail(ctx.principal, id(ctx.params)),
  },
  {
    method: 'PUT',
    path: '/v1/collections/:collectionId',
    scope: 'collections.update',
    audit: transactional,
    example: { name: 'Support bot (EU)' },
    ...withBody(updateCollectionSchema, async (ctx, body) => new CollectionService(ctx.deps).update(ctx.principal, id(ctx.params), body)),
  },
  {
    method: 'DELETE',
    path: '/v1/collections/:collectionId',
    scope: 'collections.delete',
    audit: transactional,
    handler: async (ctx) => new CollectionService(ctx.deps).delete(ctx.principal, id(ctx.params)),
  },
];
