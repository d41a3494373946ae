/**
 * Google: Gemini on AI Studio (`google`, API key) and on Vertex AI (`vertex-ai`, OAuth token from a
 * service-account key, project and region from options), generateContent / streamGenerateContent
 * (SSE with alt=sse) and embeddings; on Vertex also Claude (rawPredict / streamRawPredict, the
 * Anthropic format with `anthropic_version` in the body) and partner models through Vertex's
 * OpenAI-compatible endpoint.
 */
import { ValidationError } from '../../http/errors.ts';
import type { OpenAIErrorBody } from '../../http/errors.ts';
import type { ChatUsage, FinishReason, NativeProvider, ProviderRequestContext, StreamTransformer } from '../transform.ts';
import * as declared from '../native-declarations.ts';
import { defineNative } from './define.ts';
import { anthropicError, anthropicStream, fromAnthropicMessage, toAnthropicBody } from './anthropic.ts';
import { isRecord } from '../../http/json.ts';
import {
  embeddingInputs,
  hostPart,
  joinText,
  newToolCallId,
  parseArguments,
  readChatInput,
  refuseUnsupported,
  type MediaPart,
  type UserPart,
} from './chat-input.ts';
import {
  ChoiceBuilder,
  ChunkWriter,
  chatCompletion,
  embeddingList,
  errorSnippet,
  makeUsage,
  providerError,
  type ChoiceOut,
  sseStreamTransformer,
} from './chat-output.ts';
import { googleAccessToken } from './google-auth.ts';
import { openAIStream } from './openai-stream.ts';
import { eventJson, sseReader } from './sse-in.ts';

const SUPPORTED = new Set(['n', 'logprobs', 'top_logprobs', 'frequency_penalty', 'presence_penalty', 'seed', 'top_k', 'thinking', 'reasoning_effort']);
/** Thinking budgets for OpenAI's reasoning_effort. */
const EFFORT_BUDGET: Readonly<Record<string, number>> = { none: 0, minimal: 0, low: 1024, medium: 8192, high: 24576 };
/** A thought signature rides in the tool call id so that it comes back with the call (Gemini requires it). */
const SIGNATURE_MARK = '__thought__';

type Part = Record<string, unknown>;

// ---- JSON Schema -> Gemini's schema (an OpenAPI subset) ----

const SCHEMA_KEYS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);

/**
 * Keeps what Gemini's schema accepts: local `$ref`s are inlined, `["t", "null"]` types become
 * `nullable`, `const` an `enum`, `oneOf` an `anyOf`; other keywords (additionalProperties,
 * $schema ...) are left out because Gemini rejects them.
 */
export function geminiSchema(schema: unknown, root: unknown = schema, depth = 0): unknown {
  if (!isRecord(schema) || depth > 24) return isRecord(schema) ? { type: 'object' } : schema;
  if (typeof schema.$ref === 'string') {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref);
    const defs = isRecord(root) && m ? root[m[1] as string] : undefined;
    const target = isRecord(defs) && m ? defs[decodeURIComponent(m[2] as string)] : undefined;
    return geminiSchema(target ?? { type: 'object' }, root, depth + 1);
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'type' && Array.isArray(v)) {
      const types = v.filter((t) => t !== 'null');
      if (types.length !== v.length) out.nullable = true;
      if (types.length === 1) out.type = types[0];
      else if (types.length > 1) out.anyOf = types.map((t) => ({ type: t }));
    } else if (k === 'const') out.enum = [v];
    else if (k === 'oneOf' || k === 'anyOf') {
      const options = Array.isArray(v) ? v : [];
      const nonNull = options.filter((o) => !(isRecord(o) && o.type === 'null'));
      if (nonNull.length !== options.length) out.nullable = true;
      if (nonNull.length === 1) Object.assign(out, geminiSchema(nonNull[0], root, depth + 1));
      else out.anyOf = nonNull.map((o) => geminiSchema(o, root, depth + 1));
    } else if (k === 'properties' && isRecord(v)) {
      out.properties = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, geminiSchema(s, root, depth + 1)]));
    } else if (k === 'items') out.items = geminiSchema(v, root, depth + 1);
    else if (SCHEMA_KEYS.has(k)) out[k] = v;
  }
  return out;
}

// ---- request ----

