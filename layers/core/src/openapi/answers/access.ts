/** Answers of the identity and access resources: API keys, the organisation, workspaces, users, invites, audit logs. */
import * as z from 'zod';
import type { ApiKeyService, ApiKeyView } from '../../admin/api-keys/service.ts';
import type * as AuditLogs from '../../admin/audit-logs/service.ts';
import type { InviteService } from '../../admin/invites/service.ts';
import type { MemberView } from '../../admin/members/service.ts';
import type { OrganisationView } from '../../admin/organisation/service.ts';
import type { UserView } from '../../admin/users/service.ts';
import type { WorkspaceView } from '../../admin/workspaces/service.ts';
import { SECURITY_SETTING_NAMES } from '../../policy/security-settings.ts';
import { answerOf, isoTime, keyUsageLimits, nullableString } from './common.ts';

type Returns<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

export const apiKeyView = answerOf<ApiKeyView>()(
  z.object({
    object: z.literal('api-key'),
    id: z.string(),
    name: z.string(),
    description: nullableString,
    type: z.enum(['organisation-service', 'workspace-service', 'workspace-user']),
    organisation_id: z.string(),
    workspace_id: nullableString,
    user_id: nullableString,
    scopes: z.array(z.string()),
    status: z.string(),
    key: z.string().describe('Masked: the key itself is only answered by create and rotate'),
    expires_at: nullableString,
    created_at: isoTime,
    last_updated_at: isoTime,
    created_by: nullableString,
    last_updated_by: nullableString,
    last_reset_at: nullableString,
    reset_usage: z.number().int(),
    defaults: z
      .object({ config_id: z.string().optional(), allow_config_override: z.boolean().optional(), metadata: z.record(z.string(), z.string()).optional() })
      .nullable(),
    rotation_policy: z
      .object({ rotation_period: z.enum(['weekly', 'monthly']).nullable(), next_rotation_at: nullableString, key_transition_period_ms: z.number() })
      .nullable(),
    last_rotated_at: nullableString,
    key_transition_expires_at: nullableString,
    alert_emails: z.array(z.string()),
    usage_limits: keyUsageLimits.nullable(),
    rate_limits: z.array(z.object({ type: z.enum(['requests', 'tokens']), unit: z.enum(['rps', 'rpm', 'rph', 'rpd', 'rpw']), value: z.number() })),
  }),
);

export const apiKeyCreated = answerOf<Returns<ApiKeyService['create']>>()(
  z.object({ id: z.string(), key: z.string().describe('The key; shown only here'), object: z.literal('api-key') }),
);

export const apiKeyRotated = answerOf<Returns<ApiKeyService['rotate']>>()(
  z.object({ id: z.string(), key: z.string().describe('The new key; shown only here'), key_transition_expires_at: isoTime, object: z.literal('api-key') }),
);

const securitySettings = z.object(
  Object.fromEntries(SECURITY_SETTING_NAMES.map((n) => [n, z.boolean()])) as Record<(typeof SECURITY_SETTING_NAMES)[number], z.ZodBoolean>,
);

export const organisationView = answerOf<OrganisationView>()(
  z.object({
    object: z.literal('organisation'),
    id: z.string(),
    name: z.string(),
    security_settings: securitySettings,
    security_setting_defaults: securitySettings,
    session_settings: z.object({ max_session_ttl: z.number().nullable() }),
    created_at: isoTime,
    last_updated_at: isoTime,
  }),
);

export const memberView = answerOf<MemberView>()(
  z.object({
    object: z.literal('workspace-user'),
    id: z.string(),
    email: nullableString,
    first_name: nullableString,
    last_name: nullableString,
    org_role: nullableString,
    role: z.enum(['manager', 'member']),
    status: z.literal('active'),
    workspace_id: z.string(),
    created_at: isoTime,
    last_updated_at: isoTime,
  }),
);

export const workspaceView = answerOf<WorkspaceView>()(
  z.object({
    object: z.literal('workspace'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: nullableString,
    status: z.enum(['active', 'archived']),
    defaults: z.record(z.string(), z.unknown()).nullable(),
    usage_limits: z.array(z.unknown()),
    rate_limits: z.array(z.unknown()),
    security_settings: z.record(z.string(), z.boolean()),
    created_at: isoTime,
    last_updated_at: isoTime,
    archived_at: nullableString,
    users: z.array(memberView).optional(),
  }),
);

const workspaceRoles = z.array(z.object({ id: z.string(), role: z.string() }));

export const inviteView = answerOf<Returns<InviteService['get']>>()(
  z.object({
    object: z.literal('invite'),
    id: z.string(),
    email: z.string(),
    role: z.string(),
    workspaces: workspaceRoles,
    workspace_api_key_details: z.object({ name: z.string().optional(), scopes: z.array(z.string()) }).nullable(),
    status: z.enum(['pending', 'accepted', 'expired']),
    created_at: isoTime,
    expires_at: isoTime,
    accepted_at: nullableString,
    invited_by: nullableString,
  }),
);

export const inviteCreated = answerOf<Returns<InviteService['create']>>()(z.object({ id: z.string(), invite_link: z.string(), object: z.literal('invite') }));

export const inviteResent = answerOf<Returns<InviteService['resend']>>()(z.object({ invite_link: z.string() }));

export const inviteAccepted = answerOf<Returns<InviteService['accept']>>()(
  z.object({
    object: z.literal('user'),
    id: z.string(),
    email: z.string(),
    role: z.string(),
    workspaces: workspaceRoles,
    api_keys: z.array(z.object({ id: z.string(), key: z.string(), workspace_id: z.string() })).describe('Keys made for the new user, shown only here'),
  }),
);

export const userView = answerOf<UserView>()(
  z.object({
    object: z.literal('user'),
    id: z.string(),
    email: z.string(),
    first_name: nullableString,
    last_name: nullableString,
    role: z.enum(['owner', 'admin', 'member']),
    created_at: isoTime,
    last_updated_at: isoTime,
    workspace_ids: z.array(z.string()),
    workspaces: workspaceRoles,
  }),
);

export const auditView = answerOf<ReturnType<typeof AuditLogs.auditView>>()(
  z.object({
    object: z.literal('audit-log'),
    id: z.string(),
    organisation_id: z.string(),
    timestamp: isoTime,
    method: z.string(),
    uri: z.string(),
    query_params: nullableString,
    request_id: z.string(),
    request_body: nullableString,
    user_id: nullableString,
    user_type: z.enum(['user', 'api_key', 'system', 'anonymous']),
    api_key_id: nullableString,
    email: nullableString,
    role: nullableString,
    workspace_id: nullableString,
    resource_type: z.string(),
    resource_id: nullableString,
    action: z.string(),
    response_status_code: z.number().int().nullable(),
    outcome: z.enum(['pending', 'success', 'failure']),
    client_ip: nullableString,
    forwarded_for: nullableString,
    user_agent: nullableString,
  }),
);
