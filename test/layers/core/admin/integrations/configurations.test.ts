/**
 * Provider configurations per family: known fields only, types, required fields by auth mode,
 * custom base URLs SSRF-checked when saved, secret fields split off for encryption.
 */
import { describe, expect, it } from 'vitest';
import { validateConfigurations, SECRET_FIELDS } from '../../../../../layers/core/src/admin/integrations/configurations.ts';
import { ValidationError, type FieldProblem } from '../../../../../layers/core/src/http/errors.ts';
import { findProvider } from '../../../../../layers/core/src/providers/registry.ts';
import type { ProviderDefinition } from '../../../../../layers/core/src/providers/types.ts';
import { TrustedHosts } from '../../../../../layers/core/src/security/ssrf.ts';

const trusted = TrustedHosts.parse('127.0.0.1');

/** Native providers are declared elsewhere; the families only need the id. */
const def = (id: string, extra: Partial<ProviderDefinition> = {}): ProviderDefinition => ({
  id,
  name: id,
  baseUrl: 'https://example.com',
  auth: { kind: 'bearer' },
  endpoints: {},
  ...extra,
});

function problems(provider: ProviderDefinition, raw: Record<string, unknown>): FieldProblem[] {
  try {
    validateConfigurations(provider, raw, trusted);
  } catch (err) {
    if (err instanceof ValidationError) return err.problems;
    throw err;
  }
  return [];
}

const paths = (p: FieldProblem[]) => p.map((x) => x.path);

