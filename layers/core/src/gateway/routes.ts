/**
 * The gateway's routes: every unified endpoint as data (method, OpenAI path, how its body is read
 * and validated), all through one pipeline, and the passthrough as the app's fallback for every
 * other `/v1` path. Paths are OpenAI's; `{name}` parts are path parameters.
 */
import type { RouteModule } from '../http/route-module.ts';
import type { RuntimeBindings } from '../http/bodies.ts';
import { lazyDialect, type DialectLoader } from './dialect.ts';
import type { EndpointSpec, HttpMethod } from './endpoint.ts';
import { listModels, retrieveModel } from './models.ts';
import { handleBatches, type BatchOperation } from './batches-held.ts';
import { handleFiles, type FileOperation } from './files/held.ts';
import { passthrough } from './passthrough.ts';
import type { OwnedPath } from './paths.ts';
import { upgradeRequired } from './realtime/upgrade-required.ts';
import { handleGatewayRequest } from './pipeline.ts';
import { checkTranscriptionForm, checkTranslationForm, parseSpeechRequest } from './validate/audio.ts';
import { mapBatchStatus } from './validate/batch-status.ts';
import { parseBatchRequest } from './validate/batches.ts';
import { parseChatRequest } from './validate/chat.ts';
import { parseCompletionRequest } from './validate/completions.ts';
import { parseEmbeddingRequest } from './validate/embeddings.ts';
import { checkFileUploadForm } from './validate/files.ts';
import { parseFineTuningRequest } from './validate/fine-tuning.ts';
import { checkImageEditForm, checkImageVariationForm, parseImageGeneration } from './validate/images.ts';
import { DEFAULT_MODERATION_MODEL, parseModerationRequest } from './validate/moderations.ts';
import { parseRerankRequest, sortRerankAnswer } from './validate/rerank.ts';
import { parseResponseRequest } from './validate/responses.ts';
import { clientSecretModel, parseClientSecretRequest, parseRealtimeSessionRequest } from './validate/realtime.ts';

export interface GatewayRoute {
  /** OpenAI's path below `/v1`, e.g. `/files/{file_id}/content`. */
  path: string;
  spec: EndpointSpec;
  /** A wire format other than OpenAI's that wraps the pipeline (dialect.ts), imported on first use. */
  dialect?: DialectLoader;
  /** `/v1/files`: held by the gateway unless the request names a provider (files/held.ts). */
  held?: FileOperation;
  /** `/v1/batches`: run by the gateway for held files and `immediate`, else the provider's (batches-held.ts). */
  batch?: BatchOperation;
}

/** Anthropic's Messages format, routed as the chat request it stands for (gateway/messages.ts). */
const anthropic = (kind: 'messages' | 'count_tokens'): DialectLoader => lazyDialect(() => import('./messages.ts').then((m) => m.anthropicDialect(kind)));

const paramsOf = (path: string): string[] => [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1] as string);

function route(method: HttpMethod, path: string, spec: Omit<EndpointSpec, 'method' | 'params'>): GatewayRoute {
  const params = paramsOf(path);
  return { path, spec: { ...spec, method, ...(params.length ? { params } : {}) } };
}

/** The assistants family shares one provider template; the OpenAI path goes below it. */
function assistants(method: HttpMethod, path: string, stream = false): GatewayRoute {
  return route(method, path, {
    endpoint: 'assistants',
    path,
    body: method === 'POST' ? 'json' : 'none',
    optionalBody: true,
    forwardHeaders: ['openai-beta'],
    ...(stream ? { stream } : {}),
  });
}

const none = { body: 'none' } as const;
/** Audio and image uploads take OpenAI's own limits (25 MB, 50 MB); other bodies their kind's default. */
const MiB = 1 << 20;