const guessMime = (url: string): string => {
  const ext = (/\.(\w+)(?:$|\?)/.exec(url)?.[1] ?? '').toLowerCase();
  const known: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    webp: 'image/webp',
    pdf: 'application/pdf',
    mp3: 'audio/mpeg',
    wav: 'audio/wav',
    mp4: 'video/mp4',
    txt: 'text/plain',
  };
  return known[ext] ?? 'image/jpeg';
};

function mediaPart(p: MediaPart): Part {
  if (p.data) return { inlineData: { mimeType: p.data.mediaType, data: p.data.base64 } };
  const url = p.url ?? '';
  return { fileData: { mimeType: guessMime(url), fileUri: url } };
}

const userParts = (parts: readonly UserPart[]): Part[] =>
  parts.flatMap((p) => (p.type === 'text' ? (p.text === '' ? [] : [{ text: p.text }]) : [mediaPart(p)]));

/** Tool output as the Struct Gemini wants: a JSON object as it is, anything else under `content`. */
function toolResponse(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) return parsed;
  } catch {
    // plain text
  }
  return { content: text };
}

function splitId(id: string): { id: string; signature?: string } {
  const at = id.indexOf(SIGNATURE_MARK);
  return at < 0 ? { id } : { id: id.slice(0, at), signature: id.slice(at + SIGNATURE_MARK.length) };
}

export function toGeminiBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext, provider: string): Record<string, unknown> {
  refuseUnsupported(body, provider, SUPPORTED);
  const input = readChatInput(body, ctx);
  const contents: { role: 'user' | 'model'; parts: Part[] }[] = [];
  const system: Part[] = [];
  const push = (role: 'user' | 'model', parts: Part[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const turn of input.turns) {
    if (turn.role === 'system') system.push(...turn.parts.map((p) => ({ text: p.text })));
    else if (turn.role === 'user') push('user', userParts(turn.parts));
    else if (turn.role === 'tool') push('user', [{ functionResponse: { name: turn.name, response: toolResponse(joinText(turn.parts)) } }]);
    else {
      const parts: Part[] = [];
      for (const b of turn.blocks) if (b.type === 'thinking' && b.signature) parts.push({ text: b.thinking, thought: true, thoughtSignature: b.signature });
      for (const p of turn.parts) if (p.text !== '') parts.push({ text: p.text });
      turn.toolCalls.forEach((c, j) => {
        const { signature } = splitId(c.id);
        const call: Part = { functionCall: { name: c.name, args: parseArguments(c.arguments, `${turn.path}.tool_calls[${j}]`) } };
        if (signature) call.thoughtSignature = signature;
        parts.push(call);
      });
      push('model', parts);
    }
  }

  const out: Record<string, unknown> = { ...input.extra, contents };
  if (system.length) out.systemInstruction = { parts: system };
  const config: Record<string, unknown> = isRecord(input.extra.generationConfig) ? { ...input.extra.generationConfig } : {};
  if (input.maxTokens !== undefined) config.maxOutputTokens = input.maxTokens;
  if (input.temperature !== undefined) config.temperature = input.temperature;
  if (input.topP !== undefined) config.topP = input.topP;
  if (input.topK !== undefined) config.topK = input.topK;
  if (input.stop.length) config.stopSequences = input.stop;
  if (input.n !== undefined && input.n !== 1) config.candidateCount = input.n;
  if (input.seed !== undefined) config.seed = input.seed;
  if (input.presencePenalty !== undefined) config.presencePenalty = input.presencePenalty;
  if (input.frequencyPenalty !== undefined) config.frequencyPenalty = input.frequencyPenalty;
  if (input.logprobs) {
    config.responseLogprobs = true;
    if (input.topLogprobs !== undefined) config.logprobs = input.topLogprobs;
  }
  const rf = input.responseFormat;
  if (rf) {
    config.responseMimeType = 'application/json';
    if (rf.type === 'json_schema') config.responseSchema = geminiSchema(rf.schema);
  }
  const budget = input.thinking?.budgetTokens ?? (input.reasoningEffort !== undefined ? EFFORT_BUDGET[input.reasoningEffort] : undefined);
  if (input.reasoningEffort !== undefined && budget === undefined)
    throw ValidationError.field('reasoning_effort', 'must be none, minimal, low, medium or high');
  if (budget !== undefined) config.thinkingConfig = { thinkingBudget: budget, ...(!ctx.strictOpenAICompliance && budget > 0 ? { includeThoughts: true } : {}) };
  if (Object.keys(config).length) out.generationConfig = config;

  if (input.tools.length) {
    out.tools = [
      {
        functionDeclarations: input.tools.map((t) => ({
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          ...(t.parameters.properties && Object.keys(t.parameters.properties as object).length ? { parameters: geminiSchema(t.parameters) } : {}),
        })),
      },
    ];
    const c = input.toolChoice;
    if (c === 'none') out.toolConfig = { functionCallingConfig: { mode: 'NONE' } };
    else if (c === 'required') out.toolConfig = { functionCallingConfig: { mode: 'ANY' } };
    else if (typeof c === 'object') out.toolConfig = { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [c.name] } };
    else if (c === 'auto') out.toolConfig = { functionCallingConfig: { mode: 'AUTO' } };
  }
  return out;
}

