/** `/v1/labels`: organisation and workspace labels, plus the universal ones (read-only). */
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { page, parsePaging } from '../pagination.ts';
import { createLabelSchema, updateLabelSchema } from './schema.ts';
import { LabelService } from './service.ts';

const id = (params: Record<string, string>) => params.labelId ?? '';
const transactional = { transactional: true } as const;

export const labelRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/labels',
    scope: 'labels.create',
    audit: transactional,
    example: { name: 'canary', workspace_id: 'default', description: 'Versions tried on 5% of traffic', color_code: '#1e90ff' },
    ...withBody(createLabelSchema, async (ctx, body) => new LabelService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/labels',
    scope: 'labels.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await new LabelService(ctx.deps).list(ctx.principal, ctx.query), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/labels/:labelId',
    scope: 'labels.read',
    handler: async (ctx) => new LabelService(ctx.deps).detail(ctx.principal, id(ctx.params)),
  },
  {
    method: 'PUT',
    path: '/v1/labels/:labelId',
    scope: 'labels.update',
    audit: transactional,
    example: { description: 'Versions tried on 10% of traffic' },
    ...withBody(updateLabelSchema, async (ctx, body) => new LabelService(ctx.deps).update(ctx.principal, id(ctx.params), body)),
  },
  {
    method: 'DELETE',
    path: '/v1/labels/:labelId',
    scope: 'labels.delete',
    audit: transactional,
    handler: async (ctx) => new LabelService(ctx.deps).delete(ctx.principal, id(ctx.params)),
  },
];
