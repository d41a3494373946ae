/**
 * OpenAI-shaped answers built from what a native provider said: the `chat.completion` object, the
 * `chat.completion.chunk` stream (one writer for every provider, so that every stream starts with
 * the role, ends with finish_reason, carries usage when asked and always reports it to the caller),
 * error bodies and embeddings.
 */
import type { OpenAIErrorBody } from '../../http/errors.ts';
import type { ChatUsage, FinishReason, ProviderRequestContext, StreamOutcome, StreamTransformer } from '../transform.ts';
import { isRecord } from '../../http/json.ts';
import { type ContentBlock } from './chat-input.ts';

export interface ToolCallOut {
  id: string;
  name: string;
  arguments: string;
}

export interface ChoiceOut {
  text: string | null;
  toolCalls: ToolCallOut[];
  blocks: ContentBlock[];
  finishReason: FinishReason;
}

/** Name of the tool forced for JSON-schema output where the provider has no native JSON mode. */
export const JSON_TOOL = 'json_response';

/** The request used the deprecated `functions` API (answers then use `function_call`). */
export const usesLegacyFunctions = (ctx: Pick<ProviderRequestContext, 'request'>): boolean =>
  !Array.isArray(ctx.request.tools) && Array.isArray(ctx.request.functions);

/**
 * Whether JSON-schema output is served by a forced tool, for providers without a native JSON mode
 * (Anthropic, Bedrock Converse): only without tools of the client's own, without extended thinking
 * (which cannot be combined with a forced tool) and for object schemas. Otherwise those providers get
 * the schema as a system instruction.
 */
export function jsonViaTool(ctx: Pick<ProviderRequestContext, 'request'>): boolean {
  const { response_format: rf, tools, functions, thinking } = ctx.request;
  if (!isRecord(rf) || rf.type !== 'json_schema') return false;
  const own = tools ?? functions;
  if (Array.isArray(own) && own.length > 0) return false;
  if (isRecord(thinking) && thinking.type === 'enabled') return false;
  const schema = isRecord(rf.json_schema) ? rf.json_schema.schema : undefined;
  return !isRecord(schema) || schema.type === undefined || schema.type === 'object';
}

export function makeUsage(
  prompt: number,
  completion: number,
  extra: { cacheRead?: number; cacheWrite?: number; reasoning?: number; total?: number } = {},
): ChatUsage {
  const usage: ChatUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: extra.total ?? prompt + completion };
  if (extra.cacheRead !== undefined) usage.prompt_tokens_details = { cached_tokens: extra.cacheRead };
  if (extra.reasoning !== undefined) usage.completion_tokens_details = { reasoning_tokens: extra.reasoning };
  if (extra.cacheRead !== undefined) usage.cache_read_input_tokens = extra.cacheRead;
  if (extra.cacheWrite !== undefined) usage.cache_creation_input_tokens = extra.cacheWrite;
  return usage;
}

/** Usage as sent to clients: the cache-write extras only when strict compliance is off. */
export function publicUsage(usage: ChatUsage, ctx: Pick<ProviderRequestContext, 'strictOpenAICompliance'>): ChatUsage {
  if (!ctx.strictOpenAICompliance) return usage;
  const { cache_read_input_tokens: _r, cache_creation_input_tokens: _w, ...rest } = usage;
  return rest;
}

function messageOf(choice: ChoiceOut, ctx: ProviderRequestContext, legacy: boolean): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: choice.text, refusal: null };
  const calls = choice.toolCalls;
  if (calls.length && legacy) {
    const first = calls[0] as ToolCallOut;
    message.function_call = { name: first.name, arguments: first.arguments };
  } else if (calls.length) {
    message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  }
  if (!ctx.strictOpenAICompliance && choice.blocks.some((b) => b.type !== 'text')) message.content_blocks = choice.blocks;
  return message;
}

