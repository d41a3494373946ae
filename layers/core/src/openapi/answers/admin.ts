/**
 * The success answer of every admin route, by `METHOD path` as the route table declares it. Admin
 * routes answer 200 with JSON; a test keeps this table equal to the route tables, so a new route
 * cannot go undocumented.
 */
import * as z from 'zod';
import { GRAPHS } from '../../observability/analytics-views.ts';
import type { Answer } from './common.ts';
import { cursorListOf, emptyAnswer, listOf, successAnswer } from './common.ts';
import * as access from './access.ts';
import * as mcp from './mcp.ts';
import * as obs from './observability.ts';
import * as prompts from './prompts.ts';
import * as routing from './routing.ts';

type Table = Record<string, z.ZodType | Answer>;

const EMPTY: Answer = { schema: emptyAnswer, description: 'Done: an empty object' };

/** The five routes of a resource with the usual shape: create, list, read, update, delete. */
function crud(base: string, param: string, views: { created: z.ZodType; item: z.ZodType; listed?: z.ZodType; updated?: z.ZodType | Answer }): Table {
  return {
    [`POST ${base}`]: views.created,
    [`GET ${base}`]: listOf(views.listed ?? views.item),
    [`GET ${base}/:${param}`]: views.item,
    [`PUT ${base}/:${param}`]: views.updated ?? EMPTY,
    [`DELETE ${base}/:${param}`]: EMPTY,
  };
}

function workspaces(base: string): Table {
  return {
    ...crud(base, 'workspaceId', { created: access.workspaceView, item: access.workspaceView }),
    [`POST ${base}/:workspaceId/archive`]: EMPTY,
    [`POST ${base}/:workspaceId/users`]: EMPTY,
    [`GET ${base}/:workspaceId/users`]: listOf(access.memberView),
    [`GET ${base}/:workspaceId/users/:userId`]: access.memberView,
    [`PUT ${base}/:workspaceId/users/:userId`]: EMPTY,
    [`DELETE ${base}/:workspaceId/users/:userId`]: EMPTY,
  };
}

const apiKeys: Table = {
  'POST /v1/api-keys/organisation/service': access.apiKeyCreated,
  'POST /v1/api-keys/workspace/service': access.apiKeyCreated,
  'POST /v1/api-keys/workspace/user': access.apiKeyCreated,
  'GET /v1/api-keys': {
    schema: z.union([listOf(access.apiKeyView), cursorListOf(access.apiKeyView)]),
    description: 'A page; with `cursor` (even empty) a cursor page',
  },
  'GET /v1/api-keys/:id': access.apiKeyView,
  'PUT /v1/api-keys/:id': EMPTY,
  'POST /v1/api-keys/:id/rotate': access.apiKeyRotated,
  'DELETE /v1/api-keys/:id': EMPTY,
};

const routingResources: Table = {
  ...crud('/v1/configs', 'slug', { created: routing.configWritten, item: routing.configView, updated: routing.configWritten }),
  'GET /v1/configs/:slug/versions': listOf(routing.configVersion),
  ...crud('/v1/guardrails', 'guardrailId', { created: routing.guardrailWritten, item: routing.guardrailView, updated: routing.guardrailWritten }),
  ...crud('/v1/integrations', 'slug', { created: routing.integrationCreated, item: routing.integrationView }),
  ...crud('/v1/providers', 'slug', { created: routing.providerWritten, item: routing.providerView, updated: routing.providerWritten }),
  ...crud('/v1/virtual-keys', 'slug', { created: routing.virtualKeyCreated, item: routing.virtualKeyView }),
  ...crud('/v1/secret-references', 'secretReferenceId', {
    created: routing.secretReferenceCreated,
    item: routing.secretReferenceView,
    listed: routing.secretReferenceSummary,
    updated: routing.secretReferenceView,
  }),
  ...crud('/v1/policies/rate-limits', 'id', { created: routing.policyCreated, item: routing.rateLimitPolicyView }),
  ...crud('/v1/policies/usage-limits', 'id', { created: routing.policyCreated, item: routing.usageLimitPolicyView }),
  'GET /v1/policies/usage-limits/:id/entities': listOf(routing.policyEntity),
  'PUT /v1/policies/usage-limits/:id/entities/:entityId/reset': EMPTY,
  'GET /v1/model-configs/pricing': listOf(routing.customPriceView),
  'GET /v1/model-configs/pricing/:provider/:model{.+}': routing.effectivePriceView,
  'PUT /v1/model-configs/pricing/:provider/:model{.+}': routing.customPriceView,
  'DELETE /v1/model-configs/pricing/:provider/:model{.+}': EMPTY,
};

