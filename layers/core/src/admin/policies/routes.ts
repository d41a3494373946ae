/**
 * `/v1/policies/rate-limits` and `/v1/policies/usage-limits`: create, list, get, update and delete,
 * generated once for both kinds from their table (kinds.ts), plus a budget's entities (usage per
 * group) with their reset. `POLICY_ENABLED=OFF` closes both, `USAGE_LIMITS_ENABLED=OFF` the usage
 * limits, with a 403 naming the flag. Changes that are one transaction carry their audit entry in it.
 */
import * as z from 'zod';
import { page, parsePaging } from '../pagination.ts';
import { withBody } from '../body.ts';
import { parseWith, type AdminContext, type AdminRoute } from '../route.ts';
import { RATE_LIMITS, USAGE_LIMITS, usageView, type CreateCommon, type PolicyKind, type PolicyRecord } from './kinds.ts';
import { listQuerySchema, policyIdSchema } from './schema.ts';
import { PolicyService } from './service.ts';

const query = (ctx: AdminContext, name: string) => ctx.query.get(name) ?? undefined;

/** The `:id` path parameter, named as docs/design/spec.md#admin-resources names it in a 400. */
const idOf = (kind: { idParam: string }, ctx: AdminContext): string =>
  parseWith(z.object({ [kind.idParam]: policyIdSchema }), { [kind.idParam]: ctx.params.id })[kind.idParam] as string;

const statusQuery = (ctx: AdminContext) => parseWith(listQuerySchema.pick({ status: true }), { status: query(ctx, 'status') }).status;

/** The query parameters a kind's list filter names, as they came. */
function filterQuery(schema: z.ZodType, ctx: AdminContext): Record<string, string | undefined> {
  const names = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
  return Object.fromEntries(names.map((n) => [n, query(ctx, n)]));
}

/** The five routes of one kind: create, list, get, update, delete. */
function kindRoutes<R extends PolicyRecord, C extends CreateCommon, U>(kind: PolicyKind<R, C, U>, read?: AdminRoute['handler']): AdminRoute[] {
  const base = `/v1/policies/${kind.segment}`;
  const common = { feature: kind.features, audit: { resourceType: kind.resource } };
  const changing = { feature: kind.features, audit: { transactional: true, resourceType: kind.resource } };
  const service = (ctx: AdminContext) => new PolicyService(ctx.deps);
  return [
    {
      method: 'POST',
      path: base,
      scope: 'policies.create',
      ...changing,
      ...withBody(kind.createSchema, async (ctx, body) => service(ctx).create(kind, ctx.principal, body)),
    },
    {
      method: 'GET',
      path: base,
      scope: 'policies.list',
      ...common,
      handler: async (ctx) => {
        const paging = parsePaging(ctx.query);
        const filter = parseWith(listQuerySchema, { workspace_id: query(ctx, 'workspace_id'), status: query(ctx, 'status') });
        const filters = parseWith(kind.listFilters, filterQuery(kind.listFilters, ctx));
        return page((await service(ctx).list(kind, ctx.principal, filter, filters)).map(kind.view), paging);
      },
    },
    {
      method: 'GET',
      path: `${base}/:id`,
      scope: 'policies.read',
      ...common,
      handler: read ?? (async (ctx) => kind.view(await service(ctx).get(kind, ctx.principal, idOf(kind, ctx), statusQuery(ctx)))),
    },
    {
      method: 'PUT',
      path: `${base}/:id`,
      scope: 'policies.update',
      ...changing,
      ...withBody(kind.updateSchema, async (ctx, body) => {
        await service(ctx).update(kind, ctx.principal, idOf(kind, ctx), body);
        return {};
      }),
    },
    {
      method: 'DELETE',
      path: `${base}/:id`,
      scope: 'policies.delete',
      ...changing,
      handler: async (ctx) => {
        await service(ctx).delete(kind, ctx.principal, idOf(kind, ctx));
        return {};
      },
    },
  ];
}

const entityFilters = z.object({
  status: z.enum(['active', 'exhausted'], { error: 'must be one of active, exhausted' }).optional(),
  search: z.string().max(2048).optional(),
});
const includeUsage = z.enum(['true', 'false'], { error: 'must be true or false' }).optional();

/** A budget read with `include_usage=true` carries each group's usage. */
async function readBudget(ctx: AdminContext): Promise<unknown> {
  const id = idOf(USAGE_LIMITS, ctx);
  const withUsage = parseWith(z.object({ include_usage: includeUsage }), { include_usage: query(ctx, 'include_usage') }).include_usage === 'true';
  const service = new PolicyService(ctx.deps);
  const policy = await service.get(USAGE_LIMITS, ctx.principal, id, statusQuery(ctx));
  return withUsage ? { ...usageView(policy), value_key_usage_map: await service.usageMap(policy) } : usageView(policy);
}

const budgetRoute = { feature: USAGE_LIMITS.features, audit: { resourceType: USAGE_LIMITS.resource } };

export const policyRoutes: readonly AdminRoute[] = [
  ...kindRoutes(RATE_LIMITS),
  ...kindRoutes(USAGE_LIMITS, readBudget),
  {
    method: 'GET',
    path: '/v1/policies/usage-limits/:id/entities',
    scope: 'policies.read',
    ...budgetRoute,
    handler: async (ctx) => {
      const id = idOf(USAGE_LIMITS, ctx);
      const paging = parsePaging(ctx.query);
      const filters = parseWith(entityFilters, { status: query(ctx, 'status'), search: query(ctx, 'search') });
      return page(await new PolicyService(ctx.deps).entities(ctx.principal, id, filters), paging);
    },
  },
  {
    method: 'PUT',
    path: '/v1/policies/usage-limits/:id/entities/:entityId/reset',
    scope: 'policies.update',
    ...budgetRoute,
    handler: async (ctx) => {
      await new PolicyService(ctx.deps).resetEntity(ctx.principal, idOf(USAGE_LIMITS, ctx), ctx.params.entityId ?? '');
      return {};
    },
  },
];