/** A `chat.completion` object. */
export function chatCompletion(
  ctx: ProviderRequestContext,
  answer: { id?: string | undefined; model?: string | undefined; choices: ChoiceOut[]; usage?: ChatUsage | undefined },
): Record<string, unknown> {
  const legacy = usesLegacyFunctions(ctx);
  const completion: Record<string, unknown> = {
    id: answer.id ?? `chatcmpl-${ctx.requestId}`,
    object: 'chat.completion',
    created: Math.floor(ctx.clock.now() / 1000),
    model: answer.model ?? ctx.model,
    choices: answer.choices.map((c, index) => ({
      index,
      message: messageOf(c, ctx, legacy),
      logprobs: null,
      finish_reason: legacy && c.finishReason === 'tool_calls' ? 'function_call' : c.finishReason,
    })),
  };
  if (answer.usage) {
    completion.usage = publicUsage(answer.usage, ctx);
    // The full usage (cache writes included) stays with the object for the log, out of its JSON.
    Object.defineProperty(completion, FULL_USAGE, { value: answer.usage, enumerable: false });
  }
  return completion;
}

const FULL_USAGE = Symbol('usage');

/** The usage of a transformed answer: the full one for chat completions, `usage` for anything else. */
export function usageOf(answer: unknown): ChatUsage | undefined {
  if (!isRecord(answer)) return undefined;
  const full = (answer as { [FULL_USAGE]?: ChatUsage })[FULL_USAGE];
  if (full) return full;
  const u = answer.usage;
  if (!isRecord(u) || typeof u.prompt_tokens !== 'number') return undefined;
  const prompt = u.prompt_tokens;
  const completion = typeof u.completion_tokens === 'number' ? u.completion_tokens : 0;
  return {
    ...(u as object),
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: typeof u.total_tokens === 'number' ? u.total_tokens : prompt + completion,
  };
}

/** Text, thinking and tool calls of one answer, in provider order, as a ChoiceOut. */
export class ChoiceBuilder {
  readonly #text: string[] = [];
  readonly #blocks: ContentBlock[] = [];
  readonly toolCalls: ToolCallOut[] = [];
  readonly #jsonTool: boolean;
  constructor(jsonTool: boolean) {
    this.#jsonTool = jsonTool;
  }
  text(t: string): void {
    this.#text.push(t);
    const last = this.#blocks.at(-1);
    if (last?.type === 'text') last.text += t;
    else this.#blocks.push({ type: 'text', text: t });
  }
  thinking(thinking: string, signature?: string): void {
    this.#blocks.push(signature === undefined ? { type: 'thinking', thinking } : { type: 'thinking', thinking, signature });
  }
  redacted(data: string): void {
    this.#blocks.push({ type: 'redacted_thinking', data });
  }
  tool(id: string, name: string, args: string): void {
    // JSON-schema output served by a forced tool is the message's content.
    if (this.#jsonTool && name === JSON_TOOL) this.text(args);
    else this.toolCalls.push({ id, name, arguments: args });
  }
  build(finish: FinishReason): ChoiceOut {
    const text = this.#text.length ? this.#text.join('') : null;
    let finishReason = finish;
    // `tool_calls` without a call (the forced JSON tool, say) would mislead clients.
    if (finish === 'tool_calls' && this.toolCalls.length === 0) finishReason = 'stop';
    if (finish === 'stop' && this.toolCalls.length) finishReason = 'tool_calls';
    return { text, toolCalls: this.toolCalls, blocks: this.#blocks, finishReason };
  }
}

const sse = (obj: unknown): string => `data: ${JSON.stringify(obj)}\n\n`;
export const SSE_DONE = 'data: [DONE]\n\n';

interface ChoiceState {
  started: boolean;
  finished: boolean;
  /** Provider key (block index, call id) -> OpenAI tool call index. */
  tools: Map<string | number, { index: number; json: boolean }>;
  sawToolCall: boolean;
}

/**
 * Writes `chat.completion.chunk` events. Providers call it with what they parsed; it guarantees the
 * role on each choice's first chunk, tool call indexes from 0, one finish_reason per choice, the
 * usage chunk (empty choices) before `[DONE]` when `stream_options.include_usage` is set, and
 * reports usage and finish in `outcome()` either way.
 */
export class ChunkWriter {
  readonly #ctx: ProviderRequestContext;
  readonly #legacy: boolean;
  readonly #jsonTool: boolean;
  readonly #choices = new Map<number, ChoiceState>();
  #id: string;
  #model: string;
  readonly #created: number;
  #usage: ChatUsage | undefined;
  #finish: FinishReason | undefined;
  #error: OpenAIErrorBody | undefined;
  #done = false;

  /** `jsonTool`: the provider serves JSON-schema output through the forced JSON_TOOL. */
  constructor(ctx: ProviderRequestContext, opts: { jsonTool?: boolean } = {}) {
    this.#ctx = ctx;
    this.#legacy = usesLegacyFunctions(ctx);
    this.#jsonTool = opts.jsonTool ?? false;
    this.#id = `chatcmpl-${ctx.requestId}`;
    this.#model = ctx.model;
    this.#created = Math.floor(ctx.clock.now() / 1000);
  }

  setId(id: string | undefined): void {
    if (id) this.#id = id;
  }
  setModel(model: string | undefined): void {
    if (model) this.#model = model;
  }

  #chunk(index: number, delta: Record<string, unknown>, finish: string | null = null): string {
    return sse({
      id: this.#id,
      object: 'chat.completion.chunk',
      created: this.#created,
      model: this.#model,
      choices: [{ index, delta, logprobs: null, finish_reason: finish }],
    });
  }

  #state(index: number): ChoiceState {
    let s = this.#choices.get(index);
    if (!s) {
      s = { started: false, finished: false, tools: new Map(), sawToolCall: false };
      this.#choices.set(index, s);
    }
    return s;
  }

