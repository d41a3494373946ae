/** `/v1/secret-references`: create, list (manager_type, tags, search; paged), get, update, delete. */
import * as z from 'zod';
import { MANAGER_TYPES } from '../../ports/secret-managers.ts';
import { withBody } from '../body.ts';
import { page, parsePaging } from '../pagination.ts';
import { parseWith, type AdminRoute } from '../route.ts';
import { parseTagFilter } from '../integrations/schema.ts';
import { createSecretReferenceSchema, updateSecretReferenceSchema } from './schema.ts';
import { detailView, SecretReferenceService, summaryView } from './service.ts';

const id = (params: Record<string, string>) => params.secretReferenceId ?? '';
const transactional = { transactional: true } as const;

const listQuery = z.object({
  manager_type: z.enum(MANAGER_TYPES, { error: `must be one of ${MANAGER_TYPES.join(', ')}` }).optional(),
  search: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
});

/** `tags` as the reference documents it (a JSON object) or as integrations take it (`k=v,k2=v2`). */
function tagFilter(values: readonly string[]): Record<string, string> {
  const json = values.find((v) => v.trim().startsWith('{'));
  if (json === undefined) return parseTagFilter(values);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    parsed = undefined;
  }
  return parseWith(z.object({ tags: z.record(z.string(), z.string(), { error: 'must be a JSON object of string values' }) }), { tags: parsed }).tags;
}

export const secretReferenceRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/secret-references',
    scope: 'secret_references.create',
    audit: transactional,
    example: {
      name: 'OpenAI key in Vault',
      manager_type: 'hashicorp_vault',
      auth_config: { vault_addr: 'https://vault.example.com', vault_auth_type: 'approle', vault_role_id: '…', vault_secret_id: '…' },
      secret_path: 'secret/gantry/openai',
      secret_key: 'api_key',
    },
    ...withBody(createSecretReferenceSchema, async (ctx, body) => new SecretReferenceService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/secret-references',
    scope: 'secret_references.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const q = parseWith(listQuery, { manager_type: ctx.query.get('manager_type') ?? undefined, search: ctx.query.get('search') ?? undefined });
      const all = await new SecretReferenceService(ctx.deps).list(ctx.principal, { ...q, tags: tagFilter(ctx.query.getAll('tags')) });
      return page(all.map(summaryView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/secret-references/:secretReferenceId',
    scope: 'secret_references.read',
    handler: async (ctx) => detailView(await new SecretReferenceService(ctx.deps).get(ctx.principal, id(ctx.params))),
  },
  {
    method: 'PUT',
    path: '/v1/secret-references/:secretReferenceId',
    scope: 'secret_references.update',
    audit: transactional,
    example: { secret_path: 'secret/gantry/openai-v2', allowed_workspaces: ['default'] },
    ...withBody(updateSecretReferenceSchema, async (ctx, body) => new SecretReferenceService(ctx.deps).update(ctx.principal, id(ctx.params), body)),
  },
  {
    method: 'DELETE',
    path: '/v1/secret-references/:secretReferenceId',
    scope: 'secret_references.delete',
    audit: transactional,
    handler: async (ctx) => {
      await new SecretReferenceService(ctx.deps).delete(ctx.principal, id(ctx.params));
      return {};
    },
  },
];
