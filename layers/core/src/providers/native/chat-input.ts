/**
 * The OpenAI chat request read once into a neutral form that every native provider builds its body
 * from: turns with typed parts, tools, tool choice, sampling, JSON mode. The deprecated `functions`
 * API is folded into tools here, so no provider deals with it. Parameters a provider cannot honour
 * are refused with a 400 naming them (`refuseUnsupported`), never dropped when they would change
 * the answer; fields OpenAI does not define are kept in `extra` for the provider to pass on.
 */
import { randomBytes } from 'node:crypto';
import { ValidationError } from '../../http/errors.ts';
import type { ProviderRequestContext } from '../transform.ts';

import { isRecord } from '../../http/json.ts';

// Re-exported for gateway/messages.ts and anthropic-inbound.ts (being restructured); import from http/json.ts.
export { isRecord };

export interface TextPart {
  type: 'text';
  text: string;
  cache_control?: unknown;
}

/** An image or a file: inline base64 (from a data URL) or a URL the provider fetches. */
export interface MediaPart {
  type: 'image' | 'file';
  url?: string;
  data?: { mediaType: string; base64: string };
  filename?: string;
  cache_control?: unknown;
}

export type UserPart = TextPart | MediaPart;

export interface ToolCallInput {
  id: string;
  name: string;
  arguments: string;
}

/** Reasoning and text blocks as the gateway returns them in `content_blocks` (and accepts back). */
export type ContentBlock =
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'text'; text: string };

export type Turn =
  | { role: 'system'; parts: TextPart[]; path: string }
  | { role: 'user'; parts: UserPart[]; path: string }
  | { role: 'assistant'; parts: TextPart[]; toolCalls: ToolCallInput[]; blocks: ContentBlock[]; path: string }
  | { role: 'tool'; toolCallId: string; name: string; parts: TextPart[]; path: string };

export interface ChatTool {
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  strict?: boolean;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

export type ResponseFormat =
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; description?: string; schema: Record<string, unknown>; strict?: boolean };

export interface ChatInput {
  model: string;
  turns: Turn[];
  tools: ChatTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  maxTokens?: number;
  stop: string[];
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  n?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  logprobs?: boolean;
  topLogprobs?: number;
  responseFormat?: ResponseFormat;
  /** Only set when strict_openai_compliance is false (it is refused otherwise). */
  thinking?: { budgetTokens: number };
  reasoningEffort?: string;
  user?: string;
  /** The request used `functions`/`function_call`: answers use `function_call` too. */
  legacyFunctions: boolean;
  /** Fields OpenAI's chat API does not define (provider-specific: top_k, safetySettings ...). */
  extra: Record<string, unknown>;
}

/** Fields of OpenAI's chat API this module reads; everything else is `extra`. */
const MAPPED = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'temperature',
  'top_p',
  'top_k',
  'seed',
  'n',
  'frequency_penalty',
  'presence_penalty',
  'logprobs',
  'top_logprobs',
  'response_format',
  'thinking',
  'reasoning_effort',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'stream',
  'stream_options',
]);

/**
 * OpenAI parameters and the values at which they change nothing. A provider that cannot take one
 * accepts the neutral value (dropped) and refuses any other with a 400.
 */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  n: (v) => v === 1,
  logprobs: (v) => v === false,
  top_logprobs: () => false,
  logit_bias: (v) => isRecord(v) && Object.keys(v).length === 0,
  frequency_penalty: (v) => v === 0,
  presence_penalty: (v) => v === 0,
  seed: () => false,
  reasoning_effort: () => false,
  parallel_tool_calls: (v) => v === true,
  store: (v) => v === false,
  // Stored-completion metadata and cache/safety hints mean nothing without OpenAI's store.
  metadata: () => true,
  prompt_cache_key: () => true,
  safety_identifier: () => true,
  service_tier: (v) => v === 'auto' || v === 'default',
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
  audio: () => false,
  prediction: () => false,
  web_search_options: () => false,
  verbosity: (v) => v === 'medium',
  top_k: () => false,
  thinking: (v) => isRecord(v) && v.type === 'disabled',
};

/** Known OpenAI fields: never forwarded as provider extras. */
const KNOWN = new Set([...MAPPED, ...Object.keys(NEUTRAL), 'logit_bias']);

/**
 * Refuses every known parameter the provider does not support (`supported`) unless its value is
 * neutral; null and absent values are always fine.
 */
