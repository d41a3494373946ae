/** The native-format providers by id, and the provider options they read. */
import type { NativeProvider, ProviderRequestContext } from '../transform.ts';
import { anthropic } from './anthropic.ts';
import { azureAI, azureOpenAI } from './azure-openai.ts';
import { bedrock } from './bedrock.ts';
import { cohere } from './cohere.ts';
import { google, vertexAI } from './google.ts';
import { sagemaker } from './sagemaker.ts';

export { callNative, callNativeRaw, type NativeCall, type NativeOutcome } from './call.ts';
export { runtimeAssumeRole } from './aws.ts';

export const NATIVE_PROVIDERS: readonly NativeProvider[] = [anthropic, bedrock, google, vertexAI, azureOpenAI, azureAI, cohere, sagemaker];

const BY_ID: ReadonlyMap<string, NativeProvider> = new Map(NATIVE_PROVIDERS.map((p) => [p.id, p]));

export function findNativeProvider(id: string): NativeProvider | undefined {
  return BY_ID.get(id.toLowerCase());
}

/** Provider options the native providers read; each is also accepted as an `x-gw-<option>` header (underscores as dashes). */
export const NATIVE_OPTION_KEYS = [
  'aws_access_key_id',
  'aws_secret_access_key',
  'aws_session_token',
  'aws_region',
  'aws_role_arn',
  'aws_external_id',
  'vertex_project_id',
  'vertex_region',
  'vertex_service_account_json',
  'azure_resource_name',
  'azure_deployment_id',
  'azure_api_version',
  'azure_ad_token',
  'azure_auth_mode',
  'azure_endpoint',
  'azure_extra_parameters',
  'anthropic_version',
  'anthropic_beta',
] as const;

/** The target's options, completed by `x-gw-<option>` request headers; options from the config win. */
export function nativeOptions(targetOptions: Readonly<Record<string, unknown>>, headers: Headers): Record<string, unknown> {
  const options: Record<string, unknown> = { ...targetOptions };
  for (const key of NATIVE_OPTION_KEYS) {
    if (options[key] !== undefined) continue;
    const value = headers.get(`x-gw-${key.replace(/_/g, '-')}`);
    if (value !== null && value !== '') options[key] = value;
  }
  return options;
}

/** The context of one call, from the body the provider gets and the resolved target. */
export function nativeContext(args: {
  body: Readonly<Record<string, unknown>>;
  options: Readonly<Record<string, unknown>>;
  apiKey?: string | undefined;
  strictOpenAICompliance: boolean;
  clock: ProviderRequestContext['clock'];
  requestId: string;
  fetchCredentials?: ProviderRequestContext['fetchCredentials'];
  fetch?: ProviderRequestContext['fetch'];
  authEndpoints?: ProviderRequestContext['authEndpoints'];
}): ProviderRequestContext {
  const { body } = args;
  const streamOptions = body.stream_options;
  return {
    model: typeof body.model === 'string' ? body.model : '',
    request: body,
    stream: body.stream === true,
    includeUsage: typeof streamOptions === 'object' && streamOptions !== null && (streamOptions as { include_usage?: unknown }).include_usage === true,
    options: args.options,
    apiKey: args.apiKey,
    strictOpenAICompliance: args.strictOpenAICompliance,
    clock: args.clock,
    requestId: args.requestId,
    fetchCredentials: args.fetchCredentials,
    fetch: args.fetch,
    authEndpoints: args.authEndpoints,
  };
}
