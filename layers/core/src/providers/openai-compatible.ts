/** The OpenAI-compatible base: most providers are this with another base URL. */
import type { EndpointType, ProviderDefinition } from './types.ts';

/** OpenAI's own paths (relative to `/v1`). */
export const OPENAI_ENDPOINTS: Readonly<Record<Exclude<EndpointType, 'proxy' | 'mcp'>, string>> = {
  chatComplete: '/chat/completions',
  complete: '/completions',
  embed: '/embeddings',
  imageGenerate: '/images/generations',
  imageEdit: '/images/edits',
  imageVariation: '/images/variations',
  createSpeech: '/audio/speech',
  createTranscription: '/audio/transcriptions',
  createTranslation: '/audio/translations',
  moderate: '/moderations',
  rerank: '/rerank',
  listModels: '/models',
  uploadFile: '/files',
  listFiles: '/files',
  retrieveFile: '/files/{file_id}',
  deleteFile: '/files/{file_id}',
  retrieveFileContent: '/files/{file_id}/content',
  createBatch: '/batches',
  listBatches: '/batches',
  retrieveBatch: '/batches/{batch_id}',
  cancelBatch: '/batches/{batch_id}/cancel',
  getBatchOutput: '/batches/{batch_id}/output',
  createFinetune: '/fine_tuning/jobs',
  listFinetunes: '/fine_tuning/jobs',
  retrieveFinetune: '/fine_tuning/jobs/{job_id}',
  cancelFinetune: '/fine_tuning/jobs/{job_id}/cancel',
  listFinetuneEvents: '/fine_tuning/jobs/{job_id}/events',
  listFinetuneCheckpoints: '/fine_tuning/jobs/{job_id}/checkpoints',
  createModelResponse: '/responses',
  getModelResponse: '/responses/{response_id}',
  deleteModelResponse: '/responses/{response_id}',
  listResponseInputItems: '/responses/{response_id}/input_items',
  assistants: '',
  realtime: '/realtime',
  createRealtimeClientSecret: '/realtime/client_secrets',
  createRealtimeSession: '/realtime/sessions',
};

/** The endpoints an OpenAI-wire provider typically serves (chat, completions, embeddings, models). */
export const COMMON_ENDPOINTS: Readonly<Partial<Record<EndpointType, string>>> = {
  chatComplete: OPENAI_ENDPOINTS.chatComplete,
  complete: OPENAI_ENDPOINTS.complete,
  embed: OPENAI_ENDPOINTS.embed,
  listModels: OPENAI_ENDPOINTS.listModels,
};

type OpenAIEndpoint = Exclude<EndpointType, 'proxy' | 'mcp'>;

/** OpenAI's paths for the named endpoints: what a declaration lists when the provider mirrors them. */
export function openAIPaths(...types: readonly OpenAIEndpoint[]): Partial<Record<EndpointType, string>> {
  const out: Partial<Record<EndpointType, string>> = {};
  for (const t of types) out[t] = OPENAI_ENDPOINTS[t];
  return out;
}

/** Endpoint families, for declarations. */
export const CHAT: readonly OpenAIEndpoint[] = ['chatComplete', 'listModels'];
export const TEXT: readonly OpenAIEndpoint[] = ['chatComplete', 'complete', 'listModels'];
export const AUDIO: readonly OpenAIEndpoint[] = ['createSpeech', 'createTranscription', 'createTranslation'];
export const FILES: readonly OpenAIEndpoint[] = ['uploadFile', 'listFiles', 'retrieveFile', 'deleteFile', 'retrieveFileContent'];
export const BATCHES: readonly OpenAIEndpoint[] = ['createBatch', 'listBatches', 'retrieveBatch', 'cancelBatch'];
export const RESPONSES: readonly OpenAIEndpoint[] = ['createModelResponse', 'getModelResponse', 'deleteModelResponse', 'listResponseInputItems'];

export function openAICompatible(
  id: string,
  name: string,
  baseUrl: string,
  overrides: Partial<Omit<ProviderDefinition, 'id' | 'name' | 'baseUrl'>> = {},
): ProviderDefinition {
  return { id, name, baseUrl, auth: { kind: 'bearer' }, endpoints: OPENAI_ENDPOINTS, ...overrides };
}
