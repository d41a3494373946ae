/** `/v1/configs`: create, list, get, update (a new version), versions, delete. */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createConfigSchema, updateConfigSchema } from './schema.ts';
import { ConfigService, toView, versionView } from './service.ts';

const slug = (params: Record<string, string>) => params.slug ?? '';

export const configRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/configs',
    scope: 'configs.create',
    example: {
      name: 'Prod routing',
      slug: 'prod-routing',
      workspace_id: 'default',
      config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@openai-prod' }, { provider: '@anthropic-prod' }] },
    },
    ...withBody(createConfigSchema, async (ctx, body) => new ConfigService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/configs',
    scope: 'configs.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const all = await new ConfigService(ctx.deps).list(ctx.principal, ctx.query.get('workspace_id') ?? undefined);
      return page(await Promise.all(all.map(toView)), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/configs/:slug',
    scope: 'configs.read',
    handler: async (ctx) => await toView(await new ConfigService(ctx.deps).get(ctx.principal, slug(ctx.params))),
  },
  {
    method: 'PUT',
    path: '/v1/configs/:slug',
    scope: 'configs.update',
    ...withBody(updateConfigSchema, async (ctx, body) => new ConfigService(ctx.deps).update(ctx.principal, slug(ctx.params), body)),
  },
  {
    method: 'GET',
    path: '/v1/configs/:slug/versions',
    scope: 'configs.read',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await Promise.all((await new ConfigService(ctx.deps).versions(ctx.principal, slug(ctx.params))).map(versionView)), paging);
    },
  },
  {
    method: 'DELETE',
    path: '/v1/configs/:slug',
    scope: 'configs.delete',
    handler: async (ctx) => {
      await new ConfigService(ctx.deps).delete(ctx.principal, slug(ctx.params));
      return {};
    },
  },
];
