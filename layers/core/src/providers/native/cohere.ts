/**
 * Cohere's v2 API: chat (tools, JSON mode, streaming events), embed (input types) and rerank.
 * https://docs.cohere.com/reference/chat
 */
import { ValidationError } from '../../http/errors.ts';
import type { OpenAIErrorBody } from '../../http/errors.ts';
import type { ChatUsage, FinishReason, NativeProvider, ProviderRequestContext, StreamTransformer } from '../transform.ts';
import * as declared from '../native-declarations.ts';
import { defineNative } from './define.ts';
import { isRecord } from '../../http/json.ts';
import { embeddingInputs, joinText, readChatInput, refuseUnsupported, type UserPart } from './chat-input.ts';
import {
  ChoiceBuilder,
  ChunkWriter,
  chatCompletion,
  documentText,
  embeddingList,
  errorSnippet,
  makeUsage,
  providerError,
  rerankResult,
  sseStreamTransformer,
} from './chat-output.ts';
import { eventJson, sseReader } from './sse-in.ts';

const SUPPORTED = new Set(['frequency_penalty', 'presence_penalty', 'seed', 'top_k', 'thinking']);

function userContent(parts: readonly UserPart[], path: string): string | Record<string, unknown>[] {
  if (parts.every((p) => p.type === 'text')) return joinText(parts);
  return parts.map((p, j) => {
    if (p.type === 'text') return { type: 'text', text: p.text };
    if (p.type === 'image') return { type: 'image_url', image_url: { url: p.data ? `data:${p.data.mediaType};base64,${p.data.base64}` : p.url } };
    throw ValidationError.field(`${path}.content[${j}].type`, 'Cohere takes text and image_url parts');
  });
}

export function toCohereBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  refuseUnsupported(body, 'cohere', SUPPORTED);
  const input = readChatInput(body, ctx);
  const messages: Record<string, unknown>[] = [];
  for (const turn of input.turns) {
    if (turn.role === 'system') messages.push({ role: 'system', content: joinText(turn.parts) });
    else if (turn.role === 'user') messages.push({ role: 'user', content: userContent(turn.parts, turn.path) });
    else if (turn.role === 'tool') messages.push({ role: 'tool', tool_call_id: turn.toolCallId, content: joinText(turn.parts) });
    else {
      const m: Record<string, unknown> = { role: 'assistant' };
      const text = joinText(turn.parts);
      if (text) m.content = text;
      if (turn.toolCalls.length) {
        m.tool_calls = turn.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
        const plan = turn.blocks.find((b) => b.type === 'thinking');
        if (plan?.type === 'thinking') m.tool_plan = plan.thinking;
      }
      messages.push(m);
    }
  }
  const out: Record<string, unknown> = { ...input.extra, model: input.model, messages };
  if (ctx.stream) out.stream = true;
  if (input.maxTokens !== undefined) out.max_tokens = input.maxTokens;
  if (input.stop.length) out.stop_sequences = input.stop;
  if (input.temperature !== undefined) out.temperature = input.temperature;
  if (input.topP !== undefined) out.p = input.topP;
  if (input.topK !== undefined) out.k = input.topK;
  if (input.seed !== undefined) out.seed = input.seed;
  if (input.frequencyPenalty !== undefined) out.frequency_penalty = input.frequencyPenalty;
  if (input.presencePenalty !== undefined) out.presence_penalty = input.presencePenalty;
  if (input.thinking) out.thinking = { type: 'enabled', token_budget: input.thinking.budgetTokens };
  const rf = input.responseFormat;
  if (rf?.type === 'json_object') out.response_format = { type: 'json_object' };
  else if (rf?.type === 'json_schema') out.response_format = { type: 'json_object', json_schema: rf.schema };

  let tools = input.tools;
  const c = input.toolChoice;
  if (typeof c === 'object') {
    // Cohere cannot name a tool: offering only that one and requiring a call is the same.
    tools = tools.filter((t) => t.name === c.name);
    out.tool_choice = 'REQUIRED';
  } else if (c === 'required') out.tool_choice = 'REQUIRED';
  else if (c === 'none') out.tool_choice = 'NONE';
  if (tools.length) {
    out.tools = tools.map((t) => ({
      type: 'function',
      function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters },
    }));
    if (tools.some((t) => t.strict)) out.strict_tools = true;
  }
  return out;
}

