/** Answers of the MCP resources: integrations, servers, their capabilities, access and users' connections. */
import * as z from 'zod';
import type * as Access from '../../admin/mcp-integrations/access.ts';
import type { CapabilityView } from '../../admin/mcp-integrations/capabilities.ts';
import type * as McpIntegrationRoutes from '../../admin/mcp-integrations/routes.ts';
import type { McpIntegrationService, McpIntegrationView } from '../../admin/mcp-integrations/service.ts';
import type * as McpServers from '../../admin/mcp-servers/service.ts';
import type { McpServerService } from '../../admin/mcp-servers/service.ts';
import { answerOf, isoTime, nullableString } from './common.ts';

type Returns<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

const record = z.record(z.string(), z.unknown());

export const mcpIntegrationView = answerOf<McpIntegrationView>()(
  z.object({
    object: z.literal('mcp-integration'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: nullableString,
    organisation_id: z.string(),
    workspace_id: nullableString,
    type: z.enum(['organisation', 'workspace']),
    owner_id: nullableString,
    status: z.string(),
    url: z.string(),
    auth_type: z.string(),
    transport: z.string(),
    configurations: record.describe('Plain fields; secret ones only as masked_custom_headers and masked_client_secret'),
    global_workspace_access: z.object({ enabled: z.boolean() }).nullable(),
    created_at: isoTime,
    last_updated_at: isoTime,
  }),
);

export const mcpCreated = answerOf<Returns<McpIntegrationService['create']>>()(z.object({ id: z.string(), slug: z.string() }));

export const mcpWorkspaceAccess = answerOf<Returns<typeof Access.listWorkspaceAccess>>()(
  z.object({
    object: z.literal('list'),
    total: z.number().int(),
    data: z.array(z.object({ id: z.string(), slug: z.string(), enabled: z.boolean(), status: z.string() })),
    global_workspace_access: z.object({ enabled: z.boolean() }).nullable(),
  }),
);

const capabilityShape = {
  name: z.string(),
  type: z.string().describe('tool, prompt or resource'),
  title: nullableString,
  description: nullableString,
  enabled: z.boolean(),
  available: z.boolean().describe('False when the last sync no longer found it on the server'),
  schema_hash: nullableString,
  input_schema: record.nullable(),
  created_at: isoTime,
  last_updated_at: isoTime,
};

export const capabilityView = answerOf<CapabilityView>()(z.object(capabilityShape));

/** A server's capability: the integration's, with whether the integration allows it. */
export const serverCapabilityView = answerOf<CapabilityView & { integration_enabled: boolean }>()(
  z.object({ ...capabilityShape, integration_enabled: z.boolean() }),
);

/** `capabilityList` (admin/mcp-integrations/capabilities.ts): a page, the counts per type and `has_more`. */
export const capabilityListOf = <I extends z.ZodType>(item: I) =>
  z.object({ object: z.literal('list'), total: z.number().int(), data: z.array(item), counts: z.record(z.string(), z.number().int()), has_more: z.boolean() });

export const mcpMetadata = answerOf<Returns<typeof McpIntegrationRoutes.integrationMetadata>>()(
  z.object({
    server_name: nullableString,
    server_version: nullableString,
    protocol_version: nullableString,
    capability_flags: record,
    sync_status: z.string(),
    last_synced_at: nullableString,
    sync_error: nullableString,
  }),
);

export const mcpServerView = answerOf<ReturnType<typeof McpServers.toServerView>>()(
  z.object({
    object: z.literal('mcp-server'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: nullableString,
    status: z.literal('active'),
    organisation_id: z.string(),
    workspace_id: z.string(),
    owner_id: nullableString,
    mcp_integration_id: z.string(),
    mcp_integration_slug: nullableString,
    mcp_integration_url: nullableString,
    auth_type: z.enum(['none', 'headers', 'oauth']).nullable(),
    default_user_access: z.enum(['allow', 'deny']),
    created_at: isoTime,
    last_updated_at: isoTime,
  }),
);

export const mcpServerCreated = answerOf<Returns<McpServerService['create']>>()(z.object({ id: z.string(), slug: z.string() }));

type UserAccess = Returns<McpServerService['userAccess']>;

/** The page of users' access to a server (admin/mcp-servers/routes.ts). */
export const mcpUserAccess = answerOf<{
  object: 'list';
  total: number;
  data: UserAccess['data'];
  default_user_access: UserAccess['default_user_access'];
  has_more: boolean;
}>()(
  z.object({
    object: z.literal('list'),
    total: z.number().int(),
    data: z.array(
      z.object({
        user_id: z.string(),
        first_name: nullableString,
        last_name: nullableString,
        enabled: z.boolean(),
        has_override: z.boolean(),
        connection_status: z.enum(['connected', 'not_connected']),
      }),
    ),
    default_user_access: z.enum(['allow', 'deny']),
    has_more: z.boolean(),
  }),
);

/** `POST /v1/mcp-servers/{id}/test`: whether the server answered, and how. */
export const mcpServerTest = z.object({
  success: z.boolean(),
  status_code: z.number().int().nullable(),
  response_time_ms: z.number(),
  url: nullableString,
  server_name: nullableString,
  server_version: nullableString.optional(),
  protocol_version: nullableString.optional(),
  error: nullableString,
});

/** A user's OAuth connection to a server (tokens never shown). */
export const mcpConnection = z.object({
  user_id: z.string(),
  workspace_id: z.string(),
  connected: z.literal(true),
  expires_at: nullableString,
  created_at: isoTime,
  last_updated_at: isoTime,
});
