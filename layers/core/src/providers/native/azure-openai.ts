/**
 * Azure OpenAI (`azure-openai`) and Azure AI Foundry model inference (`azure-ai`). Both speak
 * OpenAI's wire format: what differs is the URL (resource, deployment, api-version) and the key
 * header (`api-key`, or an Entra ID bearer token). Bodies pass unchanged, except that streams always
 * ask for usage (see openai-stream.ts).
 */
import { ValidationError } from '../../http/errors.ts';
import type { OpenAIErrorBody } from '../../http/errors.ts';
import type { EndpointType } from '../types.ts';
import type { NativeEndpoint, NativeProvider, OutgoingRequest, ProviderRequestContext } from '../transform.ts';
import * as declared from '../native-declarations.ts';
import { defineNative } from './define.ts';
import { isRecord } from '../../http/json.ts';
import { hostPart, optionString } from './chat-input.ts';
import { errorSnippet, providerError } from './chat-output.ts';
import { openAIStream, withStreamUsage } from './openai-stream.ts';

/** The latest GA data-plane version of the deployment-based API. */
export const AZURE_OPENAI_API_VERSION = '2024-10-21';
export const AZURE_AI_API_VERSION = '2024-05-01-preview';

const RESOURCE = /^[a-zA-Z0-9][a-zA-Z0-9-]{0,62}$/;
const DEPLOYMENT = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/;

/** `azure_api_version` `v1` (or `preview`) selects the v1 API: no deployment in the path, the model in the body. */
const usesV1 = (ctx: ProviderRequestContext) => {
  const v = optionString(ctx, 'azure_api_version');
  return v === 'v1' || v === 'preview';
};

/** The declared `/deployments/{azure_deployment_id}/<path>`, with the deployment and API version filled (or the v1 API's path). */
function azureEndpoint(ctx: ProviderRequestContext, declaredPath: string): NativeEndpoint {
  const path = declaredPath.replace(/^\/deployments\/\{azure_deployment_id\}/, '');
  if (usesV1(ctx)) {
    const preview = optionString(ctx, 'azure_api_version') === 'preview' ? '?api-version=preview' : '';
    return { method: 'POST', path: `/v1${path}${preview}` };
  }
  const deployment = hostPart(ctx, 'azure_deployment_id', DEPLOYMENT, ctx.model || undefined);
  const version = encodeURIComponent(optionString(ctx, 'azure_api_version') ?? AZURE_OPENAI_API_VERSION);
  return { method: 'POST', path: `/deployments/${encodeURIComponent(deployment)}${path}?api-version=${version}` };
}

/** `api-key` with the provider key, or `Authorization: Bearer` with an Entra ID token (`azure_ad_token`, or `azure_auth_mode: entra` for the key). */
function azureAuth(req: OutgoingRequest, ctx: ProviderRequestContext): Promise<OutgoingRequest> {
  const headers = { ...req.headers };
  const adToken = optionString(ctx, 'azure_ad_token');
  if (adToken) headers.authorization = `Bearer ${adToken.replace(/^Bearer\s+/i, '')}`;
  else if (ctx.apiKey && optionString(ctx, 'azure_auth_mode') === 'entra') headers.authorization = `Bearer ${ctx.apiKey}`;
  else if (ctx.apiKey) headers['api-key'] = ctx.apiKey;
  else throw ValidationError.field('authorization', 'an Azure API key (Authorization: Bearer <key>) or azure_ad_token is required');
  return Promise.resolve({ ...req, headers });
}

/** Azure errors are already OpenAI-shaped (content filter results included); others get wrapped. */
export function azureError(status: number, text: string): OpenAIErrorBody {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed) && isRecord(parsed.error)) {
      const e = parsed.error;
      const body = providerError(status, typeof e.message === 'string' ? e.message : 'Azure error', typeof e.code === 'string' ? e.code : null);
      if (typeof e.param === 'string') body.error.param = e.param;
      return { error: { ...e, ...body.error } } as OpenAIErrorBody;
    }
    if (isRecord(parsed) && typeof parsed.message === 'string')
      return providerError(status, parsed.message, typeof parsed.code === 'string' ? parsed.code : null);
  } catch {
    // not JSON
  }
  return providerError(status, errorSnippet(status, text));
}

const passThrough = {
  transformRequest: (endpoint: EndpointType, body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext) =>
    endpoint === 'chatComplete' || endpoint === 'complete' ? withStreamUsage(body, ctx) : { ...body },
  transformStream: (_endpoint: EndpointType, ctx: ProviderRequestContext) => openAIStream(ctx),
  transformError: (status: number, text: string) => azureError(status, text),
};

export const azureOpenAI: NativeProvider = defineNative(declared.azureOpenAI, {
  baseUrl: (ctx) => `https://${hostPart(ctx, 'azure_resource_name', RESOURCE)}.openai.azure.com/openai`,
  endpoints: Object.fromEntries(Object.keys(declared.azureOpenAI.endpoints).map((endpoint) => [endpoint, azureEndpoint])),
  authenticate: azureAuth,
  ...passThrough,
});

/**
 * Azure AI Foundry's model inference endpoint (`https://<resource>.services.ai.azure.com/models`,
 * or `azure_endpoint` for another one such as a serverless deployment's URL).
 */
export const azureAI: NativeProvider = defineNative(declared.azureAI, {
  baseUrl(ctx) {
    const endpoint = optionString(ctx, 'azure_endpoint');
    if (endpoint) {
      let url: URL;
      try {
        url = new URL(endpoint);
      } catch {
        throw ValidationError.field('azure_endpoint', 'must be a URL');
      }
      if (url.protocol !== 'https:' || !/\.(azure\.com|azure-api\.net|azureml\.ms)$/.test(url.hostname)) {
        throw ValidationError.field('azure_endpoint', 'must be an https URL on an Azure domain');
      }
      return url.href.replace(/\/+$/, '');
    }
    return `https://${hostPart(ctx, 'azure_resource_name', RESOURCE)}.services.ai.azure.com/models`;
  },
  endpoints: {
    chatComplete: (ctx) => ({
      method: 'POST',
      path: `/chat/completions?api-version=${encodeURIComponent(optionString(ctx, 'azure_api_version') ?? AZURE_AI_API_VERSION)}`,
    }),
    embed: (ctx) => ({ method: 'POST', path: `/embeddings?api-version=${encodeURIComponent(optionString(ctx, 'azure_api_version') ?? AZURE_AI_API_VERSION)}` }),
  },
  // Unknown parameters are refused by the service unless this header lets them through.
  optionHeaders: { azure_extra_parameters: 'extra-parameters' },
  authenticate: azureAuth,
  ...passThrough,
});