export function refuseUnsupported(body: Readonly<Record<string, unknown>>, provider: string, supported: ReadonlySet<string>): void {
  for (const [key, isNeutral] of Object.entries(NEUTRAL)) {
    const value = body[key];
    if (value === undefined || value === null || supported.has(key) || isNeutral(value)) continue;
    throw unsupportedParam(key, provider);
  }
}

export function unsupportedParam(param: string, provider: string, detail = ''): ValidationError {
  return new ValidationError([{ path: param, message: `is not supported by ${provider}${detail ? `: ${detail}` : ''}` }], {
    openaiCode: 'unsupported_parameter',
  });
}

export const newToolCallId = (): string => `call_${randomBytes(12).toString('base64url')}`;

export function parseDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  const m = /^data:([^;,]+)(?:;[^;,=]+=[^;,]*)*;base64,/i.exec(url);
  if (!m?.[1]) return undefined;
  return { mediaType: m[1].toLowerCase(), base64: url.slice(m[0].length) };
}

const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const asNumber = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function textParts(content: unknown, path: string): TextPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw ValidationError.field(`${path}.content`, 'must be a string or an array of content parts');
  return content.map((part: unknown, j) => {
    if (!isRecord(part) || (part.type !== 'text' && part.type !== 'refusal')) {
      throw ValidationError.field(`${path}.content[${j}].type`, 'must be text in this message');
    }
    const text = asString(part.text) ?? asString(part.refusal) ?? '';
    return part.cache_control === undefined ? { type: 'text', text } : { type: 'text', text, cache_control: part.cache_control };
  });
}

function userParts(content: unknown, path: string): UserPart[] {
  if (!Array.isArray(content)) return textParts(content, path);
  return content.map((part: unknown, j): UserPart => {
    const at = `${path}.content[${j}]`;
    if (!isRecord(part)) throw ValidationError.field(at, 'must be an object');
    const cache = part.cache_control === undefined ? {} : { cache_control: part.cache_control };
    if (part.type === 'text') return { type: 'text', text: asString(part.text) ?? '', ...cache };
    if (part.type === 'image_url') {
      const url = isRecord(part.image_url) ? asString(part.image_url.url) : asString(part.image_url);
      if (!url) throw ValidationError.field(`${at}.image_url.url`, 'is required');
      const data = parseDataUrl(url);
      return data ? { type: 'image', data, ...cache } : { type: 'image', url, ...cache };
    }
    if (part.type === 'file' && isRecord(part.file)) {
      const f = part.file;
      const filename = asString(f.filename);
      const fileData = asString(f.file_data);
      const named = filename ? { filename } : {};
      if (fileData) {
        const data = parseDataUrl(fileData) ?? { mediaType: 'application/pdf', base64: fileData };
        return { type: 'file', data, ...named, ...cache };
      }
      const url = asString(f.file_url) ?? asString(f.file_id);
      if (url) return { type: 'file', url, ...named, ...cache };
      throw ValidationError.field(`${at}.file`, 'needs file_data (base64 or a data URL) or file_url');
    }
    throw ValidationError.field(`${at}.type`, `"${String(part.type)}" parts are not supported by native providers (text, image_url and file are)`);
  });
}

function contentBlocks(raw: unknown): ContentBlock[] {
  if (!Array.isArray(raw)) return [];
  const out: ContentBlock[] = [];
  for (const b of raw) {
    if (!isRecord(b)) continue;
    if (b.type === 'thinking' && typeof b.thinking === 'string') {
      out.push(
        typeof b.signature === 'string' ? { type: 'thinking', thinking: b.thinking, signature: b.signature } : { type: 'thinking', thinking: b.thinking },
      );
    } else if (b.type === 'redacted_thinking' && typeof b.data === 'string') {
      out.push({ type: 'redacted_thinking', data: b.data });
    } else if (b.type === 'text' && typeof b.text === 'string') {
      out.push({ type: 'text', text: b.text });
    }
  }
  return out;
}

