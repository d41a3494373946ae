/** `/v1/providers`: create, list, get, update, delete (`workspace_id` names the workspace, id or slug). */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createProviderSchema, updateProviderSchema } from './schema.ts';
import { ProviderService, toView } from './service.ts';

const slug = (params: Record<string, string>) => params.slug ?? '';

export const providerRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/providers',
    scope: 'providers.create',
    example: { name: 'OpenAI for the app', slug: 'openai-app', integration_id: 'openai-prod', workspace_id: 'default' },
    ...withBody(createProviderSchema, async (ctx, body) => new ProviderService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/providers',
    scope: 'providers.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const service = new ProviderService(ctx.deps);
      const all = await service.list(ctx.principal, ctx.query.get('workspace_id'));
      const shown = page(all, paging);
      const integrations = await service.integrationsOf(ctx.principal, shown.data);
      const now = ctx.deps.clock.now();
      return { ...shown, data: shown.data.map((p) => toView(p, integrations.get(p.integration_id), now)) };
    },
  },
  {
    method: 'GET',
    path: '/v1/providers/:slug',
    scope: 'providers.read',
    handler: async (ctx) => {
      const service = new ProviderService(ctx.deps);
      const rec = await service.get(ctx.principal, slug(ctx.params), ctx.query.get('workspace_id'));
      return toView(rec, (await service.integrationsOf(ctx.principal, [rec])).get(rec.integration_id), ctx.deps.clock.now());
    },
  },
  {
    method: 'PUT',
    path: '/v1/providers/:slug',
    scope: 'providers.update',
    ...withBody(updateProviderSchema, async (ctx, body) =>
      new ProviderService(ctx.deps).update(ctx.principal, slug(ctx.params), ctx.query.get('workspace_id'), body),
    ),
  },
  {
    method: 'DELETE',
    path: '/v1/providers/:slug',
    scope: 'providers.delete',
    handler: async (ctx) => {
      await new ProviderService(ctx.deps).delete(ctx.principal, slug(ctx.params), ctx.query.get('workspace_id'));
      return {};
    },
  },
];
