/** `/v1/organisation`: settings of the organisation (owners and admins). */
import type { AdminRoute } from '../route.ts';
import { withBody } from '../body.ts';
import { updateOrganisationSchema } from './schema.ts';
import { OrganisationService } from './service.ts';

export const organisationRoutes: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/v1/organisation',
    scope: 'organisation.read',
    handler: async (ctx) => new OrganisationService(ctx.deps).get(ctx.principal),
  },
  {
    method: 'PUT',
    path: '/v1/organisation',
    scope: 'organisation.update',
    audit: { transactional: true },
    ...withBody(updateOrganisationSchema, async (ctx, body) => {
      await new OrganisationService(ctx.deps).update(ctx.principal, body);
      return {};
    }),
  },
];
