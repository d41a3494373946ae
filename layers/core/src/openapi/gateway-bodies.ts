/**
 * The schema behind each gateway validator, with a request the validator accepts. The route table
 * (gateway/routes.ts) names validators, not schemas; this map joins them so the OpenAPI document
 * shows the very schema that validates, and a test keeps every validated route in it.
 */
import type * as z from 'zod/mini';
import type { EndpointSpec } from '../gateway/endpoint.ts';
import { parseSpeechRequest, speechRequestSchema } from '../gateway/validate/audio.ts';
import { batchRequestSchema, parseBatchRequest } from '../gateway/validate/batches.ts';
import { chatRequestSchema, parseChatRequest } from '../gateway/validate/chat.ts';
import { completionRequestSchema, parseCompletionRequest } from '../gateway/validate/completions.ts';
import { embeddingRequestSchema, parseEmbeddingRequest } from '../gateway/validate/embeddings.ts';
import { fineTuningRequestSchema, parseFineTuningRequest } from '../gateway/validate/fine-tuning.ts';
import { imageGenerationSchema, parseImageGeneration } from '../gateway/validate/images.ts';
import { moderationRequestSchema, parseModerationRequest } from '../gateway/validate/moderations.ts';
import { parseRerankRequest, rerankRequestSchema } from '../gateway/validate/rerank.ts';
import { parseResponseRequest, responseRequestSchema } from '../gateway/validate/responses.ts';
import {
  clientSecretRequestSchema,
  parseClientSecretRequest,
  parseRealtimeSessionRequest,
  realtimeSessionRequestSchema,
} from '../gateway/validate/realtime.ts';

export interface DocumentedBody {
  schema: z.ZodMiniType;
  example: Record<string, unknown>;
}

type Validator = NonNullable<EndpointSpec['validate']>;

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] };

export const GATEWAY_BODIES: ReadonlyMap<Validator, DocumentedBody> = new Map<Validator, DocumentedBody>([
  [parseChatRequest, { schema: chatRequestSchema, example: chat }],
  [parseCompletionRequest, { schema: completionRequestSchema, example: { model: 'gpt-3.5-turbo-instruct', prompt: 'Say hello', max_tokens: 16 } }],
  [parseEmbeddingRequest, { schema: embeddingRequestSchema, example: { model: 'text-embedding-3-small', input: 'The food was delicious' } }],
  [parseImageGeneration, { schema: imageGenerationSchema, example: { model: 'dall-e-3', prompt: 'A lighthouse at dawn', size: '1024x1024' } }],
  [parseSpeechRequest, { schema: speechRequestSchema, example: { model: 'tts-1', input: 'Hello there', voice: 'alloy' } }],
  [parseModerationRequest, { schema: moderationRequestSchema, example: { input: 'I want to hug everyone' } }],
  [
    parseRerankRequest,
    { schema: rerankRequestSchema, example: { model: 'rerank-english-v3.0', query: 'capital of France', documents: ['Paris is in France', 'Berlin'] } },
  ],
  [parseBatchRequest, { schema: batchRequestSchema, example: { input_file_id: 'file-abc123', endpoint: '/v1/chat/completions', completion_window: '24h' } }],
  [parseFineTuningRequest, { schema: fineTuningRequestSchema, example: { model: 'gpt-4o-mini-2024-07-18', training_file: 'file-abc123' } }],
  [parseResponseRequest, { schema: responseRequestSchema, example: { model: 'gpt-4o-mini', input: 'Tell me a joke' } }],
  [
    parseClientSecretRequest,
    {
      schema: clientSecretRequestSchema,
      example: { expires_after: { anchor: 'created_at', seconds: 600 }, session: { type: 'realtime', model: 'gpt-realtime' } },
    },
  ],
  [parseRealtimeSessionRequest, { schema: realtimeSessionRequestSchema, example: { model: 'gpt-4o-realtime-preview', instructions: 'Be brief.' } }],
]);

/** Anthropic's Messages format (`/v1/messages`): checked as the chat request it becomes. */
export const ANTHROPIC_EXAMPLE = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] };