function readTools(body: Readonly<Record<string, unknown>>): ChatTool[] {
  const defs: unknown[] = Array.isArray(body.tools)
    ? body.tools.map((t: unknown, i) => {
        if (!isRecord(t) || t.type !== 'function' || !isRecord(t.function)) {
          throw ValidationError.field(`tools[${i}].type`, 'must be function (other tool types are not supported by native providers)');
        }
        return t.function;
      })
    : Array.isArray(body.functions)
      ? body.functions
      : [];
  return defs.map((f, i) => {
    if (!isRecord(f) || typeof f.name !== 'string') throw ValidationError.field(`tools[${i}].function.name`, 'is required');
    const tool: ChatTool = { name: f.name, parameters: isRecord(f.parameters) ? f.parameters : { type: 'object', properties: {} } };
    if (typeof f.description === 'string') tool.description = f.description;
    if (typeof f.strict === 'boolean') tool.strict = f.strict;
    return tool;
  });
}

function readToolChoice(body: Readonly<Record<string, unknown>>): ToolChoice | undefined {
  const c = body.tool_choice ?? body.function_call;
  if (c === 'auto' || c === 'none' || c === 'required') return c;
  if (isRecord(c)) {
    const name = isRecord(c.function) ? asString(c.function.name) : asString(c.name);
    if (name) return { name };
  }
  return undefined;
}

function readResponseFormat(raw: unknown): ResponseFormat | undefined {
  if (!isRecord(raw)) return undefined;
  if (raw.type === 'json_object') return { type: 'json_object' };
  if (raw.type === 'json_schema' && isRecord(raw.json_schema)) {
    const js = raw.json_schema;
    const format: ResponseFormat = {
      type: 'json_schema',
      name: asString(js.name) ?? 'json_response',
      schema: isRecord(js.schema) ? js.schema : { type: 'object' },
    };
    if (typeof js.description === 'string') format.description = js.description;
    if (typeof js.strict === 'boolean') format.strict = js.strict;
    return format;
  }
  return undefined;
}

/** Legacy `function` messages carry only a name: each is paired with the latest call of that name. */
interface CallIds {
  pendingByName: Map<string, string[]>;
  namesById: Map<string, string>;
}

function assistantTurn(m: Record<string, unknown>, path: string, ids: CallIds): Turn {
  const toolCalls: ToolCallInput[] = [];
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  calls.forEach((c: unknown, j) => {
    if (!isRecord(c) || !isRecord(c.function) || typeof c.function.name !== 'string') {
      throw ValidationError.field(`${path}.tool_calls[${j}].function.name`, 'is required');
    }
    const id = asString(c.id) ?? newToolCallId();
    toolCalls.push({ id, name: c.function.name, arguments: asString(c.function.arguments) ?? '{}' });
    ids.namesById.set(id, c.function.name);
  });
  if (isRecord(m.function_call) && typeof m.function_call.name === 'string') {
    const id = newToolCallId();
    const name = m.function_call.name;
    toolCalls.push({ id, name, arguments: asString(m.function_call.arguments) ?? '{}' });
    ids.namesById.set(id, name);
    ids.pendingByName.set(name, [...(ids.pendingByName.get(name) ?? []), id]);
  }
  return { role: 'assistant', parts: textParts(m.content, path), toolCalls, blocks: contentBlocks(m.content_blocks), path };
}

function readTurn(m: unknown, i: number, ids: CallIds): Turn {
  const path = `messages[${i}]`;
  if (!isRecord(m)) throw ValidationError.field(path, 'must be an object');
  switch (m.role) {
    case 'system':
    case 'developer':
      return { role: 'system', parts: textParts(m.content, path), path };
    case 'user':
      return { role: 'user', parts: userParts(m.content, path), path };
    case 'assistant':
      return assistantTurn(m, path, ids);
    case 'tool': {
      const id = asString(m.tool_call_id);
      if (!id) throw ValidationError.field(`${path}.tool_call_id`, 'is required');
      return { role: 'tool', toolCallId: id, name: ids.namesById.get(id) ?? asString(m.name) ?? '', parts: textParts(m.content, path), path };
    }
    case 'function': {
      const name = asString(m.name) ?? '';
      const id = ids.pendingByName.get(name)?.shift() ?? newToolCallId();
      return { role: 'tool', toolCallId: id, name, parts: textParts(m.content, path), path };
    }
    default:
      throw ValidationError.field(`${path}.role`, 'must be one of system, developer, user, assistant, tool, function');
  }
}