  /** The role chunk, once per choice. */
  start(index = 0): string {
    const s = this.#state(index);
    if (s.started) return '';
    s.started = true;
    return this.#chunk(index, { role: 'assistant', content: '' });
  }

  text(t: string, index = 0): string {
    if (t === '') return this.start(index);
    return this.start(index) + this.#chunk(index, { content: t });
  }

  /** Reasoning as a `content_blocks` delta (dropped under strict compliance). */
  thinking(delta: { thinking?: string; signature?: string; data?: string }, blockIndex: number, index = 0): string {
    if (this.#ctx.strictOpenAICompliance) return this.start(index);
    return this.start(index) + this.#chunk(index, { content_blocks: [{ index: blockIndex, delta }] });
  }

  toolStart(key: string | number, id: string, name: string, index = 0): string {
    const s = this.#state(index);
    const head = this.start(index);
    if (this.#jsonTool && name === JSON_TOOL) {
      s.tools.set(key, { index: -1, json: true });
      return head;
    }
    const toolIndex = [...s.tools.values()].filter((t) => !t.json).length;
    s.tools.set(key, { index: toolIndex, json: false });
    s.sawToolCall = true;
    if (this.#legacy) {
      return toolIndex === 0 ? head + this.#chunk(index, { function_call: { name, arguments: '' } }) : head;
    }
    return head + this.#chunk(index, { tool_calls: [{ index: toolIndex, id, type: 'function', function: { name, arguments: '' } }] });
  }

  toolArgs(key: string | number, args: string, index = 0): string {
    const tool = this.#state(index).tools.get(key);
    if (!tool || args === '') return '';
    if (tool.json) return this.#chunk(index, { content: args });
    if (this.#legacy) return tool.index === 0 ? this.#chunk(index, { function_call: { arguments: args } }) : '';
    return this.#chunk(index, { tool_calls: [{ index: tool.index, function: { arguments: args } }] });
  }

  /** The choice's last chunk. A `stop` after tool calls becomes `tool_calls`, as OpenAI reports it. */
  finish(reason: FinishReason, index = 0): string {
    const s = this.#state(index);
    if (s.finished) return '';
    s.finished = true;
    let r: FinishReason = reason;
    if (r === 'stop' && s.sawToolCall) r = 'tool_calls';
    if (r === 'tool_calls' && !s.sawToolCall) r = 'stop';
    if (r === 'tool_calls' && this.#legacy) r = 'function_call';
    if (index === 0) this.#finish = r;
    return this.start(index) + this.#chunk(index, {}, r);
  }

  usage(u: ChatUsage): void {
    this.#usage = u;
  }

  /** A provider error mid-stream: an OpenAI-style `error` event; the stream then ends. */
  error(body: OpenAIErrorBody): string {
    this.#error = body;
    this.#done = true;
    return sse(body) + SSE_DONE;
  }

  /** Closes the stream: the usage chunk when asked for, then `[DONE]`. */
  end(): string {
    if (this.#done) return '';
    this.#done = true;
    const open = [...this.#choices.values()].some((s) => !s.finished);
    if (this.#choices.size === 0 || open) {
      // The provider stopped without saying why: a truncated stream must not look complete.
      return this.error(providerError(502, 'The provider stream ended before the answer was complete', 'stream_truncated'));
    }
    let out = '';
    if (this.#ctx.includeUsage && this.#usage) {
      out += sse({
        id: this.#id,
        object: 'chat.completion.chunk',
        created: this.#created,
        model: this.#model,
        choices: [],
        usage: publicUsage(this.#usage, this.#ctx),
      });
    }
    return out + SSE_DONE;
  }

  outcome(): StreamOutcome {
    const o: StreamOutcome = { model: this.#model };
    if (this.#usage) o.usage = this.#usage;
    if (this.#finish) o.finishReason = this.#finish;
    if (this.#error) o.error = this.#error;
    return o;
  }
}

const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  504: 'timeout_error',
};

/** OpenAI's error shape; the type follows the status, the code is the provider's own. */
export function providerError(status: number, message: string, code: string | null = null, param: string | null = null): OpenAIErrorBody {
  const type = TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  return { error: { message, type, param, code } };
}

/** Error text that is not the provider's JSON (an HTML page from a proxy, say), shortened. */
export function errorSnippet(status: number, text: string): string {
  const snippet = text
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
  return `The provider answered ${status}${snippet ? `: ${snippet}` : ''}`;
}

/** Vectors as OpenAI returns them: floats, or base64 of little-endian float32 (the openai SDK's default). */
export function embeddingList(vectors: readonly (readonly number[])[], model: string, promptTokens: number, encoding: unknown): Record<string, unknown> {
  return {
    object: 'list',
    data: vectors.map((v, index) => ({
      object: 'embedding',
      index,
      embedding: encoding === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v,
    })),
    model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

/** The rerank result of docs/design/spec.md#answers-gantry-shapes, sorted by relevance. */
export function rerankResult(
  results: readonly { index: number; score: number }[],
  documents: readonly unknown[],
  body: Readonly<Record<string, unknown>>,
  meta: { id: string; model: string; provider: string; searchUnits: number },
): Record<string, unknown> {
  const withDocs = body.return_documents === true;
  const sorted = [...results].sort((a, b) => b.score - a.score);
  return {
    object: 'list',
    id: meta.id,
    model: meta.model,
    provider: meta.provider,
    results: sorted.map((r) => {
      const out: Record<string, unknown> = { index: r.index, relevance_score: r.score };
      if (withDocs) out.document = { text: documentText(documents[r.index]) };
      return out;
    }),
    usage: { search_units: meta.searchUnits },
  };
}

/** A rerank document as text: strings as they are, `{text}` objects by their text, others as JSON. */
export function documentText(doc: unknown): string {
  if (typeof doc === 'string') return doc;
  if (typeof doc === 'object' && doc !== null && typeof (doc as { text?: unknown }).text === 'string') return (doc as { text: string }).text;
  return JSON.stringify(doc ?? null);
}

/**
 * The StreamTransformer shape every SSE-based native stream shares: feed the reader, hand back the
 * OpenAI chunks it produced (`take` empties the provider's output buffer), and close with the
 * writer's final chunks.
 */
export function sseStreamTransformer(reader: { push(chunk: Uint8Array): void; end(): void }, writer: ChunkWriter, take: () => string): StreamTransformer {
  return {
    push(chunk) {
      reader.push(chunk);
      return take();
    },
    end() {
      reader.end();
      return take() + writer.end();
    },
    outcome: () => writer.outcome(),
  };
}
