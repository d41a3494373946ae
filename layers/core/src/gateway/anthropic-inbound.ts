/**
 * Anthropic's Messages format accepted inbound (`POST /v1/messages`, `/v1/messages/count_tokens`),
 * so that tools built on Anthropic's SDK can use any provider: the request becomes an OpenAI chat
 * request, the answer (JSON or SSE chunks) becomes a Message or Anthropic's stream events. For an
 * Anthropic target the request goes through unchanged (`isPassThrough`, `passThroughRequest`).
 * Pure functions: the routes that use them are mounted by the gateway.
 */
import { ValidationError } from '../http/errors.ts';
import type { OpenAIErrorBody } from '../http/errors.ts';
import { anthropic } from '../providers/native/anthropic.ts';
import { isRecord } from '../providers/native/chat-input.ts';
import { eventJson, sseReader } from '../providers/native/sse-in.ts';
import type { OutgoingRequest, ProviderRequestContext } from '../providers/transform.ts';

/** Targets that take the Anthropic request as it is. */
export function isPassThrough(target: { provider?: string | undefined }): boolean {
  return target.provider?.toLowerCase() === 'anthropic';
}

/** The request to Anthropic itself for a pass-through (`messages` or `count_tokens`), with its key and version headers. */
export async function passThroughRequest(
  bodyText: string,
  kind: 'messages' | 'count_tokens',
  ctx: ProviderRequestContext,
  clientHeaders: Headers,
): Promise<OutgoingRequest> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'accept-encoding': 'identity', 'user-agent': 'gantry' };
  const beta = (typeof ctx.options.anthropic_beta === 'string' && ctx.options.anthropic_beta) || clientHeaders.get('anthropic-beta');
  if (beta) headers['anthropic-beta'] = beta;
  const version = clientHeaders.get('anthropic-version');
  const withVersion = version && ctx.options.anthropic_version === undefined ? { ...ctx, options: { ...ctx.options, anthropic_version: version } } : ctx;
  const path = kind === 'messages' ? '/messages' : '/messages/count_tokens';
  return anthropic.authenticate({ url: new URL(anthropic.baseUrl(ctx) + path), method: 'POST', headers, body: bodyText }, withVersion);
}

type Json = Record<string, unknown>;

const fail = (path: string, message: string): never => {
  throw ValidationError.field(path, message);
};

function imageUrl(source: unknown, path: string): string {
  if (!isRecord(source)) return fail(`${path}.source`, 'is required');
  if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string')
    return `data:${source.media_type};base64,${source.data}`;
  if (source.type === 'url' && typeof source.url === 'string') return source.url;
  return fail(`${path}.source.type`, 'must be base64 or url');
}

function documentPart(block: Json, path: string): Json {
  const source = isRecord(block.source) ? block.source : fail(`${path}.source`, 'is required');
  const filename = typeof block.title === 'string' ? { filename: block.title } : {};
  if (source.type === 'base64' && typeof source.data === 'string') {
    return { type: 'file', file: { file_data: `data:${String(source.media_type ?? 'application/pdf')};base64,${source.data}`, ...filename } };
  }
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  if (source.type === 'url' && typeof source.url === 'string') return { type: 'file', file: { file_url: source.url, ...filename } };
  return fail(`${path}.source.type`, 'must be base64, text or url');
}

const withCache = (part: Json, block: Json): Json => (block.cache_control === undefined ? part : { ...part, cache_control: block.cache_control });

function toolResultText(content: unknown): string | Json[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter(isRecord).map((b) => (b.type === 'text' ? { type: 'text', text: String(b.text ?? '') } : { type: 'text', text: JSON.stringify(b) }));
}

