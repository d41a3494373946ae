/**
 * Answers of what routes and limits gateway requests: saved configs, guardrails, integrations,
 * providers, virtual keys, secret references, rate and usage limits policies, model prices.
 */
import * as z from 'zod';
import type { ConfigService, ConfigView } from '../../admin/configs/service.ts';
import type * as Configs from '../../admin/configs/service.ts';
import type { GuardrailService, GuardrailView } from '../../admin/guardrails/service.ts';
import type { IntegrationService, IntegrationView } from '../../admin/integrations/service.ts';
import type { EntityView, PolicyService, RateLimitPolicyView, UsageLimitPolicyView } from '../../admin/policies/service.ts';
import type { CustomPriceView, EffectivePriceView } from '../../admin/pricing/service.ts';
import type { ProviderService, ProviderView } from '../../admin/providers/service.ts';
import type { SecretReferenceService } from '../../admin/secret-references/service.ts';
import type * as SecretReferences from '../../admin/secret-references/service.ts';
import type { VirtualKeyService, VirtualKeyView } from '../../admin/virtual-keys/service.ts';
import { answerOf, isoTime, keyUsageLimits, nullableString } from './common.ts';

type Returns<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

const record = z.record(z.string(), z.unknown());

export const configView = answerOf<ConfigView>()(
  z.object({
    object: z.literal('config'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    organisation_id: z.string(),
    workspace_id: z.string(),
    status: z.string(),
    is_default: z.boolean(),
    version: z.number().int(),
    version_id: z.string(),
    config: record.describe('The config; provider keys in it masked'),
    created_at: isoTime,
    last_updated_at: isoTime,
    created_by: nullableString,
    last_updated_by: nullableString,
  }),
);

export const configWritten = answerOf<Returns<ConfigService['update']>>()(
  z.object({ id: z.string(), slug: z.string(), version_id: z.string(), object: z.literal('config') }),
);

export const configVersion = answerOf<Returns<typeof Configs.versionView>>()(
  z.object({
    object: z.literal('config-version'),
    id: z.string(),
    config_id: z.string(),
    version: z.number().int(),
    config: record,
    name: z.string(),
    created_at: isoTime,
    created_by: nullableString,
  }),
);

const feedbackAction = z.object({ feedback: z.unknown().optional() }).nullable();

export const guardrailView = answerOf<GuardrailView>()(
  z.object({
    object: z.literal('guardrail'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    organisation_id: z.string(),
    workspace_id: nullableString,
    status: z.string(),
    version_id: z.string(),
    created_at: isoTime,
    last_updated_at: isoTime,
    owner_id: nullableString,
    updated_by: nullableString,
    checks: z
      .array(z.object({ id: z.string(), parameters: record, is_enabled: z.boolean().optional() }))
      .optional()
      .describe('On a single guardrail, not in lists'),
    actions: z
      .object({ deny: z.boolean(), async: z.boolean(), on_success: feedbackAction, on_fail: feedbackAction, message: z.string().optional() })
      .optional()
      .describe('On a single guardrail, not in lists'),
  }),
);

export const guardrailWritten = answerOf<Returns<GuardrailService['update']>>()(z.object({ id: z.string(), slug: z.string(), version_id: z.string() }));

export const integrationView = answerOf<IntegrationView>()(
  z.object({
    object: z.literal('integration'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: nullableString,
    organisation_id: z.string(),
    ai_provider_id: z.string(),
    status: z.string(),
    masked_key: nullableString,
    configurations: record.describe('Plain fields as stored; secret ones only as masked_<field>'),
    tags: z.record(z.string(), z.string()),
    workspace_ids: z.array(z.string()).nullable().describe('null: every workspace may use the integration'),
    allowed_models: z.array(z.string()),
    secret_mappings: z.array(z.object({ target_field: z.string(), secret_reference_id: z.string(), secret_key: nullableString.optional() })),
    created_at: isoTime,
    last_updated_at: isoTime,
    created_by: nullableString,
    last_updated_by: nullableString,
  }),
);

export const integrationCreated = answerOf<Returns<IntegrationService['create']>>()(
  z.object({ id: z.string(), slug: z.string(), object: z.literal('integration') }),
);

export const providerView = answerOf<ProviderView>()(
  z.object({
    object: z.literal('provider'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    organisation_id: z.string(),
    workspace_id: z.string(),
    integration_id: z.string(),
    integration_slug: nullableString,
    ai_provider_id: nullableString,
    note: nullableString,
    status: z.enum(['active', 'expired']),
    expires_at: nullableString,
    usage_limits: keyUsageLimits.nullable(),
    created_at: isoTime,
    last_updated_at: isoTime,
    created_by: nullableString,
    last_updated_by: nullableString,
  }),
);

export const providerWritten = answerOf<Returns<ProviderService['update']>>()(z.object({ id: z.string(), slug: z.string(), object: z.literal('provider') }));

export const virtualKeyView = answerOf<VirtualKeyView>()(
  z.object({
    object: z.literal('virtual-key'),
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    provider: z.string(),
    organisation_id: z.string(),
    workspace_id: z.string(),
    note: nullableString,
    status: z.enum(['active', 'expired']),
    masked_key: nullableString,
    model_config: record.describe('Secret fields only as masked_<field>'),
    expires_at: nullableString,
    created_at: isoTime,
    last_updated_at: isoTime,
    created_by: nullableString,
    last_updated_by: nullableString,
  }),
);

export const virtualKeyCreated = answerOf<Returns<VirtualKeyService['create']>>()(
  z.object({ id: z.string(), slug: z.string(), object: z.literal('virtual-key') }),
);

const managerType = z.enum(['aws_sm', 'azure_kv', 'hashicorp_vault']);

const secretReferenceSummaryShape = {
  object: z.literal('secret-reference'),
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  manager_type: managerType,
  status: z.literal('ACTIVE'),
  created_at: isoTime,
  last_updated_at: isoTime,
};

export const secretReferenceSummary = answerOf<ReturnType<typeof SecretReferences.summaryView>>()(z.object(secretReferenceSummaryShape));

export const secretReferenceView = answerOf<ReturnType<typeof SecretReferences.detailView>>()(
  z.object({
    ...secretReferenceSummaryShape,
    organisation_id: z.string(),
    description: nullableString,
    secret_path: z.string(),
    secret_key: nullableString,
    allow_all_workspaces: z.boolean(),
    allowed_workspaces: z.array(z.string()),
    tags: z.record(z.string(), z.string()).nullable(),
    created_by: nullableString,
    auth_config: z.record(z.string(), z.string()).describe('Credential fields masked'),
  }),
);

export const secretReferenceCreated = answerOf<Returns<SecretReferenceService['create']>>()(
  z.object({ id: z.string(), slug: z.string(), object: z.literal('secret-reference') }),
);

const policyShape = {
  id: z.string(),
  name: nullableString,
  organisation_id: z.string(),
  conditions: z.array(z.object({ key: z.string(), value: z.string() })),
  group_by: z.array(z.object({ key: z.string() })),
  status: z.enum(['active', 'archived']),
  created_at: isoTime,
  last_updated_at: isoTime,
};

export const rateLimitPolicyView = answerOf<RateLimitPolicyView>()(
  z.object({
    ...policyShape,
    object: z.literal('policy_rate_limits'),
    workspace_id: nullableString,
    type: z.enum(['requests', 'tokens']),
    unit: z.enum(['rpm', 'rph', 'rpd', 'rpw']),
    value: z.number(),
    mode: z.enum(['exact', 'approximate']),
    lease_size: z.number().nullable(),
    applies_to: z.enum(['workspace', 'organisation']),
  }),
);

const entityUsage = {
  current_usage: z.number(),
  status: z.enum(['active', 'exhausted']),
  is_threshold_alerts_sent: z.boolean(),
  is_exhausted_alerts_sent: z.boolean(),
};

export const usageLimitPolicyView = answerOf<UsageLimitPolicyView>()(
  z.object({
    ...policyShape,
    object: z.literal('policy_usage_limits'),
    workspace_id: z.string(),
    type: z.enum(['cost', 'tokens']),
    credit_limit: z.number(),
    alert_threshold: z.number().nullable(),
    periodic_reset: z.enum(['weekly', 'monthly']).nullable(),
    periodic_reset_days: z.number().nullable(),
    next_usage_reset_at: nullableString,
    last_reset_at: nullableString,
    alert_emails: z.array(z.string()),
    value_key_usage_map: z.record(z.string(), z.object(entityUsage)).optional().describe('With ?include_usage=true'),
  }),
);

export const policyCreated = answerOf<Returns<PolicyService['create']>>()(z.object({ id: z.string(), object: z.string() }));

export const policyEntity = answerOf<EntityView>()(
  z.object({ ...entityUsage, object: z.literal('policy_usage_limits_entity'), id: z.string(), value_key: z.string(), last_reset_at: nullableString }),
);

const priceFields = {
  input_per_million: z.number().nullable(),
  output_per_million: z.number().nullable(),
  cached_input_per_million: z.number().nullable(),
};

export const customPriceView = answerOf<CustomPriceView>()(
  z.object({
    ...priceFields,
    object: z.literal('model-price'),
    provider: z.string(),
    model: z.string(),
    workspace_id: nullableString.describe("null: the organisation's price"),
    created_at: isoTime,
    last_updated_at: isoTime,
    last_updated_by: nullableString,
  }),
);

export const effectivePriceView = answerOf<EffectivePriceView>()(
  z.object({
    object: z.literal('model-price'),
    provider: z.string(),
    model: z.string(),
    workspace_id: nullableString,
    effective: z.object({ ...priceFields, sources: z.record(z.string(), z.string()) }),
    custom: customPriceView.nullable(),
    catalog: z.object({ ...priceFields, id: z.string(), context_window: z.number().nullable(), types: z.array(z.string()) }).nullable(),
  }),
);
