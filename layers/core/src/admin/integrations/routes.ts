/** `/v1/integrations`: create, list (filters, tags as key=value), get, update, delete. */
import * as z from 'zod';
import { page, parsePaging } from '../pagination.ts';
import { parseWith, type AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createIntegrationSchema, parseTagFilter, updateIntegrationSchema } from './schema.ts';
import { IntegrationService, toView } from './service.ts';

const slug = (params: Record<string, string>) => params.slug ?? '';

const listQuery = z.object({
  type: z.enum(['all', 'organisation', 'workspace'], { error: 'must be one of all, organisation, workspace' }).default('all'),
  status: z.enum(['active', 'archived'], { error: 'must be one of active, archived' }).optional(),
});

export const integrationRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/integrations',
    scope: 'integrations.create',
    example: { name: 'OpenAI production', slug: 'openai-prod', ai_provider_id: 'openai', key: 'sk-...' },
    ...withBody(createIntegrationSchema, async (ctx, body) => new IntegrationService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/integrations',
    scope: 'integrations.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const q = parseWith(listQuery, { type: ctx.query.get('type') ?? undefined, status: ctx.query.get('status') ?? undefined });
      const all = await new IntegrationService(ctx.deps).list(ctx.principal, {
        workspace: ctx.query.get('workspace_id') ?? undefined,
        ai_provider_id: ctx.query.get('ai_provider_id') ?? undefined,
        status: q.status,
        tags: parseTagFilter(ctx.query.getAll('tags')),
        type: q.type,
      });
      return page(all.map(toView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/integrations/:slug',
    scope: 'integrations.read',
    handler: async (ctx) => toView(await new IntegrationService(ctx.deps).get(ctx.principal, slug(ctx.params))),
  },
  {
    method: 'PUT',
    path: '/v1/integrations/:slug',
    scope: 'integrations.update',
    ...withBody(updateIntegrationSchema, async (ctx, body) => {
      await new IntegrationService(ctx.deps).update(ctx.principal, slug(ctx.params), body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/integrations/:slug',
    scope: 'integrations.delete',
    handler: async (ctx) => {
      await new IntegrationService(ctx.deps).delete(ctx.principal, slug(ctx.params));
      return {};
    },
  },
];