export const GATEWAY_ROUTES: readonly GatewayRoute[] = [
  route('POST', '/chat/completions', { endpoint: 'chatComplete', body: 'json', validate: parseChatRequest, stream: true, cacheable: true }),
  route('POST', '/completions', { endpoint: 'complete', body: 'json', validate: parseCompletionRequest, stream: true, cacheable: true }),
  // A saved prompt rendered into a chat request (gateway/prompt-input.ts), then the chat pipeline.
  route('POST', '/prompts/{promptId}/completions', {
    endpoint: 'chatComplete',
    body: 'json',
    validate: parseChatRequest,
    stream: true,
    cacheable: true,
    prompt: 'completions',
  }),
  route('POST', '/embeddings', { endpoint: 'embed', body: 'json', validate: parseEmbeddingRequest, cacheable: true }),
  route('POST', '/images/generations', { endpoint: 'imageGenerate', body: 'json', validate: parseImageGeneration, stream: true }),
  route('POST', '/images/edits', { endpoint: 'imageEdit', body: 'multipart', validateForm: checkImageEditForm, stream: true, maxBodyBytes: 50 * MiB }),
  route('POST', '/images/variations', { endpoint: 'imageVariation', body: 'multipart', validateForm: checkImageVariationForm, maxBodyBytes: 50 * MiB }),
  route('POST', '/audio/speech', { endpoint: 'createSpeech', body: 'json', validate: parseSpeechRequest }),
  route('POST', '/audio/transcriptions', {
    endpoint: 'createTranscription',
    body: 'multipart',
    validateForm: checkTranscriptionForm,
    stream: true,
    maxBodyBytes: 25 * MiB,
  }),
  route('POST', '/audio/translations', { endpoint: 'createTranslation', body: 'multipart', validateForm: checkTranslationForm, maxBodyBytes: 25 * MiB }),
  route('POST', '/moderations', {
    endpoint: 'moderate',
    body: 'json',
    validate: parseModerationRequest,
    defaults: { model: DEFAULT_MODERATION_MODEL },
    cacheable: true,
  }),
  route('POST', '/rerank', { endpoint: 'rerank', body: 'json', validate: parseRerankRequest, cacheable: true, transformAnswer: sortRerankAnswer }),
  { ...route('POST', '/messages', { endpoint: 'chatComplete', body: 'json', validate: parseChatRequest, stream: true }), dialect: anthropic('messages') },
  { ...route('POST', '/messages/count_tokens', { endpoint: 'chatComplete', body: 'json', validate: parseChatRequest }), dialect: anthropic('count_tokens') },

  { ...route('POST', '/files', { endpoint: 'uploadFile', body: 'multipart', validateForm: checkFileUploadForm }), held: 'upload' },
  { ...route('GET', '/files', { endpoint: 'listFiles', ...none }), held: 'list' },
  { ...route('GET', '/files/{file_id}', { endpoint: 'retrieveFile', ...none }), held: 'retrieve' },
  { ...route('DELETE', '/files/{file_id}', { endpoint: 'deleteFile', ...none }), held: 'delete' },
  { ...route('GET', '/files/{file_id}/content', { endpoint: 'retrieveFileContent', ...none }), held: 'content' },

  { ...route('POST', '/batches', { endpoint: 'createBatch', body: 'json', validate: parseBatchRequest, transformAnswer: mapBatchStatus }), batch: 'create' },
  { ...route('GET', '/batches', { endpoint: 'listBatches', ...none, transformAnswer: mapBatchStatus }), batch: 'list' },
  { ...route('GET', '/batches/{batch_id}', { endpoint: 'retrieveBatch', ...none, transformAnswer: mapBatchStatus }), batch: 'retrieve' },
  { ...route('POST', '/batches/{batch_id}/cancel', { endpoint: 'cancelBatch', ...none, transformAnswer: mapBatchStatus }), batch: 'cancel' },
  { ...route('GET', '/batches/{batch_id}/output', { endpoint: 'getBatchOutput', ...none }), batch: 'output' },

  route('POST', '/fine_tuning/jobs', { endpoint: 'createFinetune', body: 'json', validate: parseFineTuningRequest }),
  route('GET', '/fine_tuning/jobs', { endpoint: 'listFinetunes', ...none }),
  route('GET', '/fine_tuning/jobs/{job_id}', { endpoint: 'retrieveFinetune', ...none }),
  route('POST', '/fine_tuning/jobs/{job_id}/cancel', { endpoint: 'cancelFinetune', ...none }),
  route('GET', '/fine_tuning/jobs/{job_id}/events', { endpoint: 'listFinetuneEvents', ...none }),
  route('GET', '/fine_tuning/jobs/{job_id}/checkpoints', { endpoint: 'listFinetuneCheckpoints', ...none }),

  route('POST', '/responses', { endpoint: 'createModelResponse', body: 'json', validate: parseResponseRequest, stream: true, prompt: 'responses' }),
  // `?stream=true` replays a background response as a stream.
  route('GET', '/responses/{response_id}', { endpoint: 'getModelResponse', ...none, stream: true }),
  route('DELETE', '/responses/{response_id}', { endpoint: 'deleteModelResponse', ...none }),
  route('GET', '/responses/{response_id}/input_items', { endpoint: 'listResponseInputItems', ...none }),

  route('POST', '/realtime/client_secrets', {
    endpoint: 'createRealtimeClientSecret',
    body: 'json',
    validate: parseClientSecretRequest,
    modelOf: clientSecretModel,
    modelField: 'session.model',
    forwardHeaders: ['openai-beta'],
    prompt: 'realtime',
  }),
  route('POST', '/realtime/sessions', {
    endpoint: 'createRealtimeSession',
    body: 'json',
    validate: parseRealtimeSessionRequest,
    forwardHeaders: ['openai-beta'],
    prompt: 'realtime',
  }),

  assistants('POST', '/assistants'),
  assistants('GET', '/assistants'),
  assistants('GET', '/assistants/{assistant_id}'),
  assistants('POST', '/assistants/{assistant_id}'),
  assistants('DELETE', '/assistants/{assistant_id}'),
  assistants('POST', '/threads'),
  // Before /threads/{thread_id}, which would take "runs" for an id.
  assistants('POST', '/threads/runs', true),
  assistants('GET', '/threads/{thread_id}'),
  assistants('POST', '/threads/{thread_id}'),
  assistants('DELETE', '/threads/{thread_id}'),
  assistants('POST', '/threads/{thread_id}/messages'),
  assistants('GET', '/threads/{thread_id}/messages'),
  assistants('GET', '/threads/{thread_id}/messages/{message_id}'),
  assistants('POST', '/threads/{thread_id}/messages/{message_id}'),
  assistants('DELETE', '/threads/{thread_id}/messages/{message_id}'),
  assistants('POST', '/threads/{thread_id}/runs', true),
  assistants('GET', '/threads/{thread_id}/runs'),
  assistants('GET', '/threads/{thread_id}/runs/{run_id}'),
  assistants('POST', '/threads/{thread_id}/runs/{run_id}'),
  assistants('POST', '/threads/{thread_id}/runs/{run_id}/cancel'),
  assistants('POST', '/threads/{thread_id}/runs/{run_id}/submit_tool_outputs', true),
  assistants('GET', '/threads/{thread_id}/runs/{run_id}/steps'),
  assistants('GET', '/threads/{thread_id}/runs/{run_id}/steps/{step_id}'),
];