/** Converts one Anthropic message into OpenAI messages (tool results become tool messages, first). */
function convertMessage(m: unknown, i: number): Json[] {
  const path = `messages[${i}]`;
  if (!isRecord(m)) return fail(path, 'must be an object');
  if (m.role !== 'user' && m.role !== 'assistant') return fail(`${path}.role`, 'must be user or assistant');
  if (typeof m.content === 'string') return [{ role: m.role, content: m.content }];
  if (!Array.isArray(m.content)) return fail(`${path}.content`, 'must be a string or an array of content blocks');
  const blocks = m.content;

  if (m.role === 'assistant') {
    const text: string[] = [];
    const toolCalls: Json[] = [];
    const contentBlocks: Json[] = [];
    blocks.forEach((b: unknown, j) => {
      const at = `${path}.content[${j}]`;
      if (!isRecord(b)) return fail(at, 'must be an object');
      if (b.type === 'text') text.push(String(b.text ?? ''));
      else if (b.type === 'tool_use')
        toolCalls.push({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } });
      else if (b.type === 'thinking')
        contentBlocks.push({ type: 'thinking', thinking: String(b.thinking ?? ''), ...(typeof b.signature === 'string' ? { signature: b.signature } : {}) });
      else if (b.type === 'redacted_thinking') contentBlocks.push({ type: 'redacted_thinking', data: String(b.data ?? '') });
      else fail(`${at}.type`, `"${String(b.type)}" blocks can only be sent to Anthropic itself`);
      return undefined;
    });
    const msg: Json = { role: 'assistant', content: text.length ? text.join('') : null };
    if (toolCalls.length) msg.tool_calls = toolCalls;
    if (contentBlocks.length) msg.content_blocks = contentBlocks;
    if (msg.content === null && !toolCalls.length) msg.content = '';
    return [msg];
  }

  const out: Json[] = [];
  const parts: Json[] = [];
  blocks.forEach((b: unknown, j) => {
    const at = `${path}.content[${j}]`;
    if (!isRecord(b)) return fail(at, 'must be an object');
    if (b.type === 'text') parts.push(withCache({ type: 'text', text: String(b.text ?? '') }, b));
    else if (b.type === 'image') parts.push(withCache({ type: 'image_url', image_url: { url: imageUrl(b.source, at) } }, b));
    else if (b.type === 'document') parts.push(withCache(documentPart(b, at), b));
    else if (b.type === 'tool_result') out.push({ role: 'tool', tool_call_id: String(b.tool_use_id), content: toolResultText(b.content) });
    else fail(`${at}.type`, `"${String(b.type)}" blocks can only be sent to Anthropic itself`);
    return undefined;
  });
  if (parts.length) {
    const simple = parts.every((p) => p.type === 'text' && p.cache_control === undefined);
    out.push({ role: 'user', content: simple ? parts.map((p) => p.text).join('\n') : parts });
  }
  return out;
}

const ANTHROPIC_ONLY = ['container', 'mcp_servers', 'context_management'];