const promptResources: Table = {
  ...crud('/v1/collections', 'collectionId', { created: prompts.collectionCreated, item: prompts.collectionView, listed: prompts.collectionSummary }),
  ...crud('/v1/labels', 'labelId', { created: prompts.labelCreated, item: prompts.labelView }),
  ...crud('/v1/prompts/partials', 'promptPartialId', {
    created: prompts.partialCreated,
    item: prompts.partialView,
    listed: prompts.partialSummary,
    updated: prompts.partialUpdated,
  }),
  'GET /v1/prompts/partials/:promptPartialId/versions': listOf(prompts.partialVersion),
  'PUT /v1/prompts/partials/:promptPartialId/makeDefault': EMPTY,
  ...crud('/v1/prompts', 'promptId', {
    created: prompts.promptCreated,
    item: prompts.promptView,
    listed: prompts.promptSummary,
    updated: prompts.promptUpdated,
  }),
  'GET /v1/prompts/:promptId/versions': listOf(prompts.promptVersion),
  'GET /v1/prompts/:promptId/versions/:versionId': prompts.promptView,
  'PUT /v1/prompts/:promptId/versions/:versionId': EMPTY,
  'PUT /v1/prompts/:promptId/makeDefault': EMPTY,
  'POST /v1/prompts/:promptId/render': prompts.promptRendered,
};

const mcpResources: Table = {
  ...crud('/v1/mcp-integrations', 'id', { created: mcp.mcpCreated, item: mcp.mcpIntegrationView }),
  'GET /v1/mcp-integrations/:id/workspaces': mcp.mcpWorkspaceAccess,
  'PUT /v1/mcp-integrations/:id/workspaces': successAnswer,
  'GET /v1/mcp-integrations/:id/capabilities': mcp.capabilityListOf(mcp.capabilityView),
  'PUT /v1/mcp-integrations/:id/capabilities': successAnswer,
  'GET /v1/mcp-integrations/:id/metadata': mcp.mcpMetadata,
  ...crud('/v1/mcp-servers', 'id', { created: mcp.mcpServerCreated, item: mcp.mcpServerView }),
  'POST /v1/mcp-servers/:id/test': { schema: mcp.mcpServerTest, description: 'Whether the server answered (a failure is a 200 too, with `error`)' },
  'GET /v1/mcp-servers/:id/capabilities': mcp.capabilityListOf(mcp.serverCapabilityView),
  'PUT /v1/mcp-servers/:id/capabilities': successAnswer,
  'GET /v1/mcp-servers/:id/user-access': mcp.mcpUserAccess,
  'PUT /v1/mcp-servers/:id/user-access': successAnswer,
  'GET /v1/mcp-servers/:id/metadata': mcp.mcpMetadata,
  'GET /v2/mcp-servers/:id/connections': listOf(mcp.mcpConnection).extend({ has_more: z.boolean() }),
  'DELETE /v2/mcp-servers/:id/connections': successAnswer,
};

const identity: Table = {
  'GET /v1/organisation': access.organisationView,
  'PUT /v1/organisation': EMPTY,
  ...workspaces('/v1/workspaces'),
  ...workspaces('/v1/admin/workspaces'),
  'POST /v1/admin/users/invites': access.inviteCreated,
  'GET /v1/admin/users/invites': listOf(access.inviteView),
  'GET /v1/admin/users/invites/:inviteId': access.inviteView,
  'POST /v1/admin/users/invites/:inviteId/resend': access.inviteResent,
  'DELETE /v1/admin/users/invites/:inviteId': EMPTY,
  'POST /v1/admin/users/invites/accept': access.inviteAccepted,
  'GET /v1/admin/users': listOf(access.userView),
  'GET /v1/admin/users/:userId': access.userView,
  'PUT /v1/admin/users/:userId': EMPTY,
  'DELETE /v1/admin/users/:userId': EMPTY,
  'GET /v1/audit-logs': listOf(access.auditView),
};

const observability: Table = {
  'GET /v1/feedback': listOf(obs.feedbackView),
  'POST /v1/feedback': obs.feedbackAnswer,
  'PUT /v1/feedback/:id': obs.feedbackAnswer,
  'POST /v1/logs/exports': obs.exportWritten,
  'GET /v1/logs/exports': listOf(obs.exportView),
  'GET /v1/logs/exports/:exportId': obs.exportView,
  'PUT /v1/logs/exports/:exportId': obs.exportWritten,
  'POST /v1/logs/exports/:exportId/start': obs.exportMessage,
  'POST /v1/logs/exports/:exportId/cancel': obs.exportMessage,
  'GET /v1/logs/exports/:exportId/download': obs.exportDownload,
  'POST /v1/logs': obs.logsInserted,
  'GET /v1/logs': obs.logList,
  'GET /v1/logs/groups/:groupBy': listOf(obs.groupRow),
  'GET /v1/logs/:logId': obs.logView,
  'GET /v1/analytics/groups/:groupBy': listOf(obs.groupRow),
  'GET /v1/analytics/summary': obs.summaryBody,
  'GET /v1/analytics/summary/cache': obs.cacheSummaryBody,
  'GET /v1/analytics/graphs/feedback': obs.graphBody,
  ...Object.fromEntries(GRAPHS.map((g) => [`GET /v1/analytics/graphs/${g}`, obs.graphBody])),
};

const TABLE: Table = { ...apiKeys, ...routingResources, ...promptResources, ...mcpResources, ...identity, ...observability };

/** The documented success of an admin route (Hono path), or undefined when the table lacks it. */
export function adminAnswer(method: string, path: string): Answer | undefined {
  const found = TABLE[`${method} ${path}`];
  if (found === undefined) return undefined;
  return found instanceof z.ZodType ? { schema: found } : found;
}

/** Every `METHOD path` the table documents (a test compares them with the route tables). */
export const DOCUMENTED_ADMIN_ROUTES: readonly string[] = Object.keys(TABLE);
