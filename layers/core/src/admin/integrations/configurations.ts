/**
 * Provider configurations of integrations and virtual keys, validated per provider family (the
 * reference spec's OpenAIConfiguration, AzureOpenAIConfiguration, BedrockConfiguration ...), plus
 * the options a provider declares itself and a custom base URL for every provider. The result is
 * split in two: plain fields, stored as they are, and secret fields, which are encrypted with the
 * key and shown masked. At the gateway all of them become the target's provider options.
 */
import * as z from 'zod';
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import { PARSE_CONTEXT, problemsFromZod } from '../../gateway/validate/common.ts';
import type { ProviderDefinition } from '../../providers/types.ts';
import { parseOutboundUrl, type TrustedHosts } from '../../security/ssrf.ts';

interface FieldSpec {
  schema: z.ZodType;
  /** Encrypted with the key; answers show `masked_<field>`. */
  secret?: boolean;
  /** An outbound URL: SSRF-checked when saved (and again by the gateway when called). */
  url?: boolean;
}

const text = (max = 255): FieldSpec => ({ schema: z.string().trim().min(1).max(max) });
const secretText = (max = 4096): FieldSpec => ({ schema: z.string().min(1).max(max), secret: true });
const url: FieldSpec = { schema: z.string().min(1).max(2048), url: true };
const oneOf = (...values: [string, ...string[]]): FieldSpec => ({ schema: z.enum(values) });

const azureDeployment = z.strictObject({
  alias: z.string().trim().min(1).max(255).optional(),
  azure_api_version: z.string().trim().min(1).max(30),
  azure_deployment_name: z.string().trim().min(1).max(255),
  azure_model_slug: z.string().trim().min(1).max(255),
  is_default: z.boolean().optional(),
});

const AZURE_ENTRA: Readonly<Record<string, FieldSpec>> = {
  azure_auth_mode: oneOf('default', 'entra', 'managed'),
  azure_entra_tenant_id: text(),
  azure_entra_client_id: text(),
  azure_entra_client_secret: secretText(),
  azure_managed_client_id: text(),
};

const AWS: Readonly<Record<string, FieldSpec>> = {
  aws_auth_type: oneOf('accessKey', 'assumedRole'),
  aws_region: { schema: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as us-east-1') },
  aws_access_key_id: text(128),
  aws_secret_access_key: secretText(),
  aws_role_arn: { schema: z.string().regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, 'must be an IAM role ARN') },
  aws_external_id: { schema: z.string().min(2).max(1224).nullable() },
};

const SAGEMAKER: Readonly<Record<string, FieldSpec>> = Object.fromEntries(
  [
    'custom_attributes',
    'target_model',
    'target_variant',
    'target_container_hostname',
    'inference_id',
    'enable_explanations',
    'inference_component',
    'session_id',
    'model_name',
  ].map((f) => [`amzn_sagemaker_${f}`, text(1024)]),
);

/** Fields of each provider family, by provider id. */
const FAMILIES: Readonly<Record<string, Readonly<Record<string, FieldSpec>>>> = {
  openai: { openai_organization: text(), openai_project: text() },
  'azure-openai': {
    ...AZURE_ENTRA,
    azure_resource_name: { schema: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9-]{0,62}$/, 'must be an Azure resource name') },
    azure_deployment_config: { schema: z.array(azureDeployment).min(1).max(100) },
  },
  'azure-ai': {
    ...AZURE_ENTRA,
    azure_foundry_url: url,
    azure_api_version: text(30),
    azure_deployment_name: text(),
  },
  bedrock: AWS,
  sagemaker: { ...AWS, ...SAGEMAKER },
  'vertex-ai': {
    vertex_auth_type: oneOf('basic', 'serviceAccount'),
    vertex_region: { schema: z.string().regex(/^[a-z]+(-[a-z0-9]+)+$|^global$/, 'must be a Google Cloud region such as us-central1') },
    vertex_project_id: { schema: z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'must be a Google Cloud project id') },
    vertex_service_account_json: { schema: z.record(z.string(), z.unknown()), secret: true },
  },
  'workers-ai': { workers_ai_account_id: text() },
  huggingface: { huggingface_base_url: url },
  cortex: { snowflake_account: text() },
};

/** Every provider takes a custom base URL. */
const COMMON: Readonly<Record<string, FieldSpec>> = { custom_host: url };

/** The fields a provider's configuration may have. */
export function configurationFields(provider: ProviderDefinition): Readonly<Record<string, FieldSpec>> {
  const declared = Object.fromEntries(Object.keys(provider.optionHeaders ?? {}).map((o) => [o, text()]));
  return { ...COMMON, ...declared, ...FAMILIES[provider.id] };
}

