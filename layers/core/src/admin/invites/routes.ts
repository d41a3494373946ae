/**
 * `/v1/admin/users/invites`: create, list, get, resend, delete (owners and admins), and the public
 * accept route, which the invitee calls with the token of the invite link.
 */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute, PublicAdminRoute } from '../route.ts';
import { parseBody, withBody } from '../body.ts';
import { acceptInviteSchema, createInviteSchema } from './schema.ts';
import { InviteService } from './service.ts';

const id = (p: Record<string, string>) => p.inviteId ?? '';

export const inviteRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/admin/users/invites',
    scope: 'users.create',
    audit: { transactional: true, resourceType: 'invites', action: 'create' },
    ...withBody(createInviteSchema, async (ctx, body) => new InviteService(ctx.deps).create(ctx.principal, body)),
  },
  {
    method: 'GET',
    path: '/v1/admin/users/invites',
    scope: 'users.list',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      return page(await new InviteService(ctx.deps).list(ctx.principal, ctx.query), paging);
    },
  },
  {
    method: 'GET',
    path: '/v1/admin/users/invites/:inviteId',
    scope: 'users.read',
    handler: async (ctx) => new InviteService(ctx.deps).get(ctx.principal, id(ctx.params)),
  },
  {
    method: 'POST',
    path: '/v1/admin/users/invites/:inviteId/resend',
    scope: 'users.create',
    audit: { transactional: true, resourceType: 'invites', action: 'resend' },
    handler: async (ctx) => new InviteService(ctx.deps).resend(ctx.principal, id(ctx.params)),
  },
  {
    method: 'DELETE',
    path: '/v1/admin/users/invites/:inviteId',
    scope: 'users.delete',
    audit: { transactional: true, resourceType: 'invites', action: 'delete' },
    handler: async (ctx) => {
      await new InviteService(ctx.deps).delete(ctx.principal, id(ctx.params));
      return {};
    },
  },
];

/** The only admin routes without an API key or JWT: the invite token is the credential. */
export const inviteAcceptRoutes: readonly PublicAdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/admin/users/invites/accept',
    audit: { resourceType: 'invites', action: 'accept' },
    handler: async (ctx) => {
      const raw = (await ctx.body()) as Record<string, unknown>;
      const token = ctx.query.get('token');
      const body = parseBody(acceptInviteSchema, token && raw && typeof raw === 'object' && raw.token === undefined ? { ...raw, token } : raw);
      return new InviteService(ctx.deps).accept(body, ctx.actor);
    },
  },
];