// ---- response ----

const FINISH: Readonly<Record<string, FinishReason>> = {
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
  LANGUAGE: 'content_filter',
};
const finishOf = (reason: unknown): FinishReason => FINISH[String(reason)] ?? 'stop';

export function geminiUsage(u: unknown): ChatUsage {
  const n = (k: string) => (isRecord(u) && typeof u[k] === 'number' ? (u[k] as number) : 0);
  const prompt = n('promptTokenCount') + n('toolUsePromptTokenCount');
  const thoughts = n('thoughtsTokenCount');
  const completion = n('candidatesTokenCount') + thoughts;
  const total = n('totalTokenCount') || prompt + completion;
  return makeUsage(prompt, completion, { cacheRead: n('cachedContentTokenCount'), reasoning: thoughts, total });
}

const callId = (part: Record<string, unknown>, call: Record<string, unknown>): string => {
  const id = typeof call.id === 'string' && call.id ? call.id : newToolCallId();
  return typeof part.thoughtSignature === 'string' ? `${id}${SIGNATURE_MARK}${part.thoughtSignature}` : id;
};

function candidateChoice(c: Record<string, unknown>): ChoiceOut {
  const choice = new ChoiceBuilder(false);
  const content = isRecord(c.content) ? c.content : {};
  for (const part of Array.isArray(content.parts) ? content.parts : []) {
    if (!isRecord(part)) continue;
    if (isRecord(part.functionCall)) choice.tool(callId(part, part.functionCall), String(part.functionCall.name), JSON.stringify(part.functionCall.args ?? {}));
    else if (typeof part.text === 'string' && part.thought === true)
      choice.thinking(part.text, typeof part.thoughtSignature === 'string' ? part.thoughtSignature : undefined);
    else if (typeof part.text === 'string') choice.text(part.text);
  }
  return choice.build(finishOf(c.finishReason));
}

export function fromGemini(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const candidates = (Array.isArray(res.candidates) ? res.candidates : []).filter(isRecord);
  // A prompt blocked by safety settings has no candidates, only promptFeedback.blockReason.
  const choices = candidates.length ? candidates.map(candidateChoice) : [{ text: null, toolCalls: [], blocks: [], finishReason: 'content_filter' as const }];
  return chatCompletion(ctx, {
    id: typeof res.responseId === 'string' ? res.responseId : undefined,
    model: typeof res.modelVersion === 'string' ? res.modelVersion : undefined,
    choices,
    usage: geminiUsage(res.usageMetadata),
  });
}

function googleErrorOf(status: number, parsed: unknown): OpenAIErrorBody | undefined {
  const first = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!isRecord(first) || !isRecord(first.error)) return undefined;
  const e = first.error;
  return providerError(status, typeof e.message === 'string' ? e.message : 'Google error', typeof e.status === 'string' ? e.status : null);
}

export function googleError(status: number, text: string): OpenAIErrorBody {
  try {
    const parsed: unknown = JSON.parse(text);
    const body = googleErrorOf(status, parsed);
    if (body) return body;
  } catch {
    // not JSON
  }
  return providerError(status, errorSnippet(status, text));
}

