/**
 * `/v1/model-configs/pricing`: custom model prices. The model is the rest of the path, so ids with
 * slashes work as they are (`/v1/model-configs/pricing/together-ai/meta-llama/Llama-3.3-70B-Instruct-Turbo`).
 * A workspace override names its workspace with `?workspace_id=` (or `workspace_id` in the PUT body).
 */
import { page, parsePaging } from '../pagination.ts';
import type { AdminContext, AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { putPriceSchema } from './schema.ts';
import { PricingService } from './service.ts';

const PATH = '/v1/model-configs/pricing/:provider/:model{.+}';

function target(ctx: AdminContext): { provider: string; model: string } {
  return { provider: PricingService.checkProvider(ctx.params.provider ?? ''), model: ctx.params.model ?? '' };
}

export const pricingRoutes: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/v1/model-configs/pricing',
    scope: 'pricing.read',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const service = new PricingService(ctx.deps);
      const named = ctx.query.get('workspace_id');
      const workspaceId = named === null ? undefined : await service.level(ctx.principal, named);
      const provider = ctx.query.get('provider') ?? undefined;
      return page(await service.list(ctx.principal, workspaceId, provider), paging);
    },
  },
  {
    method: 'GET',
    path: PATH,
    scope: 'pricing.read',
    handler: async (ctx) => {
      const { provider, model } = target(ctx);
      const service = new PricingService(ctx.deps);
      return service.get(ctx.principal, provider, model, await service.level(ctx.principal, ctx.query.get('workspace_id')));
    },
  },
  {
    method: 'PUT',
    path: PATH,
    scope: 'pricing.update',
    ...withBody(putPriceSchema, async (ctx, body) => {
      const { provider, model } = target(ctx);
      const service = new PricingService(ctx.deps);
      const workspaceId = await service.level(ctx.principal, ctx.query.get('workspace_id'), body.workspace_id);
      return service.put(ctx.principal, provider, model, workspaceId, body);
    }),
  },
  {
    method: 'DELETE',
    path: PATH,
    scope: 'pricing.update',
    handler: async (ctx) => {
      const { provider, model } = target(ctx);
      const service = new PricingService(ctx.deps);
      await service.delete(ctx.principal, provider, model, await service.level(ctx.principal, ctx.query.get('workspace_id')));
      return {};
    },
  },
];
