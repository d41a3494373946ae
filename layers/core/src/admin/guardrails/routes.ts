/** `/v1/guardrails`: create, list, get (id or slug), update (a new version), delete. GUARDRAILS_ENABLED=OFF: 403. */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createGuardrailSchema, updateGuardrailSchema } from './schema.ts';
import { detailView, GuardrailService, summaryView } from './service.ts';

const id = (params: Record<string, string>) => params.guardrailId ?? '';
const transactional = { transactional: true } as const;

export const guardrailRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/guardrails',
    scope: 'guardrails.create',
    feature: 'guardrails',
    audit: transactional,
    example: {
      name: 'No secrets out',
      workspace_id: 'default',
      checks: [{ id: 'default.regexMatch', parameters: { rule: 'glpat-[A-Za-z0-9_-]{20}', not: true } }],
      actions: { deny: true, async: false, on_success: null, on_fail: { feedback: { value: -5, weight: 1, metadata: '' } } },
    },
    ...withBody(createGuardrailSchema, async (ctx, body) => new GuardrailService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/guardrails',
    scope: 'guardrails.list',
    feature: 'guardrails',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const filter = { workspace_id: ctx.query.get('workspace_id') ?? undefined, organisation_id: ctx.query.get('organisation_id') ?? undefined };
      return page((await new GuardrailService(ctx.deps).list(ctx.principal, filter)).map(summaryView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/guardrails/:guardrailId',
    scope: 'guardrails.read',
    feature: 'guardrails',
    handler: async (ctx) => detailView(await new GuardrailService(ctx.deps).get(ctx.principal, id(ctx.params))),
  },
  {
    method: 'PUT',
    path: '/v1/guardrails/:guardrailId',
    scope: 'guardrails.update',
    feature: 'guardrails',
    audit: transactional,
    example: { name: 'No secrets out (v2)', actions: { onFail: 'block', message: 'A secret was found' } },
    ...withBody(updateGuardrailSchema, async (ctx, body) => new GuardrailService(ctx.deps).update(ctx.principal, id(ctx.params), body)),
  },
  {
    method: 'DELETE',
    path: '/v1/guardrails/:guardrailId',
    scope: 'guardrails.delete',
    feature: 'guardrails',
    audit: transactional,
    handler: async (ctx) => {
      await new GuardrailService(ctx.deps).delete(ctx.principal, id(ctx.params));
      return {};
    },
  },
];