/** An Anthropic Messages request as an OpenAI chat request (streams ask for usage, which message_delta needs). */
export function anthropicToOpenAI(raw: unknown): Json {
  if (!isRecord(raw)) return fail('', 'The request body must be a JSON object');
  const req = raw;
  if (typeof req.model !== 'string' || req.model === '') fail('model', 'is required');
  if (typeof req.max_tokens !== 'number' || !Number.isInteger(req.max_tokens) || req.max_tokens < 1)
    fail('max_tokens', 'is required (an integer of at least 1)');
  if (!Array.isArray(req.messages) || req.messages.length === 0) fail('messages', 'must contain at least 1 message');
  for (const key of ANTHROPIC_ONLY) if (req[key] !== undefined) fail(key, 'can only be sent to Anthropic itself');

  const messages: Json[] = [];
  if (typeof req.system === 'string') messages.push({ role: 'system', content: req.system });
  else if (Array.isArray(req.system)) {
    const parts = req.system.filter(isRecord).map((b) => withCache({ type: 'text', text: String(b.text ?? '') }, b));
    if (parts.length)
      messages.push({ role: 'system', content: parts.some((p) => p.cache_control !== undefined) ? parts : parts.map((p) => p.text).join('\n') });
  }
  (req.messages as unknown[]).forEach((m, i) => messages.push(...convertMessage(m, i)));

  const out: Json = { model: req.model, messages, max_tokens: req.max_tokens };
  if (Array.isArray(req.stop_sequences) && req.stop_sequences.length) out.stop = req.stop_sequences;
  for (const key of ['temperature', 'top_p', 'top_k'] as const) if (typeof req[key] === 'number') out[key] = req[key];
  if (isRecord(req.metadata) && typeof req.metadata.user_id === 'string') out.user = req.metadata.user_id;
  if (isRecord(req.thinking)) out.thinking = req.thinking;
  if (req.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  if (Array.isArray(req.tools)) {
    out.tools = req.tools.map((t: unknown, i) => {
      if (!isRecord(t)) return fail(`tools[${i}]`, 'must be an object');
      if (t.type !== undefined && t.type !== 'custom') fail(`tools[${i}].type`, `server tools ("${String(t.type)}") can only be used with Anthropic itself`);
      const fn: Json = { name: String(t.name), parameters: isRecord(t.input_schema) ? t.input_schema : { type: 'object', properties: {} } };
      if (typeof t.description === 'string') fn.description = t.description;
      return { type: 'function', function: fn };
    });
  }
  if (isRecord(req.tool_choice)) {
    const c = req.tool_choice;
    if (c.type === 'auto') out.tool_choice = 'auto';
    else if (c.type === 'any') out.tool_choice = 'required';
    else if (c.type === 'none') out.tool_choice = 'none';
    else if (c.type === 'tool' && typeof c.name === 'string') out.tool_choice = { type: 'function', function: { name: c.name } };
    if (c.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
  }
  return out;
}

const STOP_REASON: Readonly<Record<string, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

function anthropicUsage(u: unknown): Json {
  if (!isRecord(u)) return { input_tokens: 0, output_tokens: 0 };
  const prompt = Number(u.prompt_tokens ?? 0);
  const details = isRecord(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  const read = Number(u.cache_read_input_tokens ?? details.cached_tokens ?? 0);
  const write = Number(u.cache_creation_input_tokens ?? 0);
  const usage: Json = { input_tokens: Math.max(0, prompt - read - write), output_tokens: Number(u.completion_tokens ?? 0) };
  if (read) usage.cache_read_input_tokens = read;
  if (write) usage.cache_creation_input_tokens = write;
  return usage;
}

function parseInput(args: unknown): unknown {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    return JSON.parse(args) as unknown;
  } catch {
    return {};
  }
}

const messageId = (id: unknown): string =>
  typeof id === 'string' && id.startsWith('msg_') ? id : `msg_${typeof id === 'string' ? id.replace(/^chatcmpl-/, '') : 'gantry'}`;

/** An OpenAI chat completion as an Anthropic Message. */
export function openAIToAnthropic(raw: unknown, requestedModel: string): Json {
  const resp = isRecord(raw) ? raw : {};
  const choice = Array.isArray(resp.choices) && isRecord(resp.choices[0]) ? resp.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const content: Json[] = [];
  for (const b of Array.isArray(message.content_blocks) ? message.content_blocks : []) {
    if (isRecord(b) && (b.type === 'thinking' || b.type === 'redacted_thinking')) content.push(b);
  }
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content });
  for (const c of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (!isRecord(c) || !isRecord(c.function)) continue;
    content.push({ type: 'tool_use', id: String(c.id), name: String(c.function.name), input: parseInput(c.function.arguments) });
  }
  if (isRecord(message.function_call)) {
    content.push({
      type: 'tool_use',
      id: `toolu_${String(resp.id ?? 'call')}`,
      name: String(message.function_call.name),
      input: parseInput(message.function_call.arguments),
    });
  }
  return {
    id: messageId(resp.id),
    type: 'message',
    role: 'assistant',
    model: typeof resp.model === 'string' ? resp.model : requestedModel,
    content,
    stop_reason: STOP_REASON[String(choice.finish_reason)] ?? 'end_turn',
    stop_sequence: null,
    usage: anthropicUsage(resp.usage),
  };
}

const ERROR_TYPE: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

