/**
 * Anthropic's Messages API (https://docs.anthropic.com/en/api/messages), also used for Claude on
 * Vertex AI (google.ts). The mapping table is in docs/native-providers.md.
 */
import { ValidationError } from '../../http/errors.ts';
import type { OpenAIErrorBody } from '../../http/errors.ts';
import type { ChatUsage, FinishReason, NativeProvider, ProviderRequestContext, StreamTransformer } from '../transform.ts';
import * as declared from '../native-declarations.ts';
import { defineNative } from './define.ts';
import { isRecord } from '../../http/json.ts';
import {
  joinText,
  JSON_OBJECT_INSTRUCTION,
  optionString,
  parseArguments,
  readChatInput,
  refuseUnsupported,
  type ChatInput,
  type MediaPart,
  type UserPart,
} from './chat-input.ts';
import {
  ChoiceBuilder,
  ChunkWriter,
  chatCompletion,
  errorSnippet,
  JSON_TOOL,
  jsonViaTool,
  makeUsage,
  providerError,
  sseStreamTransformer,
} from './chat-output.ts';
import { eventJson, sseReader } from './sse-in.ts';

export const ANTHROPIC_VERSION = '2023-06-01';
/** Anthropic requires max_tokens; 4096 is within every Claude model's output limit. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** OpenAI parameters Anthropic can take beyond the always-mapped ones. */
const SUPPORTED = new Set(['parallel_tool_calls', 'top_k', 'thinking']);

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

const withCache = (block: Block, cache: unknown): Block => (cache === undefined ? block : { ...block, cache_control: cache });

function mediaBlock(part: MediaPart, path: string): Block {
  if (part.type === 'image') {
    const source = part.data ? { type: 'base64', media_type: part.data.mediaType, data: part.data.base64 } : { type: 'url', url: part.url };
    return withCache({ type: 'image', source }, part.cache_control);
  }
  if (part.data?.mediaType === 'application/pdf') {
    return withCache({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: part.data.base64 } }, part.cache_control);
  }
  if (part.data?.mediaType === 'text/plain') {
    const text = Buffer.from(part.data.base64, 'base64').toString('utf8');
    return withCache({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: text } }, part.cache_control);
  }
  if (part.url && /^https?:\/\//i.test(part.url)) return withCache({ type: 'document', source: { type: 'url', url: part.url } }, part.cache_control);
  throw ValidationError.field(path, 'Anthropic takes PDF or plain-text files (base64) or document URLs');
}

function userBlocks(parts: readonly UserPart[], path: string): Block[] {
  return parts.flatMap((p, j): Block[] => {
    if (p.type === 'text') return p.text === '' ? [] : [withCache({ type: 'text', text: p.text }, p.cache_control)];
    return [mediaBlock(p, `${path}.content[${j}]`)];
  });
}

/** System prompt and alternating turns; tool results become tool_result blocks in a user turn. */
export function anthropicMessages(input: ChatInput): { system: Block[]; messages: AnthropicMessage[] } {
  const system: Block[] = [];
  const messages: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const turn of input.turns) {
    switch (turn.role) {
      case 'system':
        // Anthropic has one system prompt: system messages anywhere in the conversation join it, in order.
        for (const p of turn.parts) system.push(withCache({ type: 'text', text: p.text }, p.cache_control));
        break;
      case 'user':
        push('user', userBlocks(turn.parts, turn.path));
        break;
      case 'assistant': {
        const blocks: Block[] = [];
        for (const b of turn.blocks) {
          if (b.type === 'thinking')
            blocks.push(
              b.signature === undefined ? { type: 'thinking', thinking: b.thinking } : { type: 'thinking', thinking: b.thinking, signature: b.signature },
            );
          else if (b.type === 'redacted_thinking') blocks.push({ type: 'redacted_thinking', data: b.data });
        }
        for (const p of turn.parts) if (p.text !== '') blocks.push(withCache({ type: 'text', text: p.text }, p.cache_control));
        turn.toolCalls.forEach((c, j) => {
          blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: parseArguments(c.arguments, `${turn.path}.tool_calls[${j}]`) });
        });
        push('assistant', blocks);
        break;
      }
      case 'tool': {
        const cached = turn.parts.some((p) => p.cache_control !== undefined);
        const content = cached ? turn.parts.map((p) => withCache({ type: 'text', text: p.text }, p.cache_control)) : joinText(turn.parts);
        push('user', [{ type: 'tool_result', tool_use_id: turn.toolCallId, content }]);
        break;
      }
    }
  }
  return { system, messages };
}