/** streamGenerateContent (alt=sse): each event is a partial GenerateContentResponse. */
export function geminiStream(ctx: ProviderRequestContext): StreamTransformer {
  const writer = new ChunkWriter(ctx);
  let out = '';
  const reader = sseReader((event) => {
    const data = eventJson(event);
    if (!isRecord(data)) return;
    if (isRecord(data.error)) {
      const code = typeof data.error.code === 'number' ? data.error.code : 500;
      out += writer.error(googleErrorOf(code, data) ?? providerError(code, 'Google stream error'));
      return;
    }
    if (typeof data.responseId === 'string') writer.setId(data.responseId);
    if (typeof data.modelVersion === 'string') writer.setModel(data.modelVersion);
    if (isRecord(data.usageMetadata)) writer.usage(geminiUsage(data.usageMetadata));
    const candidates = (Array.isArray(data.candidates) ? data.candidates : []).filter(isRecord);
    if (candidates.length === 0 && isRecord(data.promptFeedback) && data.promptFeedback.blockReason) {
      out += writer.finish('content_filter');
      return;
    }
    for (const c of candidates) {
      const index = typeof c.index === 'number' ? c.index : 0;
      out += writer.start(index);
      const content = isRecord(c.content) ? c.content : {};
      for (const part of Array.isArray(content.parts) ? content.parts : []) {
        if (!isRecord(part)) continue;
        if (isRecord(part.functionCall)) {
          const id = callId(part, part.functionCall);
          out += writer.toolStart(id, id, String(part.functionCall.name), index);
          out += writer.toolArgs(id, JSON.stringify(part.functionCall.args ?? {}), index);
        } else if (typeof part.text === 'string' && part.thought === true) {
          out += writer.thinking({ thinking: part.text }, 0, index);
          if (typeof part.thoughtSignature === 'string') out += writer.thinking({ signature: part.thoughtSignature }, 0, index);
        } else if (typeof part.text === 'string') out += writer.text(part.text, index);
      }
      if (c.finishReason) out += writer.finish(finishOf(c.finishReason), index);
    }
  });
  return sseStreamTransformer(reader, writer, () => {
    const s = out;
    out = '';
    return s;
  });
}

// ---- embeddings ----

const taskType = (body: Readonly<Record<string, unknown>>): string | undefined =>
  typeof body.task_type === 'string' ? body.task_type : typeof body.input_type === 'string' ? body.input_type : undefined;

function studioEmbedBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  const task = taskType(body);
  return {
    requests: embeddingInputs(body).map((text) => ({
      model: `models/${studioModel(ctx)}`,
      content: { parts: [{ text }] },
      ...(task ? { taskType: task } : {}),
      ...(typeof body.dimensions === 'number' ? { outputDimensionality: body.dimensions } : {}),
    })),
  };
}

function vertexEmbedBody(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const task = taskType(body);
  const out: Record<string, unknown> = { instances: embeddingInputs(body).map((content) => (task ? { content, task_type: task } : { content })) };
  if (typeof body.dimensions === 'number') out.parameters = { outputDimensionality: body.dimensions };
  return out;
}

function embedResponse(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  let tokens = 0;
  let vectors: number[][] = [];
  if (Array.isArray(res.embeddings)) vectors = res.embeddings.map((e) => (isRecord(e) && Array.isArray(e.values) ? (e.values as number[]) : []));
  else if (Array.isArray(res.predictions)) {
    vectors = res.predictions.map((p) => {
      const e = isRecord(p) && isRecord(p.embeddings) ? p.embeddings : {};
      if (isRecord(e.statistics) && typeof e.statistics.token_count === 'number') tokens += e.statistics.token_count;
      return Array.isArray(e.values) ? (e.values as number[]) : [];
    });
  }
  return embeddingList(vectors, ctx.model, tokens, ctx.request.encoding_format);
}

// ---- providers ----

