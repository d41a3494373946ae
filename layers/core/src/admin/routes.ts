/** Every admin route, in one table (the authorization matrix test walks it). */
import type { RouteModule } from '../http/route-module.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { configRoutes } from './configs/routes.ts';
import { guardrailRoutes } from './guardrails/routes.ts';
import { collectionRoutes } from './collections/routes.ts';
import { labelRoutes } from './labels/routes.ts';
import { partialRoutes } from './prompt-partials/routes.ts';
import { promptRoutes } from './prompts/routes.ts';
import { integrationRoutes } from './integrations/routes.ts';
import { mcpIntegrationRoutes } from './mcp-integrations/routes.ts';
import { mcpServerRoutes } from './mcp-servers/routes.ts';
import { secretReferenceRoutes } from './secret-references/routes.ts';
import { providerRoutes } from './providers/routes.ts';
import { virtualKeyRoutes } from './virtual-keys/routes.ts';
import { pricingRoutes } from './pricing/routes.ts';
import { promptRenderRoutes } from './prompt-render/routes.ts';
import { policyRoutes } from './policies/routes.ts';
import { workspaceRoutes } from './workspaces/routes.ts';
import { memberRoutes } from './members/routes.ts';
import { inviteAcceptRoutes, inviteRoutes } from './invites/routes.ts';
import { userRoutes } from './users/routes.ts';
import { organisationRoutes } from './organisation/routes.ts';
import { auditLogRoutes } from './audit-logs/routes.ts';
import { feedbackRoutes } from './feedback/routes.ts';
import { logExportRoutes, mountExportFile } from './log-exports/routes.ts';
import { logRoutes } from './logs/routes.ts';
import { analyticsRoutes } from './analytics/routes.ts';
import { scimModule } from './scim.ts';
import { consoleSessionRoutes } from './console/routes.ts';
import { mountApiDocs } from '../openapi/routes.ts';
import { mountAdminRoutes, mountPublicAdminRoutes, type AdminRoute, type PublicAdminRoute } from './route.ts';

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  ...apiKeyRoutes,
  ...configRoutes,
  ...guardrailRoutes,
  ...promptResourceRoutes(),
  ...pricingRoutes,
  ...integrationRoutes,
  ...mcpIntegrationRoutes,
  ...mcpServerRoutes,
  ...secretReferenceRoutes,
  ...providerRoutes,
  ...virtualKeyRoutes,
  ...policyRoutes,
  ...identityRoutes(),
  ...observabilityRoutes(),
];

/** Prompts and what they use: partials before prompts, so `/v1/prompts/partials` is not read as a prompt id. */
function promptResourceRoutes(): AdminRoute[] {
  return [...collectionRoutes, ...labelRoutes, ...partialRoutes, ...promptRoutes, ...promptRenderRoutes];
}

/** Logs, exports and analytics: exports before logs, so `/v1/logs/exports` is not read as a log id. */
function observabilityRoutes(): AdminRoute[] {
  return [...logExportRoutes, ...logRoutes, ...analyticsRoutes];
}

/** Identity and access: invites before users, so `/v1/admin/users/invites` is not read as a user id. */
function identityRoutes(): AdminRoute[] {
  return [...organisationRoutes, ...workspaceRoutes, ...memberRoutes, ...inviteRoutes, ...userRoutes, ...auditLogRoutes, ...feedbackRoutes];
}

/** Admin routes that carry their own credential instead of an API key or JWT (the invite token). */
export const PUBLIC_ADMIN_ROUTES: readonly PublicAdminRoute[] = [...inviteAcceptRoutes];

export const adminModule: RouteModule = (app, deps) => {
  // The API's own description and reference page, without authentication (openapi/routes.ts).
  mountApiDocs(app);
  mountPublicAdminRoutes(app, deps, PUBLIC_ADMIN_ROUTES);
  // Console sign-in, its session and sign-out: the cookie is their credential (admin/console/).
  mountPublicAdminRoutes(app, deps, consoleSessionRoutes);
  mountAdminRoutes(app, deps, ADMIN_ROUTES);
  // SCIM_ENABLED: no SCIM routes yet; their paths answer 403 (flag off) or 404.
  scimModule(app, deps);
  // Local download links of log exports (in AWS they are S3 pre-signed URLs).
  mountExportFile(app, deps);
};