/** An OpenAI error body as Anthropic's (the status stays). */
export function toAnthropicError(status: number, body: OpenAIErrorBody | unknown): Json {
  const e = isRecord(body) && isRecord(body.error) ? body.error : {};
  const message = typeof e.message === 'string' ? e.message : `The request failed with status ${status}`;
  const type = ERROR_TYPE[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { type: 'error', error: { type, message } };
}

const event = (type: string, data: Json): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * OpenAI `chat.completion.chunk` SSE in, Anthropic stream events out: message_start, one
 * content_block_start/delta/stop run per text, thinking or tool_use block, then message_delta (stop
 * reason and usage) and message_stop.
 */
export class AnthropicStreamWriter {
  readonly #model: string;
  readonly #reader;
  #out = '';
  #started = false;
  #ended = false;
  #index = -1;
  #open: { kind: 'text' | 'thinking' | 'tool'; key?: number } | undefined;
  #stop: string | undefined;
  #usage: unknown;

  constructor(requestedModel: string) {
    this.#model = requestedModel;
    this.#reader = sseReader((e) => {
      if (e.data === '[DONE]') return this.#finish();
      const chunk = eventJson(e);
      if (isRecord(chunk)) this.#chunk(chunk);
      return undefined;
    });
  }

  #start(chunk: Json): void {
    if (this.#started) return;
    this.#started = true;
    this.#out += event('message_start', {
      message: {
        id: messageId(chunk.id),
        type: 'message',
        role: 'assistant',
        model: typeof chunk.model === 'string' ? chunk.model : this.#model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
  }

  #close(): void {
    if (!this.#open) return;
    this.#out += event('content_block_stop', { index: this.#index });
    this.#open = undefined;
  }

  #block(kind: 'text' | 'thinking' | 'tool', contentBlock: Json, key?: number): void {
    this.#close();
    this.#index += 1;
    this.#open = key === undefined ? { kind } : { kind, key };
    this.#out += event('content_block_start', { index: this.#index, content_block: contentBlock });
  }

  #delta(delta: Json): void {
    this.#out += event('content_block_delta', { index: this.#index, delta });
  }

  #chunk(chunk: Json): void {
    if (isRecord(chunk.error)) {
      this.#close();
      this.#out += event('error', { error: toAnthropicError(500, chunk).error as Json });
      this.#ended = true;
      return;
    }
    this.#start(chunk);
    if (chunk.usage !== undefined && chunk.usage !== null) this.#usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) && isRecord(chunk.choices[0]) ? chunk.choices[0] : undefined;
    if (!choice) return;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    for (const b of Array.isArray(delta.content_blocks) ? delta.content_blocks : []) {
      const d = isRecord(b) && isRecord(b.delta) ? b.delta : {};
      if (typeof d.thinking === 'string') {
        if (this.#open?.kind !== 'thinking') this.#block('thinking', { type: 'thinking', thinking: '' });
        this.#delta({ type: 'thinking_delta', thinking: d.thinking });
      } else if (typeof d.signature === 'string') {
        if (this.#open?.kind !== 'thinking') this.#block('thinking', { type: 'thinking', thinking: '' });
        this.#delta({ type: 'signature_delta', signature: d.signature });
      } else if (typeof d.data === 'string') {
        this.#block('thinking', { type: 'redacted_thinking', data: d.data });
      }
    }
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (this.#open?.kind !== 'text') this.#block('text', { type: 'text', text: '' });
      this.#delta({ type: 'text_delta', text: delta.content });
    }
    for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      if (!isRecord(tc)) continue;
      const key = typeof tc.index === 'number' ? tc.index : 0;
      const fn = isRecord(tc.function) ? tc.function : {};
      if (!(this.#open?.kind === 'tool' && this.#open.key === key)) {
        this.#block('tool', { type: 'tool_use', id: String(tc.id ?? `toolu_${key}`), name: String(fn.name ?? ''), input: {} }, key);
      }
      if (typeof fn.arguments === 'string' && fn.arguments !== '') this.#delta({ type: 'input_json_delta', partial_json: fn.arguments });
    }
    if (typeof choice.finish_reason === 'string') {
      this.#stop = STOP_REASON[choice.finish_reason] ?? 'end_turn';
      this.#close();
    }
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#start({});
    this.#close();
    const usage = anthropicUsage(this.#usage);
    this.#out += event('message_delta', { delta: { stop_reason: this.#stop ?? 'end_turn', stop_sequence: null }, usage });
    this.#out += event('message_stop', {});
  }

  /** Feeds OpenAI SSE bytes (or text); returns Anthropic SSE text. */
  push(chunk: Uint8Array | string): string {
    this.#reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    const out = this.#out;
    this.#out = '';
    return out;
  }

  /** The OpenAI stream ended (with or without `[DONE]`). */
  end(): string {
    this.#reader.end();
    this.#finish();
    const out = this.#out;
    this.#out = '';
    return out;
  }
}

/**
 * `count_tokens` for targets that are not Anthropic: an estimate of about four characters per
 * token over the text, tool definitions and system prompt (images count 1,600 tokens each).
 */
export function estimateInputTokens(raw: unknown): { input_tokens: number } {
  const req = isRecord(raw) ? raw : {};
  let chars = 0;
  let images = 0;
  const walk = (v: unknown): void => {
    if (typeof v === 'string') chars += v.length;
    else if (Array.isArray(v)) v.forEach(walk);
    else if (isRecord(v)) {
      if (v.type === 'image' || v.type === 'document') {
        images += 1;
        return;
      }
      for (const [k, x] of Object.entries(v)) if (k !== 'type' && k !== 'cache_control') walk(x);
    }
  };
  walk(req.system);
  walk(req.messages);
  walk(req.tools);
  return { input_tokens: Math.ceil(chars / 4) + images * 1600 };
}