const studioModel = (ctx: ProviderRequestContext) => ctx.model.replace(/^models\//, '');

export const google: NativeProvider = defineNative(declared.google, {
  endpoints: {
    chatComplete: (ctx) => ({
      method: 'POST',
      path: `/models/${encodeURIComponent(studioModel(ctx))}:${ctx.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    }),
    embed: (ctx) => ({ method: 'POST', path: `/models/${encodeURIComponent(studioModel(ctx))}:batchEmbedContents` }),
  },
  authenticate(req, ctx) {
    if (!ctx.apiKey) throw ValidationError.field('authorization', 'a Gemini API key is required (Authorization: Bearer <key>)');
    return Promise.resolve({ ...req, headers: { ...req.headers, 'x-goog-api-key': ctx.apiKey } });
  },
  transformRequest: (endpoint, body, ctx) => (endpoint === 'embed' ? studioEmbedBody(body, ctx) : toGeminiBody(body, ctx, 'google')),
  transformResponse: (endpoint, json, ctx) => (endpoint === 'embed' ? embedResponse(json, ctx) : fromGemini(json, ctx)),
  transformStream: (_endpoint, ctx) => geminiStream(ctx),
  transformError: (status, text) => googleError(status, text),
});

export type VertexFamily = 'gemini' | 'anthropic' | 'openai';

/** Which API a Vertex model speaks: Claude the Anthropic format, `publisher/model` ids Vertex's OpenAI-compatible endpoint, the rest Gemini. */
export function vertexFamily(model: string): VertexFamily {
  if (/claude/i.test(model)) return 'anthropic';
  if (/^(google\/|publishers\/google\/models\/)/.test(model) || !model.includes('/')) return 'gemini';
  return 'openai';
}

const vertexModel = (ctx: ProviderRequestContext) => ctx.model.replace(/^(publishers\/[^/]+\/models\/|google\/|anthropic\/)/, '');

function vertexProject(ctx: ProviderRequestContext): string {
  const fromKey = (): string | undefined => {
    const raw = ctx.options.vertex_service_account_json;
    if (raw === undefined) return undefined;
    const parsed: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
    return isRecord(parsed) && typeof parsed.project_id === 'string' ? parsed.project_id : undefined;
  };
  let fallback: string | undefined;
  try {
    fallback = fromKey();
  } catch {
    fallback = undefined;
  }
  return hostPart(ctx, 'vertex_project_id', /^[a-z][a-z0-9.:-]{3,62}$/, fallback);
}

const vertexRegion = (ctx: ProviderRequestContext) => hostPart(ctx, 'vertex_region', /^[a-z]+(-[a-z]+\d*)*$/, 'us-central1');

function vertexChat(ctx: ProviderRequestContext): { method: 'POST'; path: string } {
  const family = vertexFamily(ctx.model);
  const model = encodeURIComponent(vertexModel(ctx));
  if (family === 'anthropic') return { method: 'POST', path: `/publishers/anthropic/models/${model}:${ctx.stream ? 'streamRawPredict' : 'rawPredict'}` };
  if (family === 'openai') return { method: 'POST', path: '/endpoints/openapi/chat/completions' };
  return { method: 'POST', path: `/publishers/google/models/${model}:${ctx.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}` };
}

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

export const vertexAI: NativeProvider = defineNative(declared.vertexAI, {
  baseUrl(ctx) {
    const region = vertexRegion(ctx);
    const host = region === 'global' ? 'aiplatform.googleapis.com' : `${region}-aiplatform.googleapis.com`;
    return `https://${host}/v1/projects/${vertexProject(ctx)}/locations/${region}`;
  },
  endpoints: {
    chatComplete: vertexChat,
    embed: (ctx) => ({ method: 'POST', path: `/publishers/google/models/${encodeURIComponent(vertexModel(ctx))}:predict` }),
  },
  async authenticate(req, ctx) {
    let token: string | undefined;
    if (ctx.options.vertex_service_account_json !== undefined) token = await googleAccessToken(ctx.options.vertex_service_account_json, ctx);
    else token = ctx.apiKey;
    if (!token) throw ValidationError.field('vertex_service_account_json', 'is required, or an OAuth access token as the bearer key');
    return { ...req, headers: { ...req.headers, authorization: `Bearer ${token}` } };
  },
  transformRequest(endpoint, body, ctx) {
    if (endpoint === 'embed') return vertexEmbedBody(body);
    const family = vertexFamily(ctx.model);
    if (family === 'anthropic') return toAnthropicBody(body, ctx, 'vertex-ai', VERTEX_ANTHROPIC_VERSION);
    if (family === 'openai')
      return ctx.stream ? { ...body, stream_options: { ...(isRecord(body.stream_options) ? body.stream_options : {}), include_usage: true } } : { ...body };
    return toGeminiBody(body, ctx, 'vertex-ai');
  },
  transformResponse(endpoint, json, ctx) {
    if (endpoint === 'embed') return embedResponse(json, ctx);
    const family = vertexFamily(ctx.model);
    if (family === 'anthropic') return fromAnthropicMessage(json, ctx);
    if (family === 'openai') return json;
    return fromGemini(json, ctx);
  },
  transformStream(_endpoint, ctx) {
    const family = vertexFamily(ctx.model);
    if (family === 'anthropic') return anthropicStream(ctx);
    if (family === 'openai') return openAIStream(ctx);
    return geminiStream(ctx);
  },
  transformError(status, text) {
    // Claude on Vertex may answer in Anthropic's error shape.
    const google = googleError(status, text);
    return google.error.message.startsWith('The provider answered') ? anthropicError(status, text) : google;
  },
});
