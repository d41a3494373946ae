/**
 * Request bodies of `/v1/mcp-integrations` and `/v1/mcp-servers` (shared: capabilities). Unknown
 * fields are refused by `withBody` (admin/body.ts). The URL is checked against the SSRF rules and
 * the headers against the header rules in the service, where the trusted hosts are known.
 */
import * as z from 'zod';
import { nameSchema, slugSchema } from '../integrations/common.ts';

const description = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish();
const url = z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty').max(2048, 'must be at most 2048 characters');
/** `oauth_auto` is the reference's name for `oauth`; both are accepted and `oauth` is stored. */
const authType = z
  .enum(['none', 'headers', 'oauth', 'oauth_auto'], { error: 'must be one of none, headers, oauth' })
  .transform((v) => (v === 'oauth_auto' ? 'oauth' : v));
const transport = z.enum(['http', 'sse'], { error: 'must be one of http (Streamable HTTP), sse' });

const headerValue = z.string({ error: 'must be a string' }).max(8192, 'must be at most 8192 characters');
export const configurationsSchema = z.object(
  {
    /** Sent on every request to the server; encrypted at rest, never shown. */
    custom_headers: z.record(z.string(), headerValue, { error: 'must be an object of header names to string values' }).optional(),
    /** OAuth client settings; `client_secret` is encrypted at rest. */
    client_id: z.string({ error: 'must be a string' }).max(1024).optional(),
    client_secret: z.string({ error: 'must be a string' }).max(4096).optional(),
    scope: z.string({ error: 'must be a string' }).max(2048).optional(),
    authorization_params: z.record(z.string(), z.string({ error: 'must be a string' })).optional(),
    /** Whether capabilities a later sync finds start enabled (default true). */
    new_capabilities_enabled: z.boolean({ error: 'must be a boolean' }).optional(),
  },
  { error: 'must be an object' },
);

export const createMcpIntegrationSchema = z.object({
  name: nameSchema,
  url,
  auth_type: authType,
  transport,
  slug: slugSchema.optional(),
  description,
  configurations: configurationsSchema.optional(),
  organisation_id: z.string({ error: 'must be a string' }).min(1).optional(),
  workspace_id: z.string({ error: 'must be a string' }).min(1).optional(),
});

export const updateMcpIntegrationSchema = z
  .object({
    name: nameSchema.optional(),
    description,
    url: url.optional(),
    auth_type: authType.optional(),
    transport: transport.optional(),
    configurations: configurationsSchema.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'must change at least one of name, description, url, auth_type, transport, configurations',
  });

export const workspacesUpdateSchema = z.object({
  workspaces: z
    .array(z.object({ id: z.string({ error: 'must be a string' }).min(1, 'must not be empty'), enabled: z.boolean({ error: 'must be a boolean' }) }), {
      error: 'is required and must be a list of {id, enabled}',
    })
    .max(1000, 'must hold at most 1000 workspaces'),
  global_workspace_access: z.object({ enabled: z.boolean({ error: 'must be a boolean' }) }).nullish(),
  override_existing_workspace_access: z.boolean({ error: 'must be a boolean' }).optional(),
});

export const capabilitiesUpdateSchema = z.object({
  capabilities: z
    .array(
      z.object({
        name: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(1024),
        type: z.enum(['tool', 'prompt', 'resource'], { error: 'must be one of tool, prompt, resource' }),
        enabled: z.boolean({ error: 'must be a boolean' }),
      }),
      { error: 'is required and must be a list of {name, type, enabled}' },
    )
    .min(1, 'must hold at least one capability')
    .max(1000, 'must hold at most 1000 capabilities'),
});

export type CreateMcpIntegrationBody = z.output<typeof createMcpIntegrationSchema>;
export type UpdateMcpIntegrationBody = z.output<typeof updateMcpIntegrationSchema>;
export type McpConfigurationsBody = z.output<typeof configurationsSchema>;
export type WorkspacesUpdateBody = z.output<typeof workspacesUpdateSchema>;
export type CapabilitiesUpdateBody = z.output<typeof capabilitiesUpdateSchema>;
