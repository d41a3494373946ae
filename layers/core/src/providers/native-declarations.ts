/**
 * The native-format providers as registry data: id, name, documented base URL and the endpoints
 * they serve. Only data, so that the registry (and the gateway's cold start) knows them without
 * loading their transforms, which `providers/native/index.ts` holds and the gateway imports on first
 * use. Each native module is built from its declaration here (`providers/native/define.ts`).
 */
import type { ProviderDefinition } from './types.ts';

/** A native provider's declaration; the endpoint keys stay literal so its module can be checked against them. */
function native<const E extends ProviderDefinition['endpoints']>(
  id: string,
  name: string,
  baseUrl: string,
  auth: ProviderDefinition['auth'],
  endpoints: E,
): ProviderDefinition & { readonly endpoints: E } {
  return { id, name, baseUrl, auth, endpoints, native: true };
}

export const anthropic = native(
  'anthropic',
  'Anthropic',
  'https://api.anthropic.com/v1',
  { kind: 'header', header: 'x-api-key' },
  { chatComplete: '/messages' },
);

export const bedrock = native(
  'bedrock',
  'Amazon Bedrock',
  'https://bedrock-runtime.{aws_region}.amazonaws.com',
  { kind: 'bearer' },
  {
    chatComplete: '/model/{model}/converse',
    embed: '/model/{model}/invoke',
    imageGenerate: '/model/{model}/invoke',
    rerank: '/rerank',
  },
);

export const google = native(
  'google',
  'Google Gemini (AI Studio)',
  'https://generativelanguage.googleapis.com/v1beta',
  { kind: 'header', header: 'x-goog-api-key' },
  {
    chatComplete: '/models/{model}:generateContent',
    embed: '/models/{model}:batchEmbedContents',
  },
);

export const vertexAI = native(
  'vertex-ai',
  'Google Vertex AI',
  'https://{vertex_region}-aiplatform.googleapis.com/v1/projects/{vertex_project_id}/locations/{vertex_region}',
  { kind: 'bearer' },
  { chatComplete: '/publishers/google/models/{model}:generateContent', embed: '/publishers/google/models/{model}:predict' },
);

export const azureOpenAI = native(
  'azure-openai',
  'Azure OpenAI',
  'https://{azure_resource_name}.openai.azure.com/openai',
  { kind: 'header', header: 'api-key' },
  {
    chatComplete: '/deployments/{azure_deployment_id}/chat/completions',
    complete: '/deployments/{azure_deployment_id}/completions',
    embed: '/deployments/{azure_deployment_id}/embeddings',
    imageGenerate: '/deployments/{azure_deployment_id}/images/generations',
    imageEdit: '/deployments/{azure_deployment_id}/images/edits',
    createSpeech: '/deployments/{azure_deployment_id}/audio/speech',
    createTranscription: '/deployments/{azure_deployment_id}/audio/transcriptions',
    createTranslation: '/deployments/{azure_deployment_id}/audio/translations',
    // The deployment and api-version go in the query (gateway/realtime/targets.ts).
    realtime: '/realtime',
  },
);

export const azureAI = native(
  'azure-ai',
  'Azure AI Foundry',
  'https://{azure_resource_name}.services.ai.azure.com/models',
  { kind: 'header', header: 'api-key' },
  { chatComplete: '/chat/completions', embed: '/embeddings' },
);

export const cohere = native(
  'cohere',
  'Cohere',
  'https://api.cohere.com',
  { kind: 'bearer' },
  {
    chatComplete: '/v2/chat',
    embed: '/v2/embed',
    rerank: '/v2/rerank',
  },
);

/** Passthrough only (`/v1/endpoints/{name}/invocations`), SigV4-signed for the `sagemaker` service. */
export const sagemaker = native('sagemaker', 'Amazon SageMaker', 'https://runtime.sagemaker.{aws_region}.amazonaws.com', { kind: 'bearer' }, {});