/** The Messages API body for an OpenAI chat request. `version` goes in the body (Vertex) instead of `model`. */
export function toAnthropicBody(
  body: Readonly<Record<string, unknown>>,
  ctx: ProviderRequestContext,
  provider: string,
  bodyVersion?: string,
): Record<string, unknown> {
  refuseUnsupported(body, provider, SUPPORTED);
  const input = readChatInput(body, ctx);
  const { system, messages } = anthropicMessages(input);
  const out: Record<string, unknown> = { ...input.extra };
  if (bodyVersion) out.anthropic_version = bodyVersion;
  else out.model = input.model;
  out.messages = messages;

  const byTool = jsonViaTool(ctx);
  const rf = input.responseFormat;
  if (rf?.type === 'json_object') system.push({ type: 'text', text: JSON_OBJECT_INSTRUCTION });
  if (rf?.type === 'json_schema' && !byTool) {
    system.push({
      type: 'text',
      text: `Respond only with a JSON value that conforms to this JSON Schema, without any text before or after it:\n${JSON.stringify(rf.schema)}`,
    });
  }
  if (system.length) out.system = system;

  out.max_tokens = input.maxTokens ?? (input.thinking ? input.thinking.budgetTokens + ANTHROPIC_DEFAULT_MAX_TOKENS : ANTHROPIC_DEFAULT_MAX_TOKENS);
  if (input.stop.length) out.stop_sequences = input.stop;
  if (input.temperature !== undefined) out.temperature = input.temperature;
  if (input.topP !== undefined) out.top_p = input.topP;
  if (input.topK !== undefined) out.top_k = input.topK;
  if (input.user !== undefined) out.metadata = { user_id: input.user };
  if (input.thinking) out.thinking = { type: 'enabled', budget_tokens: input.thinking.budgetTokens };
  if (ctx.stream) out.stream = true;

  const tools: Block[] = input.tools.map((t) => {
    const tool: Block = { name: t.name, input_schema: t.parameters };
    if (t.description !== undefined) tool.description = t.description;
    if (t.strict !== undefined) tool.strict = t.strict;
    return tool;
  });
  let choice: Block | undefined;
  if (byTool && rf?.type === 'json_schema') {
    tools.push({ name: JSON_TOOL, description: rf.description ?? `Returns the answer as ${rf.name}`, input_schema: rf.schema });
    choice = { type: 'tool', name: JSON_TOOL };
  } else if (input.toolChoice === 'none') choice = { type: 'none' };
  else if (input.toolChoice === 'required') choice = { type: 'any' };
  else if (typeof input.toolChoice === 'object') choice = { type: 'tool', name: input.toolChoice.name };
  else if (input.toolChoice === 'auto') choice = { type: 'auto' };
  if (input.parallelToolCalls === false && tools.length && choice?.type !== 'none') {
    choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  if (tools.length) out.tools = tools;
  if (choice && tools.length) out.tool_choice = choice;
  return out;
}

const STOP: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};
export const anthropicFinish = (reason: unknown): FinishReason => STOP[String(reason)] ?? 'stop';

/** Prompt tokens include cache reads and writes; cached_tokens counts the reads. */
export function anthropicUsage(u: unknown): ChatUsage {
  const n = (k: string) => (isRecord(u) && typeof u[k] === 'number' ? (u[k] as number) : 0);
  const read = n('cache_read_input_tokens');
  const write = n('cache_creation_input_tokens');
  return makeUsage(n('input_tokens') + read + write, n('output_tokens'), { cacheRead: read, cacheWrite: write });
}

export function fromAnthropicMessage(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const msg = isRecord(json) ? json : {};
  const choice = new ChoiceBuilder(jsonViaTool(ctx));
  for (const block of Array.isArray(msg.content) ? msg.content : []) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') choice.text(block.text);
    else if (block.type === 'tool_use') choice.tool(String(block.id), String(block.name), JSON.stringify(block.input ?? {}));
    else if (block.type === 'thinking') choice.thinking(String(block.thinking ?? ''), typeof block.signature === 'string' ? block.signature : undefined);
    else if (block.type === 'redacted_thinking') choice.redacted(String(block.data ?? ''));
  }
  return chatCompletion(ctx, {
    id: typeof msg.id === 'string' ? msg.id : undefined,
    model: typeof msg.model === 'string' ? msg.model : undefined,
    choices: [choice.build(anthropicFinish(msg.stop_reason))],
    usage: anthropicUsage(msg.usage),
  });
}