/** Sampling numbers: the OpenAI field and the ChatInput field it fills. */
const NUMBERS = [
  ['temperature', 'temperature'],
  ['top_p', 'topP'],
  ['top_k', 'topK'],
  ['seed', 'seed'],
  ['n', 'n'],
  ['frequency_penalty', 'frequencyPenalty'],
  ['presence_penalty', 'presencePenalty'],
  ['top_logprobs', 'topLogprobs'],
] as const;

/** The generation settings of a body (everything but its turns and tools). */
function readSettings(body: Readonly<Record<string, unknown>>, input: ChatInput, ctx: Pick<ProviderRequestContext, 'strictOpenAICompliance'>): void {
  const choice = readToolChoice(body);
  if (choice) input.toolChoice = choice;
  if (typeof body.parallel_tool_calls === 'boolean') input.parallelToolCalls = body.parallel_tool_calls;
  const maxTokens = asNumber(body.max_completion_tokens) ?? asNumber(body.max_tokens);
  if (maxTokens !== undefined) input.maxTokens = maxTokens;
  for (const [from, to] of NUMBERS) {
    const v = asNumber(body[from]);
    if (v !== undefined) input[to] = v;
  }
  if (typeof body.logprobs === 'boolean') input.logprobs = body.logprobs;
  const format = readResponseFormat(body.response_format);
  if (format) input.responseFormat = format;
  if (typeof body.reasoning_effort === 'string') input.reasoningEffort = body.reasoning_effort;
  if (typeof body.user === 'string') input.user = body.user;
  if (isRecord(body.thinking) && body.thinking.type === 'enabled') {
    if (ctx.strictOpenAICompliance) {
      throw new ValidationError([{ path: 'thinking', message: 'is only accepted when strict_openai_compliance is false' }], {
        openaiCode: 'unsupported_parameter',
      });
    }
    input.thinking = { budgetTokens: asNumber(body.thinking.budget_tokens) ?? 1024 };
  }
}

/** Reads an OpenAI chat body into a ChatInput; `thinking` is refused here under strict compliance. */
export function readChatInput(body: Readonly<Record<string, unknown>>, ctx: Pick<ProviderRequestContext, 'strictOpenAICompliance'>): ChatInput {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const ids: CallIds = { pendingByName: new Map(), namesById: new Map() };
  const turns = messages.map((m: unknown, i) => readTurn(m, i, ids));
  const input: ChatInput = {
    model: asString(body.model) ?? '',
    turns,
    tools: readTools(body),
    stop: typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop.filter((s): s is string => typeof s === 'string') : [],
    legacyFunctions: !Array.isArray(body.tools) && Array.isArray(body.functions),
    extra: Object.fromEntries(Object.entries(body).filter(([k]) => !KNOWN.has(k))),
  };
  readSettings(body, input, ctx);
  return input;
}

/** Concatenated text of parts. */
export const joinText = (parts: readonly { type: string; text?: string }[]): string => parts.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');

/** Parses tool call arguments; a 400 naming the message when they are not a JSON object. */
export function parseArguments(args: string, path: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (isRecord(parsed)) return parsed;
  } catch {
    // reported below
  }
  throw ValidationError.field(`${path}.function.arguments`, 'must be a JSON object');
}

/** The instruction used for JSON mode where a provider has no native switch for it. */
export const JSON_OBJECT_INSTRUCTION = 'Respond only with a single valid JSON object, without any text before or after it.';

/** Reads a provider option as a non-empty string. */
export function optionString(ctx: Pick<ProviderRequestContext, 'options'>, key: string): string | undefined {
  const v = ctx.options[key];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** A provider option that becomes part of a host name or path: required and of a safe shape. */
export function hostPart(ctx: Pick<ProviderRequestContext, 'options'>, key: string, pattern: RegExp, fallback?: string): string {
  const value = optionString(ctx, key) ?? fallback;
  if (value === undefined) throw ValidationError.field(key, 'is required (provider option, or the x-gw-' + key.replace(/_/g, '-') + ' header)');
  if (!pattern.test(value)) throw ValidationError.field(key, `is not a valid value: ${JSON.stringify(value)}`);
  return value;
}

/** Inputs of an embeddings request as a list of strings. */
export function embeddingInputs(body: Readonly<Record<string, unknown>>): string[] {
  const input = body.input;
  if (typeof input === 'string') return [input];
  if (Array.isArray(input) && input.every((s) => typeof s === 'string')) return input as string[];
  throw ValidationError.field('input', 'must be a string or an array of strings for this provider (token arrays are not supported)');
}