/** Every path a route of this module serves, which the passthrough never takes in any spelling. */
const OWNED: readonly OwnedPath[] = [
  { method: 'GET', path: '/models' },
  { method: 'GET', path: '/models/{model+}' },
  { method: 'GET', path: '/realtime' },
  ...GATEWAY_ROUTES.map((r) => ({ method: r.spec.method, path: r.path })),
];

const honoPath = (path: string): string => `/v1${path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1')}`;

export const gatewayModule: RouteModule = (app, deps) => {
  // The model catalog (gateway/models.ts), answered by the gateway itself.
  app.get('/v1/models', (c) => listModels(c.req.raw, deps));
  app.get('/v1/models/:model{.+}', (c) => retrieveModel(c.req.raw, deps, c.req.param('model')));
  app.get('/v1/realtime', () => upgradeRequired());
  for (const { path, spec, dialect, held, batch } of GATEWAY_ROUTES) {
    app.on(spec.method, honoPath(path), async (c) => {
      const pipeline = async () =>
        handleGatewayRequest(
          spec,
          c.req.raw,
          deps,
          c.env as RuntimeBindings | undefined,
          spec.params ? { params: c.req.param() as Record<string, string> } : undefined,
          dialect ? await dialect() : undefined,
        );
      if (held) return handleFiles(held, c.req.raw, deps, c.req.param('file_id'), pipeline);
      if (batch) return handleBatches(batch, c.req.raw, deps, c.req.param('batch_id'), pipeline);
      return pipeline();
    });
  }
  // Every other /v1 path, after every route of every module.
  return passthrough(deps, OWNED);
};