const STATUS_BY_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

function errorOf(status: number, parsed: unknown): OpenAIErrorBody | undefined {
  if (!isRecord(parsed) || !isRecord(parsed.error)) return undefined;
  const e = parsed.error;
  const type = typeof e.type === 'string' ? e.type : null;
  return providerError(status, typeof e.message === 'string' ? e.message : 'Anthropic error', type);
}

export function anthropicError(status: number, text: string): OpenAIErrorBody {
  try {
    const body = errorOf(status, JSON.parse(text));
    if (body) return body;
  } catch {
    // not JSON
  }
  return providerError(status, errorSnippet(status, text));
}

/** Messages API SSE (message_start, content_block_*, message_delta, message_stop, error) -> OpenAI chunks. */
export function anthropicStream(ctx: ProviderRequestContext): StreamTransformer {
  const writer = new ChunkWriter(ctx, { jsonTool: jsonViaTool(ctx) });
  let usage: Record<string, unknown> = {};
  let out = '';
  const reader = sseReader((event) => {
    const data = eventJson(event);
    if (!isRecord(data)) return;
    const index = typeof data.index === 'number' ? data.index : 0;
    switch (data.type) {
      case 'message_start': {
        const m = isRecord(data.message) ? data.message : {};
        writer.setId(typeof m.id === 'string' ? m.id : undefined);
        writer.setModel(typeof m.model === 'string' ? m.model : undefined);
        if (isRecord(m.usage)) usage = { ...m.usage };
        writer.usage(anthropicUsage(usage));
        out += writer.start();
        return;
      }
      case 'content_block_start': {
        const b = isRecord(data.content_block) ? data.content_block : {};
        if (b.type === 'text' && typeof b.text === 'string') out += writer.text(b.text);
        else if (b.type === 'tool_use') out += writer.toolStart(index, String(b.id), String(b.name));
        else if (b.type === 'thinking' && typeof b.thinking === 'string' && b.thinking) out += writer.thinking({ thinking: b.thinking }, index);
        else if (b.type === 'redacted_thinking') out += writer.thinking({ data: String(b.data ?? '') }, index);
        return;
      }
      case 'content_block_delta': {
        const d = isRecord(data.delta) ? data.delta : {};
        if (d.type === 'text_delta') out += writer.text(String(d.text ?? ''));
        else if (d.type === 'input_json_delta') out += writer.toolArgs(index, String(d.partial_json ?? ''));
        else if (d.type === 'thinking_delta') out += writer.thinking({ thinking: String(d.thinking ?? '') }, index);
        else if (d.type === 'signature_delta') out += writer.thinking({ signature: String(d.signature ?? '') }, index);
        return;
      }
      case 'message_delta': {
        // message_delta usage is cumulative and may repeat the input counts.
        if (isRecord(data.usage)) usage = { ...usage, ...data.usage };
        writer.usage(anthropicUsage(usage));
        const d = isRecord(data.delta) ? data.delta : {};
        if (d.stop_reason) out += writer.finish(anthropicFinish(d.stop_reason));
        return;
      }
      case 'error': {
        const e = isRecord(data.error) ? data.error : {};
        const status = STATUS_BY_TYPE[String(e.type)] ?? 500;
        out += writer.error(errorOf(status, data) ?? providerError(status, 'Anthropic stream error'));
        return;
      }
    }
  });
  return sseStreamTransformer(reader, writer, () => {
    const s = out;
    out = '';
    return s;
  });
}

export const anthropic: NativeProvider = defineNative(declared.anthropic, {
  optionHeaders: { anthropic_beta: 'anthropic-beta' },
  authenticate(req, ctx) {
    const headers: Record<string, string> = { ...req.headers, 'anthropic-version': optionString(ctx, 'anthropic_version') ?? ANTHROPIC_VERSION };
    if (ctx.apiKey) headers['x-api-key'] = ctx.apiKey;
    return Promise.resolve({ ...req, headers });
  },
  transformRequest: (_endpoint, body, ctx) => toAnthropicBody(body, ctx, 'anthropic'),
  transformResponse: (_endpoint, json, ctx) => fromAnthropicMessage(json, ctx),
  transformStream: (_endpoint, ctx) => anthropicStream(ctx),
  transformError: (status, text) => anthropicError(status, text),
});
