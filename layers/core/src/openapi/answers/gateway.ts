/**
 * The success answers of the gateway routes, in OpenAI's shapes (the objects and field names of
 * OpenAI's published API reference; Anthropic's for `/v1/messages`). A provider's answer passes
 * through with fields of its own, so these objects are open: they name the fields every answer
 * has, and allow more. Objects Gantry answers itself (models, held files, batches) are tied to the
 * types that build them.
 */
import * as z from 'zod';
import type { BatchObject } from '../../batches/object.ts';
import type * as HeldFiles from '../../gateway/files/held.ts';
import type { ModelObject } from '../../gateway/models.ts';
import type { Answer } from './common.ts';
import { openAnswerOf } from './common.ts';

const open = z.looseObject;
const unixTime = z.number().int().describe('Unix seconds');
const nullableString = z.string().nullable();

const usage = open({ prompt_tokens: z.number().int(), completion_tokens: z.number().int().optional(), total_tokens: z.number().int() });

const chatMessage = open({
  role: z.literal('assistant'),
  content: nullableString,
  tool_calls: z.array(open({ id: z.string(), type: z.string(), function: open({ name: z.string(), arguments: z.string() }) })).optional(),
});

export const chatCompletion = open({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: unixTime,
  model: z.string(),
  choices: z.array(open({ index: z.number().int(), message: chatMessage, finish_reason: nullableString })),
  usage: usage.optional(),
}).describe('A chat completion (OpenAI: CreateChatCompletionResponse)');

export const completion = open({
  id: z.string(),
  object: z.literal('text_completion'),
  created: unixTime,
  model: z.string(),
  choices: z.array(open({ index: z.number().int(), text: z.string(), finish_reason: nullableString })),
  usage: usage.optional(),
}).describe('A completion (OpenAI: CreateCompletionResponse)');

