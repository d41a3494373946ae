/** `/v1/prompts/partials`: create, list, get (id or slug), update (a new version with `string`), versions, makeDefault, delete. */
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { page, parsePaging } from '../pagination.ts';
import { makeDefaultSchema } from '../prompts/schema.ts';
import { createPartialSchema, updatePartialSchema } from './schema.ts';
import { PartialService } from './service.ts';

const id = (params: Record<string, string>) => params.promptPartialId ?? '';
const transactional = { transactional: true } as const;
const P = '/v1/prompts/partials';

export const partialRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: P,
    scope: 'prompt_partials.create',
    audit: transactional,
    example: { name: 'Tone', workspace_id: 'default', string: 'Answer kindly and briefly, in {{language}}.', version_description: 'First draft' },
    ...withBody(createPartialSchema, async (ctx, body) => new PartialService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: P,
    scope: 'prompt_partials.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await new PartialService(ctx.deps).list(ctx.principal, ctx.query), paging);
    },
  },
  {
    method: 'GET',
    path: `${P}/:promptPartialId`,
    scope: 'prompt_partials.read',
    handler: async (ctx) => new PartialService(ctx.deps).detail(ctx.principal, id(ctx.params)),
  },
  {
    method: 'PUT',
    path: `${P}/:promptPartialId`,
    scope: 'prompt_partials.update',
    audit: transactional,
    example: { string: 'Answer kindly, briefly and in {{language}}.', description: 'Kinder' },
    ...withBody(updatePartialSchema, async (ctx, body) => new PartialService(ctx.deps).update(ctx.principal, id(ctx.params), body)),
  },
  {
    method: 'DELETE',
    path: `${P}/:promptPartialId`,
    scope: 'prompt_partials.delete',
    audit: transactional,
    handler: async (ctx) => new PartialService(ctx.deps).admin.delete(ctx.principal, id(ctx.params)),
  },
  {
    method: 'GET',
    path: `${P}/:promptPartialId/versions`,
    scope: 'prompt_partials.read',
    handler: async (ctx) => page(await new PartialService(ctx.deps).versions(ctx.principal, id(ctx.params)), parsePaging(ctx.query)),
  },
  {
    method: 'PUT',
    path: `${P}/:promptPartialId/makeDefault`,
    scope: 'prompt_partials.update',
    audit: transactional,
    example: { version: 2 },
    ...withBody(makeDefaultSchema, async (ctx, body) => new PartialService(ctx.deps).admin.makeDefault(ctx.principal, id(ctx.params), body.version)),
  },
];