describe('validateConfigurations', () => {
  it('accepts OpenAI options and a custom host, all plain', () => {
    const openai = findProvider('openai') as ProviderDefinition;
    expect(validateConfigurations(openai, { openai_organization: 'org-1', openai_project: 'p', custom_host: 'https://llm.example.com/v1' }, trusted)).toEqual({
      plain: { openai_organization: 'org-1', openai_project: 'p', custom_host: 'https://llm.example.com/v1' },
      secret: {},
    });
    expect(validateConfigurations(openai, undefined, trusted)).toEqual({ plain: {}, secret: {} });
  });

  it('accepts the options a provider declares for itself', () => {
    const declared = def('acme', { optionHeaders: { acme_tenant: 'X-Acme-Tenant' } });
    expect(validateConfigurations(declared, { acme_tenant: 't' }, trusted).plain).toEqual({ acme_tenant: 't' });
  });

  it('names unknown fields, listing the known ones', () => {
    const p = problems(findProvider('groq') as ProviderDefinition, { openai_project: 'p' });
    expect(paths(p)).toEqual(['configurations.openai_project']);
    expect(p[0]?.message).toContain('known: custom_host');
  });

  it('SSRF-checks URLs when saved: private, metadata and non-http addresses are refused, trusted hosts pass', () => {
    const openai = findProvider('openai') as ProviderDefinition;
    for (const url of ['http://10.0.0.1/v1', 'http://169.254.169.254/', 'ftp://example.com', 'http://localhost:8080', 'http://user:pw@example.com']) {
      expect(paths(problems(openai, { custom_host: url }))).toEqual(['configurations.custom_host']);
    }
    expect(problems(openai, { custom_host: 'http://127.0.0.1:11434/v1' })).toEqual([]);
    expect(paths(problems(def('huggingface'), { huggingface_base_url: 'http://192.168.1.1' }))).toEqual(['configurations.huggingface_base_url']);
  });

  it('requires a custom host for providers that run on the caller’s machine', () => {
    expect(paths(problems(findProvider('ollama') as ProviderDefinition, {}))).toEqual(['configurations.custom_host']);
  });

  it('Azure OpenAI: resource name and deployments required, each deployment checked, one default at most', () => {
    const azure = def('azure-openai');
    expect(paths(problems(azure, {})).sort()).toEqual(['configurations.azure_deployment_config', 'configurations.azure_resource_name']);
    const deployment = { azure_api_version: '2024-10-21', azure_deployment_name: 'gpt4o', azure_model_slug: 'gpt-4o' };
    expect(problems(azure, { azure_resource_name: 'my-res', azure_deployment_config: [deployment] })).toEqual([]);
    expect(
      paths(
        problems(azure, { azure_resource_name: 'my res', azure_deployment_config: [{ ...deployment, azure_api_version: 'x'.repeat(31), extra: 1 }] }),
      ).sort(),
    ).toEqual([
      'configurations.azure_deployment_config[0]',
      'configurations.azure_deployment_config[0].azure_api_version',
      'configurations.azure_resource_name',
    ]);
    const twoDefaults = [
      { ...deployment, is_default: true },
      { ...deployment, is_default: true },
    ];
    expect(paths(problems(azure, { azure_resource_name: 'r', azure_deployment_config: twoDefaults }))).toEqual(['configurations.azure_deployment_config']);
  });

  it('Bedrock: region and, by auth type, access keys or a role; the secret key is split off', () => {
    const bedrock = def('bedrock');
    expect(paths(problems(bedrock, { aws_auth_type: 'accessKey', aws_region: 'us-east-1' })).sort()).toEqual([
      'configurations.aws_access_key_id',
      'configurations.aws_secret_access_key',
    ]);
    expect(paths(problems(bedrock, { aws_auth_type: 'assumedRole', aws_region: 'us-east-1' }))).toEqual(['configurations.aws_role_arn']);
    expect(paths(problems(bedrock, { aws_auth_type: 'assumedRole', aws_region: 'nowhere', aws_role_arn: 'arn:aws:iam::123:role/x' })).sort()).toEqual([
      'configurations.aws_region',
      'configurations.aws_role_arn',
    ]);
    const split = validateConfigurations(
      bedrock,
      { aws_auth_type: 'accessKey', aws_region: 'eu-west-1', aws_access_key_id: 'AKID', aws_secret_access_key: 'shh' },
      trusted,
    );
    expect(split).toEqual({
      plain: { aws_auth_type: 'accessKey', aws_region: 'eu-west-1', aws_access_key_id: 'AKID' },
      secret: { aws_secret_access_key: 'shh' },
    });
    const role = { aws_auth_type: 'assumedRole', aws_region: 'us-east-1', aws_role_arn: 'arn:aws:iam::123456789012:role/gantry', aws_external_id: 'ext-1' };
    expect(validateConfigurations(def('sagemaker'), { ...role, amzn_sagemaker_target_model: 'm' }, trusted).plain).toEqual({
      ...role,
      amzn_sagemaker_target_model: 'm',
    });
  });

  it('Vertex AI: project for basic auth, a service account for serviceAccount (secret)', () => {
    const vertex = def('vertex-ai');
    expect(paths(problems(vertex, { vertex_region: 'us-central1' }))).toEqual(['configurations.vertex_project_id']);
    expect(paths(problems(vertex, { vertex_auth_type: 'serviceAccount', vertex_region: 'us-central1' }))).toEqual([
      'configurations.vertex_service_account_json',
    ]);
    const sa = { type: 'service_account', private_key: '-----BEGIN PRIVATE KEY-----' };
    expect(
      validateConfigurations(vertex, { vertex_auth_type: 'serviceAccount', vertex_region: 'europe-west4', vertex_service_account_json: sa }, trusted),
    ).toEqual({
      plain: { vertex_auth_type: 'serviceAccount', vertex_region: 'europe-west4' },
      secret: { vertex_service_account_json: sa },
    });
  });

  it('keeps stored secret fields an update leaves out, and removes those sent as null', () => {
    const bedrock = def('bedrock');
    const base = { aws_auth_type: 'accessKey', aws_region: 'eu-west-1', aws_access_key_id: 'AKID' };
    expect(validateConfigurations(bedrock, base, trusted, { previousSecret: { aws_secret_access_key: 'old' } }).secret).toEqual({
      aws_secret_access_key: 'old',
    });
    const cleared = problems(bedrock, { ...base, aws_secret_access_key: null });
    expect(paths(cleared)).toEqual(['configurations.aws_secret_access_key']);
  });

  it('knows which fields are secret', () => {
    expect([...SECRET_FIELDS].sort()).toEqual(['aws_secret_access_key', 'azure_entra_client_secret', 'vertex_service_account_json']);
  });
});
