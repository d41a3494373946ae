/**
 * `/v1/policies/rate-limits` and `/v1/policies/usage-limits`: create, list, get, update, delete, and
 * a budget's entities (usage per group) with their reset. `POLICY_ENABLED=OFF` closes both,
 * `USAGE_LIMITS_ENABLED=OFF` the usage limits, with a 403 naming the flag. Changes that are one
 * transaction carry their audit entry in it.
 */
import * as z from 'zod';
import { page, parsePaging } from '../pagination.ts';
import { featureDisabled, parseWith, type AdminContext, type AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import {
  createRateLimitSchema,
  createUsageLimitSchema,
  listQuerySchema,
  policyIdSchema,
  updateRateLimitSchema,
  updateUsageLimitSchema,
} from './schema.ts';
import { PolicyService, rateView, usageView } from './service.ts';

/** Names the resource in audit entries and in the 403 of a disabled feature. */
const RATE_RESOURCE = 'rate_limits_policies';
const USAGE_RESOURCE = 'usage_limits_policies';

/** Usage limits policies are policies too: they also need POLICY_ENABLED (the route itself checks USAGE_LIMITS_ENABLED). */
function requirePolicies(ctx: AdminContext): void {
  if (!ctx.deps.config.features.policy) throw featureDisabled('policy', 'Policies');
}

const rateId = (ctx: AdminContext) => parseWith(z.object({ rateLimitsPolicyId: policyIdSchema }), { rateLimitsPolicyId: ctx.params.id }).rateLimitsPolicyId;
const usageId = (ctx: AdminContext) =>
  parseWith(z.object({ policyUsageLimitsId: policyIdSchema }), { policyUsageLimitsId: ctx.params.id }).policyUsageLimitsId;

const query = (ctx: AdminContext, name: string) => ctx.query.get(name) ?? undefined;

const statusQuery = (ctx: AdminContext) => parseWith(listQuerySchema.pick({ status: true }), { status: query(ctx, 'status') }).status;

const rateFilters = z.object({
  type: z.enum(['requests', 'tokens'], { error: 'must be one of requests, tokens' }).optional(),
  unit: z.enum(['rpm', 'rph', 'rpd', 'rpw'], { error: 'must be one of rpm, rph, rpd, rpw' }).optional(),
});
const usageFilters = z.object({ type: z.enum(['cost', 'tokens'], { error: 'must be one of cost, tokens' }).optional() });
const entityFilters = z.object({
  status: z.enum(['active', 'exhausted'], { error: 'must be one of active, exhausted' }).optional(),
  search: z.string().max(2048).optional(),
});
const includeUsage = z.enum(['true', 'false'], { error: 'must be true or false' }).optional();

export const policyRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/policies/rate-limits',
    feature: 'policy',
    audit: { transactional: true, resourceType: RATE_RESOURCE },
    scope: 'policies.create',
    ...withBody(createRateLimitSchema, async (ctx, body) => {
      requirePolicies(ctx);
      return new PolicyService(ctx.deps).createRate(ctx.principal, body);
    }),
  },
  {
    method: 'GET',
    path: '/v1/policies/rate-limits',
    feature: 'policy',
    audit: { resourceType: RATE_RESOURCE },
    scope: 'policies.list',
    handler: async (ctx) => {
      requirePolicies(ctx);
      const paging = parsePaging(ctx.query);
      const base = parseWith(listQuerySchema, { workspace_id: query(ctx, 'workspace_id'), status: query(ctx, 'status') });
      const filters = parseWith(rateFilters, { type: query(ctx, 'type'), unit: query(ctx, 'unit') });
      return page((await new PolicyService(ctx.deps).listRate(ctx.principal, { ...base, ...filters })).map(rateView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/policies/rate-limits/:id',
    feature: 'policy',
    audit: { resourceType: RATE_RESOURCE },
    scope: 'policies.read',
    handler: async (ctx) => {
      requirePolicies(ctx);
      return rateView(await new PolicyService(ctx.deps).getRate(ctx.principal, rateId(ctx), statusQuery(ctx)));
    },
  },
  {
    method: 'PUT',
    path: '/v1/policies/rate-limits/:id',
    feature: 'policy',
    audit: { transactional: true, resourceType: RATE_RESOURCE },
    scope: 'policies.update',
    ...withBody(updateRateLimitSchema, async (ctx, body) => {
      requirePolicies(ctx);
      const id = rateId(ctx);
      await new PolicyService(ctx.deps).updateRate(ctx.principal, id, body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/policies/rate-limits/:id',
    feature: 'policy',
    audit: { transactional: true, resourceType: RATE_RESOURCE },
    scope: 'policies.delete',
    handler: async (ctx) => {
      requirePolicies(ctx);
      await new PolicyService(ctx.deps).deleteRate(ctx.principal, rateId(ctx));
      return {};
    },
  },
  {
    method: 'POST',
    path: '/v1/policies/usage-limits',
    feature: 'usageLimits',
    audit: { transactional: true, resourceType: USAGE_RESOURCE },
    scope: 'policies.create',
    ...withBody(createUsageLimitSchema, async (ctx, body) => {
      requirePolicies(ctx);
      return new PolicyService(ctx.deps).createUsage(ctx.principal, body);
    }),
  },
  {
    method: 'GET',
    path: '/v1/policies/usage-limits',
    feature: 'usageLimits',
    audit: { resourceType: USAGE_RESOURCE },
    scope: 'policies.list',
    handler: async (ctx) => {
      requirePolicies(ctx);
      const paging = parsePaging(ctx.query);
      const base = parseWith(listQuerySchema, { workspace_id: query(ctx, 'workspace_id'), status: query(ctx, 'status') });
      const filters = parseWith(usageFilters, { type: query(ctx, 'type') });
      return page((await new PolicyService(ctx.deps).listUsage(ctx.principal, { ...base, ...filters })).map(usageView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/policies/usage-limits/:id',
    feature: 'usageLimits',
    audit: { resourceType: USAGE_RESOURCE },
    scope: 'policies.read',
    handler: async (ctx) => {
      requirePolicies(ctx);
      const id = usageId(ctx);
      const withUsage = parseWith(z.object({ include_usage: includeUsage }), { include_usage: query(ctx, 'include_usage') }).include_usage === 'true';
      const service = new PolicyService(ctx.deps);
      const policy = await service.getUsage(ctx.principal, id, statusQuery(ctx));
      return withUsage ? { ...usageView(policy), value_key_usage_map: await service.usageMap(policy) } : usageView(policy);
    },
  },
  {
    method: 'PUT',
    path: '/v1/policies/usage-limits/:id',
    feature: 'usageLimits',
    audit: { transactional: true, resourceType: USAGE_RESOURCE },
    scope: 'policies.update',
    ...withBody(updateUsageLimitSchema, async (ctx, body) => {
      requirePolicies(ctx);
      const id = usageId(ctx);
      await new PolicyService(ctx.deps).updateUsage(ctx.principal, id, body);
      return {};
    }),
  },
  {
    method: 'DELETE',
    path: '/v1/policies/usage-limits/:id',
    feature: 'usageLimits',
    audit: { transactional: true, resourceType: USAGE_RESOURCE },
    scope: 'policies.delete',
    handler: async (ctx) => {
      requirePolicies(ctx);
      await new PolicyService(ctx.deps).deleteUsage(ctx.principal, usageId(ctx));
      return {};
    },
  },
  {
    method: 'GET',
    path: '/v1/policies/usage-limits/:id/entities',
    feature: 'usageLimits',
    audit: { resourceType: USAGE_RESOURCE },
    scope: 'policies.read',
    handler: async (ctx) => {
      requirePolicies(ctx);
      const id = usageId(ctx);
      const paging = parsePaging(ctx.query);
      const filters = parseWith(entityFilters, { status: query(ctx, 'status'), search: query(ctx, 'search') });
      return page(await new PolicyService(ctx.deps).entities(ctx.principal, id, filters), paging);
    },
  },
  {
    method: 'PUT',
    path: '/v1/policies/usage-limits/:id/entities/:entityId/reset',
    feature: 'usageLimits',
    audit: { resourceType: USAGE_RESOURCE },
    scope: 'policies.update',
    handler: async (ctx) => {
      requirePolicies(ctx);
      await new PolicyService(ctx.deps).resetEntity(ctx.principal, usageId(ctx), ctx.params.entityId ?? '');
      return {};
    },
  },
];