const FINISH: Readonly<Record<string, FinishReason>> = {
  COMPLETE: 'stop',
  STOP_SEQUENCE: 'stop',
  MAX_TOKENS: 'length',
  TOOL_CALL: 'tool_calls',
  ERROR: 'stop',
  TIMEOUT: 'length',
};
const finishOf = (r: unknown): FinishReason => FINISH[String(r)] ?? 'stop';

/** Actual tokens when reported, billed units otherwise. */
export function cohereUsage(u: unknown): ChatUsage {
  const usage = isRecord(u) ? u : {};
  const src = isRecord(usage.tokens) ? usage.tokens : isRecord(usage.billed_units) ? usage.billed_units : {};
  const n = (k: string) => (typeof src[k] === 'number' ? (src[k] as number) : 0);
  return makeUsage(n('input_tokens'), n('output_tokens'));
}

export function fromCohere(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const message = isRecord(res.message) ? res.message : {};
  const choice = new ChoiceBuilder(false);
  if (typeof message.tool_plan === 'string' && message.tool_plan) choice.thinking(message.tool_plan);
  for (const c of Array.isArray(message.content) ? message.content : []) {
    if (!isRecord(c)) continue;
    if (c.type === 'text' && typeof c.text === 'string') choice.text(c.text);
    else if (c.type === 'thinking' && typeof c.thinking === 'string') choice.thinking(c.thinking);
  }
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isRecord(call) || !isRecord(call.function)) continue;
    choice.tool(
      String(call.id),
      String(call.function.name),
      typeof call.function.arguments === 'string' ? call.function.arguments : JSON.stringify(call.function.arguments ?? {}),
    );
  }
  return chatCompletion(ctx, {
    id: typeof res.id === 'string' ? res.id : undefined,
    choices: [choice.build(finishOf(res.finish_reason))],
    usage: cohereUsage(res.usage),
  });
}

export function cohereError(status: number, text: string): OpenAIErrorBody {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed) && typeof parsed.message === 'string') return providerError(status, parsed.message);
  } catch {
    // not JSON
  }
  return providerError(status, errorSnippet(status, text));
}

/** v2 chat stream events (message-start, content-*, tool-plan-delta, tool-call-*, message-end) -> OpenAI chunks. */
export function cohereStream(ctx: ProviderRequestContext): StreamTransformer {
  const writer = new ChunkWriter(ctx);
  let out = '';
  const reader = sseReader((event) => {
    const data = eventJson(event);
    if (!isRecord(data)) return;
    const delta = isRecord(data.delta) ? data.delta : {};
    const message = isRecord(delta.message) ? delta.message : {};
    const index = typeof data.index === 'number' ? data.index : 0;
    switch (data.type) {
      case 'message-start':
        writer.setId(typeof data.id === 'string' ? data.id : undefined);
        out += writer.start();
        return;
      case 'content-start':
      case 'content-delta': {
        const content = isRecord(message.content) ? message.content : {};
        if (typeof content.thinking === 'string' && content.thinking) out += writer.thinking({ thinking: content.thinking }, index);
        else if (typeof content.text === 'string') out += writer.text(content.text);
        return;
      }
      case 'tool-plan-delta':
        if (typeof message.tool_plan === 'string') out += writer.thinking({ thinking: message.tool_plan }, 0);
        return;
      case 'tool-call-start': {
        const call = isRecord(message.tool_calls) ? message.tool_calls : {};
        const fn = isRecord(call.function) ? call.function : {};
        out += writer.toolStart(`tool${index}`, String(call.id), String(fn.name));
        if (typeof fn.arguments === 'string') out += writer.toolArgs(`tool${index}`, fn.arguments);
        return;
      }
      case 'tool-call-delta': {
        const call = isRecord(message.tool_calls) ? message.tool_calls : {};
        const fn = isRecord(call.function) ? call.function : {};
        if (typeof fn.arguments === 'string') out += writer.toolArgs(`tool${index}`, fn.arguments);
        return;
      }
      case 'message-end':
        if (delta.usage !== undefined) writer.usage(cohereUsage(delta.usage));
        if (delta.finish_reason === 'ERROR') {
          out += writer.error(providerError(500, typeof delta.error === 'string' ? delta.error : 'Cohere reported an error during generation'));
          return;
        }
        out += writer.finish(finishOf(delta.finish_reason));
        return;
    }
  });
  return sseStreamTransformer(reader, writer, () => {
    const s = out;
    out = '';
    return s;
  });
}

function embedBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  const out: Record<string, unknown> = {
    model: ctx.model,
    texts: embeddingInputs(body),
    input_type: typeof body.input_type === 'string' ? body.input_type : 'search_document',
    embedding_types: ['float'],
  };
  if (body.truncate !== undefined) out.truncate = body.truncate;
  if (typeof body.dimensions === 'number') out.output_dimension = body.dimensions;
  return out;
}

function embedResponse(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const emb = res.embeddings;
  const vectors = isRecord(emb) && Array.isArray(emb.float) ? (emb.float as number[][]) : Array.isArray(emb) ? (emb as number[][]) : [];
  const billed = isRecord(res.meta) && isRecord(res.meta.billed_units) ? res.meta.billed_units : {};
  return embeddingList(vectors, ctx.model, typeof billed.input_tokens === 'number' ? billed.input_tokens : 0, ctx.request.encoding_format);
}

const rerankModel = (ctx: ProviderRequestContext) => ctx.model.replace(/^cohere\./, '');

function rerankBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  const documents = Array.isArray(body.documents) ? body.documents : [];
  const out: Record<string, unknown> = { model: rerankModel(ctx), query: body.query, documents: documents.map(documentText) };
  if (typeof body.top_n === 'number') out.top_n = body.top_n;
  if (typeof body.max_tokens_per_doc === 'number') out.max_tokens_per_doc = body.max_tokens_per_doc;
  return out;
}

function rerankResponse(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const results = (Array.isArray(res.results) ? res.results : []).filter(isRecord).map((r) => ({ index: Number(r.index), score: Number(r.relevance_score) }));
  const billed = isRecord(res.meta) && isRecord(res.meta.billed_units) ? res.meta.billed_units : {};
  return rerankResult(results, Array.isArray(ctx.request.documents) ? ctx.request.documents : [], ctx.request, {
    id: typeof res.id === 'string' ? res.id : ctx.requestId,
    model: rerankModel(ctx),
    provider: 'cohere',
    searchUnits: typeof billed.search_units === 'number' ? billed.search_units : 1,
  });
}

export const cohere: NativeProvider = defineNative(declared.cohere, {
  authenticate(req, ctx) {
    if (!ctx.apiKey) throw ValidationError.field('authorization', 'a Cohere API key is required (Authorization: Bearer <key>)');
    return Promise.resolve({ ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.apiKey}` } });
  },
  transformRequest(endpoint, body, ctx) {
    if (endpoint === 'embed') return embedBody(body, ctx);
    if (endpoint === 'rerank') return rerankBody(body, ctx);
    return toCohereBody(body, ctx);
  },
  transformResponse(endpoint, json, ctx) {
    if (endpoint === 'embed') return embedResponse(json, ctx);
    if (endpoint === 'rerank') return rerankResponse(json, ctx);
    return fromCohere(json, ctx);
  },
  transformStream: (_endpoint, ctx) => cohereStream(ctx),
  transformError: cohereError,
});
