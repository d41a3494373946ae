/**
 * `/v1/prompts`: create, list, get (id or slug; the published version), update (a new version when
 * version fields are sent), versions, one version, a label on a version, makeDefault, delete.
 * Partials' routes come first in ADMIN_ROUTES, so `/v1/prompts/partials` is not read as a prompt id.
 */
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { page, parsePaging } from '../pagination.ts';
import { createPromptSchema, labelVersionSchema, makeDefaultSchema, updatePromptSchema } from './schema.ts';
import { PromptService } from './service.ts';

const id = (params: Record<string, string>) => params.promptId ?? '';
const transactional = { transactional: true } as const;

export const promptRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/prompts',
    scope: 'prompts.create',
    audit: transactional,
    example: {
      name: 'Support reply',
      collection_id: 'support-bot',
      string: '[{"role": "system", "content": "You answer for {{company}}."}, {"role": "user", "content": "{{question}}"}]',
      parameters: { temperature: 0.2, max_tokens: 400 },
      provider: '@openai-prod',
      model: 'gpt-4o-mini',
      version_description: 'First draft',
      template_metadata: { lenient: false },
    },
    ...withBody(createPromptSchema, async (ctx, body) => new PromptService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/prompts',
    scope: 'prompts.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const service = new PromptService(ctx.deps);
      const listed = page(await service.list(ctx.principal, ctx.query), paging);
      return { ...listed, data: await service.summaries(listed.data) };
    },
  },
  {
    method: 'GET',
    path: '/v1/prompts/:promptId',
    scope: 'prompts.read',
    handler: async (ctx) => new PromptService(ctx.deps).detail(ctx.principal, id(ctx.params)),
  },
  {
    method: 'PUT',
    path: '/v1/prompts/:promptId',
    scope: 'prompts.update',
    audit: transactional,
    example: { patch: true, string: '{{#user}}{{question}} (answer briefly){{/user}}', version_description: 'Shorter answers' },
    ...withBody(updatePromptSchema, async (ctx, body) => new PromptService(ctx.deps).update(ctx.principal, id(ctx.params), body)),
  },
  {
    method: 'DELETE',
    path: '/v1/prompts/:promptId',
    scope: 'prompts.delete',
    audit: transactional,
    handler: async (ctx) => new PromptService(ctx.deps).admin.delete(ctx.principal, id(ctx.params)),
  },
  {
    method: 'GET',
    path: '/v1/prompts/:promptId/versions',
    scope: 'prompts.read',
    handler: async (ctx) => page(await new PromptService(ctx.deps).versions(ctx.principal, id(ctx.params)), parsePaging(ctx.query)),
  },
  {
    method: 'GET',
    path: '/v1/prompts/:promptId/versions/:versionId',
    scope: 'prompts.read',
    handler: async (ctx) => new PromptService(ctx.deps).detail(ctx.principal, id(ctx.params), ctx.params.versionId ?? ''),
  },
  {
    method: 'PUT',
    path: '/v1/prompts/:promptId/versions/:versionId',
    scope: 'prompts.update',
    audit: transactional,
    example: { label_id: 'production' },
    ...withBody(labelVersionSchema, async (ctx, body) =>
      new PromptService(ctx.deps).label(ctx.principal, id(ctx.params), ctx.params.versionId ?? '', body.label_id),
    ),
  },
  {
    method: 'PUT',
    path: '/v1/prompts/:promptId/makeDefault',
    scope: 'prompts.update',
    audit: transactional,
    example: { version: 2 },
    ...withBody(makeDefaultSchema, async (ctx, body) => new PromptService(ctx.deps).admin.makeDefault(ctx.principal, id(ctx.params), body.version)),
  },
];