/** Names of the secret fields a configuration can have, across all families. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(
  Object.values(FAMILIES).flatMap((fields) =>
    Object.entries(fields)
      .filter(([, s]) => s.secret)
      .map(([k]) => k),
  ),
);

/** Rules spanning fields (which are required depends on the auth mode). */
function crossFieldProblems(provider: ProviderDefinition, c: Record<string, unknown>, path: string): FieldProblem[] {
  const providerId = provider.id;
  const problems: FieldProblem[] = [];
  const need = (field: string, why: string) => {
    if (c[field] === undefined || c[field] === null) problems.push({ path: `${path}.${field}`, message: `is required ${why}` });
  };
  switch (providerId) {
    case 'azure-openai':
      need('azure_resource_name', 'for Azure OpenAI');
      need('azure_deployment_config', 'for Azure OpenAI');
      if (Array.isArray(c.azure_deployment_config) && c.azure_deployment_config.filter((d: { is_default?: boolean }) => d?.is_default).length > 1) {
        problems.push({ path: `${path}.azure_deployment_config`, message: 'must have at most one default deployment' });
      }
      break;
    case 'azure-ai':
      need('azure_foundry_url', 'for Azure AI');
      break;
    case 'bedrock':
    case 'sagemaker':
      need('aws_region', 'for AWS');
      if (c.aws_auth_type === 'assumedRole') need('aws_role_arn', 'when aws_auth_type is assumedRole');
      else {
        need('aws_access_key_id', 'when aws_auth_type is accessKey');
        need('aws_secret_access_key', 'when aws_auth_type is accessKey');
      }
      break;
    case 'vertex-ai':
      need('vertex_region', 'for Vertex AI');
      if (c.vertex_auth_type === 'serviceAccount') need('vertex_service_account_json', 'when vertex_auth_type is serviceAccount');
      else need('vertex_project_id', 'when vertex_auth_type is basic');
      break;
    case 'workers-ai':
      need('workers_ai_account_id', 'for Workers AI');
      break;
    case 'cortex':
      need('snowflake_account', 'for Cortex');
      break;
  }
  if (provider.requiresCustomHost && c.custom_host === undefined) {
    problems.push({ path: `${path}.custom_host`, message: `is required for provider ${providerId}: it runs on your own machine or cluster` });
  }
  return problems;
}

export interface SplitConfiguration {
  /** Stored as it is. */
  plain: Record<string, unknown>;
  /** Encrypted with the key. */
  secret: Record<string, unknown>;
}

/**
 * Validates a configuration for a provider and splits it. `previousSecret` holds the secret
 * fields already stored: one left out of an update is kept, one sent as null is removed.
 * Throws a ValidationError naming every bad field (`configurations.<field>`).
 */
export function validateConfigurations(
  provider: ProviderDefinition,
  raw: Record<string, unknown> | undefined,
  trustedHosts: TrustedHosts,
  opts: { path?: string; previousSecret?: Record<string, unknown> } = {},
): SplitConfiguration {
  const path = opts.path ?? 'configurations';
  const fields = configurationFields(provider);
  const problems: FieldProblem[] = [];
  const plain: Record<string, unknown> = {};
  const secret: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(opts.previousSecret ?? {})) if (fields[k]?.secret) secret[k] = v;

  for (const [key, value] of Object.entries(raw ?? {})) {
    const spec = fields[key];
    const at = `${path}.${key}`;
    if (!spec) {
      problems.push({ path: at, message: `is not a configuration of provider ${provider.id}; known: ${Object.keys(fields).sort().join(', ')}` });
      continue;
    }
    if (value === null && spec.secret) {
      delete secret[key];
      continue;
    }
    const parsed = spec.schema.safeParse(value, PARSE_CONTEXT);
    if (!parsed.success) {
      for (const p of problemsFromZod(parsed.error.issues, value)) {
        problems.push({ path: !p.path ? at : p.path.startsWith('[') ? at + p.path : `${at}.${p.path}`, message: p.message });
      }
      continue;
    }
    if (spec.url && typeof parsed.data === 'string') {
      try {
        parseOutboundUrl(parsed.data, at, trustedHosts);
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        problems.push(...err.problems);
        continue;
      }
    }
    (spec.secret ? secret : plain)[key] = parsed.data;
  }
  if (problems.length === 0) problems.push(...crossFieldProblems(provider, { ...plain, ...secret }, path));
  if (problems.length) throw new ValidationError(problems);
  return { plain, secret };
}