export const embeddings = open({
  object: z.literal('list'),
  data: z.array(open({ object: z.literal('embedding'), index: z.number().int(), embedding: z.union([z.array(z.number()), z.string()]) })),
  model: z.string(),
  usage: open({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
}).describe('Embeddings (OpenAI: CreateEmbeddingResponse)');

export const images = open({
  created: unixTime,
  data: z.array(open({ url: z.string().optional(), b64_json: z.string().optional(), revised_prompt: z.string().optional() })),
}).describe('Images (OpenAI: ImagesResponse)');

export const transcription = open({ text: z.string() }).describe(
  'The text (OpenAI: CreateTranscriptionResponseJson); other `response_format`s answer text, SRT or VTT',
);

export const moderation = open({
  id: z.string(),
  model: z.string(),
  results: z.array(open({ flagged: z.boolean(), categories: z.record(z.string(), z.boolean()), category_scores: z.record(z.string(), z.number()) })),
}).describe('Moderation results (OpenAI: CreateModerationResponse)');

export const rerank = open({
  results: z.array(open({ index: z.number().int(), relevance_score: z.number() })),
}).describe('Documents by relevance, most relevant first');

export const anthropicMessage = open({
  id: z.string(),
  type: z.literal('message'),
  role: z.literal('assistant'),
  content: z.array(open({ type: z.string() })),
  model: z.string(),
  stop_reason: nullableString,
  usage: open({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
}).describe("An Anthropic Message (Anthropic's Messages API)");

export const tokenCount = open({ input_tokens: z.number().int() }).describe("Anthropic's token count");

export const file = openAnswerOf<ReturnType<typeof HeldFiles.fileObject>>()(
  open({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number().int(),
    created_at: unixTime,
    filename: z.string(),
    purpose: z.string(),
    status: z.string().optional(),
    expires_at: unixTime.nullable().optional(),
    status_details: nullableString.optional(),
  }).describe('A file (OpenAI: OpenAIFile)'),
);

/** OpenAI's list: `data`, and for cursor lists `first_id`, `last_id`, `has_more`. */
const listOf = <I extends z.ZodType>(item: I, what: string) =>
  open({
    object: z.literal('list'),
    data: z.array(item),
    first_id: nullableString.optional(),
    last_id: nullableString.optional(),
    has_more: z.boolean().optional(),
  }).describe(what);

export const deleted = (object: string) => open({ id: z.string(), object: z.literal(object), deleted: z.boolean() });

const batchTime = unixTime.nullable().optional();

export const batch = openAnswerOf<BatchObject>()(
  open({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.string(),
    errors: open({
      object: z.literal('list'),
      data: z.array(open({ code: z.string(), message: z.string(), param: nullableString.optional(), line: z.number().int().nullable().optional() })),
    })
      .nullable()
      .optional(),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled']),
    output_file_id: nullableString.optional(),
    error_file_id: nullableString.optional(),
    created_at: unixTime,
    in_progress_at: batchTime,
    expires_at: batchTime,
    finalizing_at: batchTime,
    completed_at: batchTime,
    failed_at: batchTime,
    expired_at: batchTime,
    cancelling_at: batchTime,
    cancelled_at: batchTime,
    request_counts: open({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }).optional(),
    usage: open({
      input_tokens: z.number().int(),
      input_tokens_details: open({ cached_tokens: z.number().int() }),
      output_tokens: z.number().int(),
      output_tokens_details: open({ reasoning_tokens: z.number().int() }),
      total_tokens: z.number().int(),
    }).optional(),
    metadata: z.record(z.string(), z.string()).nullable().optional(),
  }).describe('A batch (OpenAI: Batch)'),
);

export const fineTuningJob = open({
  id: z.string(),
  object: z.literal('fine_tuning.job'),
  created_at: unixTime,
  model: z.string(),
  status: z.string(),
  training_file: z.string(),
  fine_tuned_model: nullableString,
}).describe('A fine-tuning job (OpenAI: FineTuningJob)');

const fineTuningEvent = open({ id: z.string(), object: z.literal('fine_tuning.job.event'), created_at: unixTime, level: z.string(), message: z.string() });
const checkpoint = open({
  id: z.string(),
  object: z.literal('fine_tuning.job.checkpoint'),
  created_at: unixTime,
  fine_tuned_model_checkpoint: z.string(),
  step_number: z.number().int(),
});

export const response = open({
  id: z.string(),
  object: z.literal('response'),
  created_at: unixTime,
  status: z.string().optional(),
  model: z.string(),
  output: z.array(open({ type: z.string() })),
}).describe('A model response (OpenAI: Response)');

export const clientSecret = open({ value: z.string(), expires_at: unixTime }).describe('A realtime client secret (OpenAI: RealtimeCreateClientSecretResponse)');

export const realtimeSession = open({ client_secret: open({ value: z.string(), expires_at: unixTime }) }).describe(
  'A realtime session with its ephemeral key (OpenAI: RealtimeSessionCreateResponse)',
);

const assistant = open({ id: z.string(), object: z.literal('assistant'), created_at: unixTime, model: z.string() }).describe(
  'An assistant (OpenAI: AssistantObject)',
);
const thread = open({ id: z.string(), object: z.literal('thread'), created_at: unixTime }).describe('A thread (OpenAI: ThreadObject)');
const message = open({
  id: z.string(),
  object: z.literal('thread.message'),
  created_at: unixTime,
  thread_id: z.string(),
  role: z.string(),
  content: z.array(z.unknown()),
}).describe('A message (OpenAI: MessageObject)');
const run = open({
  id: z.string(),
  object: z.literal('thread.run'),
  created_at: unixTime,
  thread_id: z.string(),
  assistant_id: z.string(),
  status: z.string(),
}).describe('A run (OpenAI: RunObject)');
const runStep = open({
  id: z.string(),
  object: z.literal('thread.run.step'),
  created_at: unixTime,
  run_id: z.string(),
  type: z.string(),
  status: z.string(),
}).describe('A run step (OpenAI: RunStepObject)');

export const model = openAnswerOf<ModelObject>()(
  open({
    id: z.string(),
    object: z.literal('model'),
    created: unixTime,
    owned_by: z.string(),
    provider: z.string().optional().describe('Gantry: the provider of the catalog entry'),
    endpoint_types: z.array(z.string()).optional(),
    context_window: z.number().int().nullable().optional(),
    pricing: open({
      input_per_million: z.number().nullable(),
      output_per_million: z.number().nullable(),
      cached_input_per_million: z.number().nullable(),
      currency: z.literal('USD'),
    })
      .optional()
      .describe('USD per million tokens, as this caller is charged'),
  }).describe('A model (OpenAI: Model, with Gantry catalog fields)'),
);

const STREAM = 'Server-sent events (`data: {...}` chunks, then `data: [DONE]`) when the body says `stream: true`';
const json = (schema: z.ZodType, description: string, stream?: boolean): Answer => ({
  schema,
  description: stream ? `${description}; ${STREAM}` : description,
  ...(stream ? { stream: true } : {}),
});
const bytes = (contentType: string, description: string): Answer => ({ schema: z.string(), description, contentType });

/** The success answer of each gateway route, by `METHOD path` under /v1. */
const TABLE: Record<string, Answer> = {
  'POST /chat/completions': json(chatCompletion, 'A chat completion', true),
  'POST /completions': json(completion, 'A completion', true),
  'POST /prompts/{promptId}/completions': json(chatCompletion, "A chat completion of the prompt's request", true),
  'POST /embeddings': json(embeddings, 'Embeddings'),
  'POST /images/generations': json(images, 'Images', true),
  'POST /images/edits': json(images, 'Images', true),
  'POST /images/variations': json(images, 'Images'),
  'POST /audio/speech': bytes('audio/mpeg', 'The audio, in the format asked for (`response_format`, mp3 by default)'),
  'POST /audio/transcriptions': json(transcription, 'The transcription', true),
  'POST /audio/translations': json(transcription, 'The translation (in English)'),
  'POST /moderations': json(moderation, 'Moderation results'),
  'POST /rerank': json(rerank, 'The documents by relevance'),
  'POST /messages': json(anthropicMessage, 'An Anthropic Message; Anthropic stream events with `stream: true`', true),
  'POST /messages/count_tokens': json(tokenCount, 'The token count'),
  'POST /files': json(file, 'The file'),
  'GET /files': json(listOf(file, 'Files (OpenAI: ListFilesResponse)'), 'Files'),
  'GET /files/{file_id}': json(file, 'The file'),
  'DELETE /files/{file_id}': json(deleted('file'), 'The deletion (OpenAI: DeleteFileResponse)'),
  'GET /files/{file_id}/content': bytes('application/octet-stream', "The file's bytes"),
  'POST /batches': json(batch, 'The batch'),
  'GET /batches': json(listOf(batch, 'Batches (OpenAI: ListBatchesResponse)'), 'Batches'),
  'GET /batches/{batch_id}': json(batch, 'The batch'),
  'POST /batches/{batch_id}/cancel': json(batch, 'The batch, cancelling'),
  'GET /batches/{batch_id}/output': bytes('application/jsonl', "The batch's output file: one JSON line per request"),
  'POST /fine_tuning/jobs': json(fineTuningJob, 'The job'),
  'GET /fine_tuning/jobs': json(listOf(fineTuningJob, 'Jobs'), 'Jobs'),
  'GET /fine_tuning/jobs/{job_id}': json(fineTuningJob, 'The job'),
  'POST /fine_tuning/jobs/{job_id}/cancel': json(fineTuningJob, 'The job, cancelled'),
  'GET /fine_tuning/jobs/{job_id}/events': json(listOf(fineTuningEvent, "The job's events"), "The job's events"),
  'GET /fine_tuning/jobs/{job_id}/checkpoints': json(listOf(checkpoint, "The job's checkpoints"), "The job's checkpoints"),
  'POST /responses': json(response, 'The response', true),
  'GET /responses/{response_id}': json(response, 'The response; with `?stream=true` its events', true),
  'DELETE /responses/{response_id}': json(deleted('response'), 'The deletion'),
  'GET /responses/{response_id}/input_items': json(listOf(open({ type: z.string() }), 'Input items'), 'The input items'),
  'POST /realtime/client_secrets': json(clientSecret, 'The client secret'),
  'POST /realtime/sessions': json(realtimeSession, 'The session'),
  'POST /assistants': json(assistant, 'The assistant'),
  'GET /assistants': json(listOf(assistant, 'Assistants'), 'Assistants'),
  'GET /assistants/{assistant_id}': json(assistant, 'The assistant'),
  'POST /assistants/{assistant_id}': json(assistant, 'The assistant'),
  'DELETE /assistants/{assistant_id}': json(deleted('assistant.deleted'), 'The deletion'),
  'POST /threads': json(thread, 'The thread'),
  'POST /threads/runs': json(run, 'The run', true),
  'GET /threads/{thread_id}': json(thread, 'The thread'),
  'POST /threads/{thread_id}': json(thread, 'The thread'),
  'DELETE /threads/{thread_id}': json(deleted('thread.deleted'), 'The deletion'),
  'POST /threads/{thread_id}/messages': json(message, 'The message'),
  'GET /threads/{thread_id}/messages': json(listOf(message, 'Messages'), 'Messages'),
  'GET /threads/{thread_id}/messages/{message_id}': json(message, 'The message'),
  'POST /threads/{thread_id}/messages/{message_id}': json(message, 'The message'),
  'DELETE /threads/{thread_id}/messages/{message_id}': json(deleted('thread.message.deleted'), 'The deletion'),
  'POST /threads/{thread_id}/runs': json(run, 'The run', true),
  'GET /threads/{thread_id}/runs': json(listOf(run, 'Runs'), 'Runs'),
  'GET /threads/{thread_id}/runs/{run_id}': json(run, 'The run'),
  'POST /threads/{thread_id}/runs/{run_id}': json(run, 'The run'),
  'POST /threads/{thread_id}/runs/{run_id}/cancel': json(run, 'The run, cancelling'),
  'POST /threads/{thread_id}/runs/{run_id}/submit_tool_outputs': json(run, 'The run', true),
  'GET /threads/{thread_id}/runs/{run_id}/steps': json(listOf(runStep, 'Run steps'), 'Run steps'),
  'GET /threads/{thread_id}/runs/{run_id}/steps/{step_id}': json(runStep, 'The run step'),
  'GET /models': json(listOf(model, 'Models (OpenAI: ListModelsResponse)'), 'The models'),
  'GET /models/{model}': json(model, 'The model'),
};

/** The documented success of a gateway route (its path under /v1), or undefined when the table lacks it. */
export const gatewayAnswer = (method: string, path: string): Answer | undefined => TABLE[`${method} ${path}`];

/** Every `METHOD path` the table documents (a test compares them with the route table). */
export const DOCUMENTED_GATEWAY_ROUTES: readonly string[] = Object.keys(TABLE);
