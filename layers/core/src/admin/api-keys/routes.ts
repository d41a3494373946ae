/** `/v1/api-keys`: create (three types), list, get, update, rotate, delete. */
import type { ApiKeyType } from '../../store/entities.ts';
import { cursorPage, decodeCursor, encodeCursor, page, parsePaging, wantsCursor } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { createApiKeySchema, rotateApiKeySchema, updateApiKeySchema } from './schema.ts';
import { ApiKeyService, toView } from './service.ts';

/**
 * A body each create accepts (OpenAPI examples, the console's pre-filled forms): an organisation
 * key has no workspace; a user key names a user of the workspace (its id, made up here).
 */
const KEY_EXAMPLES: Readonly<Record<ApiKeyType, Record<string, unknown>>> = {
  'organisation-service': { name: 'Reporting', scopes: ['workspaces.list', 'analytics.view', 'logs.list'], expires_at: '2030-01-01T00:00:00Z' },
  'workspace-service': { name: 'my app', workspace_id: 'default', scopes: ['completions.write'], expires_at: '2030-01-01T00:00:00Z' },
  'workspace-user': {
    name: "Ada's key",
    workspace_id: 'default',
    user_id: '3f1c2b9e-7d4a-4e8b-9a6f-0c5d2e1b8a47',
    scopes: ['completions.write'],
    expires_at: '2030-01-01T00:00:00Z',
  },
};

const createRoute = (path: string, type: ApiKeyType): AdminRoute => ({
  method: 'POST',
  path,
  scope: 'api_keys.create',
  // docs/design/spec.md#roles-and-keys: organisation keys are for owners and admins; workspace keys for managers too.
  roles: type === 'organisation-service' ? ['owner', 'admin'] : ['owner', 'admin', 'manager'],
  audit: { transactional: true },
  example: KEY_EXAMPLES[type],
  ...withBody(createApiKeySchema, async (ctx, body) => new ApiKeyService(ctx.deps).create(ctx.principal, type, body)),
});

export const apiKeyRoutes: readonly AdminRoute[] = [
  createRoute('/v1/api-keys/organisation/service', 'organisation-service'),
  createRoute('/v1/api-keys/workspace/service', 'workspace-service'),
  createRoute('/v1/api-keys/workspace/user', 'workspace-user'),
  {
    method: 'GET',
    path: '/v1/api-keys',
    scope: 'api_keys.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const workspace = ctx.query.get('workspace_id') ?? undefined;
      const service = new ApiKeyService(ctx.deps);
      if (wantsCursor(ctx.query)) {
        const after = decodeCursor(ctx.query.get('cursor'), ['id', 'created_at']);
        const { items, last } = await service.page(ctx.principal, workspace, paging.page_size, after);
        return cursorPage(items.map(toView), last ? encodeCursor({ id: last.id, created_at: last.created_at }) : undefined);
      }
      return page((await service.list(ctx.principal, workspace)).map(toView), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/api-keys/:id',
    scope: 'api_keys.read',
    handler: async (ctx) => toView(await new ApiKeyService(ctx.deps).get(ctx.principal, ctx.params.id ?? '')),
  },
  {
    method: 'PUT',
    path: '/v1/api-keys/:id',
    scope: 'api_keys.update',
    audit: { transactional: true },
    ...withBody(updateApiKeySchema, async (ctx, body) => {
      await new ApiKeyService(ctx.deps).update(ctx.principal, ctx.params.id ?? '', body);
      return {};
    }),
  },
  {
    method: 'POST',
    path: '/v1/api-keys/:id/rotate',
    scope: 'api_keys.rotate',
    audit: { transactional: true },
    ...withBody(rotateApiKeySchema, async (ctx, body) => new ApiKeyService(ctx.deps).rotate(ctx.principal, ctx.params.id ?? '', body)),
  },
  {
    method: 'DELETE',
    path: '/v1/api-keys/:id',
    scope: 'api_keys.delete',
    audit: { transactional: true },
    handler: async (ctx) => {
      await new ApiKeyService(ctx.deps).delete(ctx.principal, ctx.params.id ?? '');
      return {};
    },
  },
];
