/**
 * SCIM provisioning (`SCIM_ENABLED`, docs/design/spec.md#admin-resources) is not implemented yet. Its paths belong to the admin
 * surface so that they answer clearly: 403 naming the flag when it is off, 404 otherwise.
 */
import type { RouteModule } from '../http/route-module.ts';
import { RouteNotFoundError } from '../http/errors.ts';
import { toResponse } from '../http/error-response.ts';
import { featureDisabled } from './route.ts';

export const scimModule: RouteModule = (app, deps) => {
  app.all('/v1/scim/*', (c) => {
    const err = deps.config.features.scim
      ? new RouteNotFoundError(c.req.method, `${c.req.path} (SCIM provisioning is not available yet)`)
      : featureDisabled('scim', 'SCIM provisioning');
    return toResponse(err, 'admin');
  });
};
