/**
 * Anthropic's Messages format as a dialect (`POST /v1/messages`, `/v1/messages/count_tokens`): the
 * request becomes an OpenAI chat request for the routing engine; an Anthropic target takes it as it
 * came; the answer, from whichever target answered, becomes Anthropic's again (an Anthropic
 * target's answer is already). Imported by the route on the first such request only.
 */
import { readCapped, rewriteStream } from '../http/node-streams.ts';
import { Readable } from 'node:stream';
import { nodeStreamResponse, textResponse } from '../http/bodies.ts';
import type { GantryError } from '../http/errors.ts';
import { toOpenAIBody, ValidationError } from '../http/errors.ts';
import { isRecord } from '../providers/native/chat-input.ts';
import { eventJson, sseReader } from '../providers/native/sse-in.ts';
import { findProvider } from '../providers/registry.ts';
import type { ProviderDefinition } from '../providers/types.ts';
import { formatUsd } from '../pricing/cost.ts';
import {
  AnthropicStreamWriter,
  anthropicToOpenAI,
  estimateInputTokens,
  isPassThrough,
  openAIToAnthropic,
  passThroughRequest,
  toAnthropicError,
} from './anthropic-inbound.ts';
import { forwardedHeaders, prepareNative, resolveProvider, type CallerDeps, type CallInput } from './call-target.ts';
import type { Dialect, DialectAnswer, DialectRequest } from './dialect.ts';
import type { TokenUsage } from '../kernel/lifecycle.ts';
import { observeBody } from './observe.ts';
import { endCleanly, namedErrorEvent, openAIErrorEvent, passedHeaders, readProvider } from './respond.ts';
import type { Attempt, TargetCaller } from './routing/execute.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';
import { noteOpenAIUsage, noteUsage, priceRecord } from '../kernel/usage.ts';

export { isPassThrough } from './anthropic-inbound.ts';

export type MessagesKind = 'messages' | 'count_tokens';

const ANTHROPIC_ONLY = /can only be (sent to|used with) Anthropic itself/;

/**
 * The OpenAI chat request a Messages body stands for (validated as one by the pipeline).
 * count_tokens bodies have no max_tokens, and never stream. What only Anthropic itself takes
 * (server tools, containers, MCP servers ...) cannot be translated: routing then goes on with the
 * request's model alone, and `anthropicOnly` is the refusal for any target but Anthropic.
 */
export function toChatRequest(kind: MessagesKind, body: Record<string, unknown>): { chat: Record<string, unknown>; anthropicOnly?: ValidationError } {
  const { stream: _stream, ...rest } = body;
  const source = kind === 'messages' ? body : { ...rest, max_tokens: 1 };
  try {
    return { chat: anthropicToOpenAI(source) };
  } catch (err) {
    if (!(err instanceof ValidationError) || !err.problems.every((p) => ANTHROPIC_ONLY.test(p.message))) throw err;
    // Only Anthropic will take it, as it came; guardrails still read every text of it.
    const chat: Record<string, unknown> = { model: source.model, max_tokens: source.max_tokens, messages: textMessages(source) };
    if (source.stream === true) {
      chat.stream = true;
      chat.stream_options = { include_usage: true };
    }
    return { chat, anthropicOnly: err };
  }
}

/** A block list's (or a string's) texts: text blocks, tool results' contents, tool inputs as JSON. */
function blockTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((b): string[] => {
    if (!isRecord(b)) return [];
    if (typeof b.text === 'string') return [b.text];
    if (b.type === 'tool_result') return blockTexts(b.content);
    if (b.input !== undefined) return [JSON.stringify(b.input)];
    return [];
  });
}

/** A Messages request's texts as chat messages with their roles (tool results speak as `tool`). */
function textMessages(source: Record<string, unknown>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const system = blockTexts(source.system).join('\n');
  if (system) out.push({ role: 'system', content: system });
  for (const m of Array.isArray(source.messages) ? source.messages : []) {
    if (!isRecord(m)) continue;
    const results = Array.isArray(m.content) ? m.content.filter((b) => isRecord(b) && b.type === 'tool_result') : [];
    for (const r of results) out.push({ role: 'tool', tool_call_id: 'x', content: blockTexts([r]).join('\n') });
    const rest = Array.isArray(m.content) ? m.content.filter((b) => !results.includes(b)) : m.content;
    const text = blockTexts(rest).join('\n');
    if (text) out.push({ role: m.role === 'assistant' ? 'assistant' : 'user', content: text });
  }
  if (!out.some((m) => m.role === 'user')) out.push({ role: 'user', content: '(a request only Anthropic can serve)' });
  return out;
}

/**
 * The request's headers for the gateway. Anthropic's SDKs send their `apiKey` as `x-api-key` (0.x)
 * or as `Authorization: Bearer` (1.x), so without `x-gw-api-key` (or `x-gw-jwt`) the gateway key is
 * taken from `x-api-key`, else from `Authorization`; that header is then removed, so it is never
 * passed on nor taken for a provider key. With `x-gw-api-key`, `x-api-key` is a provider key.
 */
export function inboundHeaders(headers: Headers): { headers: Headers; providerKey?: string } {
  const xApiKey = headers.get('x-api-key')?.trim() || undefined;
  if (headers.get('x-gw-api-key') || headers.get('x-gw-jwt')) return xApiKey ? { headers, providerKey: xApiKey } : { headers };
  const bearer = headers
    .get('authorization')
    ?.match(/^Bearer\s+(.+)$/i)?.[1]
    ?.trim();
  const gatewayKey = xApiKey ?? bearer;
  if (!gatewayKey) return { headers };
  const moved = new Headers(headers);
  moved.delete(xApiKey ? 'x-api-key' : 'authorization');
  moved.set('x-gw-api-key', gatewayKey);
  return { headers: moved };
}

/** A gateway refusal in Anthropic's error shape. */
export function refusalBody(e: GantryError): Record<string, unknown> {
  return toAnthropicError(e.status, toOpenAIBody(e));
}

/** Anthropic usage as the record keeps it: prompt tokens include cache reads and writes. */
export function anthropicTokenUsage(u: unknown): TokenUsage | undefined {
  if (!isRecord(u)) return undefined;
  const n = (k: string) => (typeof u[k] === 'number' ? (u[k] as number) : 0);
  const read = n('cache_read_input_tokens');
  const prompt = n('input_tokens') + read + n('cache_creation_input_tokens');
  const completion = n('output_tokens');
  const usage: TokenUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (read) usage.cached_tokens = read;
  return usage;
}

const MAX_ERROR_BYTES = 1 << 20;
const MAX_JSON_BYTES = 16 << 20;

function parse(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** An answer to render, with what the request said. */
interface MessagesAnswer extends DialectAnswer {
  kind: MessagesKind;
  /** The answer is already Anthropic's (an Anthropic target, or the gateway's token estimate). */
  anthropicShaped: boolean;
  requestedModel: string;
}

const json = (value: unknown, status: number, headers: Headers): Response => {
  headers.set('content-type', 'application/json');
  return textResponse(JSON.stringify(value), { status, headers });
};

/** Renders the routing engine's answer in Anthropic's format, filling the record as the pipeline does. */
async function respondMessages(a: MessagesAnswer): Promise<Response> {
  const { answer, record } = a;
  if (answer.status >= 400) {
    const text = (await readProvider(readCapped(answer.body, MAX_ERROR_BYTES))).bytes.toString('utf8');
    a.done();
    const headers = passedHeaders(answer, a.out);
    const parsed = parse(Buffer.from(text));
    if (a.anthropicShaped && isRecord(parsed) && parsed.type === 'error') return json(parsed, answer.status, headers);
    const openai =
      isRecord(parsed) && isRecord(parsed.error)
        ? parsed
        : {
            error: {
              message: `The provider answered ${answer.status}${
                text
                  ? `: ${text
                      .replace(/<[^>]*>/g, ' ')
                      .replace(/\s+/g, ' ')
                      .trim()
                      .slice(0, 200)}`
                  : ''
              }`,
            },
          };
    // A guardrail denial keeps its hook results beside Anthropic's error.
    const hookResults = isRecord(parsed) && isRecord(parsed.hook_results) ? { hook_results: parsed.hook_results } : {};
    return json({ ...toAnthropicError(answer.status, openai), ...hookResults }, answer.status, headers);
  }

  if (a.kind === 'count_tokens' || !record.stream) {
    const { bytes } = await readProvider(readCapped(answer.body, MAX_JSON_BYTES));
    const parsed = parse(bytes);
    let out = bytes;
    if (a.kind === 'messages' && isRecord(parsed)) {
      record.response = parsed;
      if (a.anthropicShaped) noteUsage(record, anthropicTokenUsage(parsed.usage), parsed.model);
      else noteOpenAIUsage(record, parsed);
      const micros = priceRecord(record, a.pricer);
      if (micros !== undefined) a.out['x-gw-cost'] = formatUsd(micros);
      if (!a.anthropicShaped) out = Buffer.from(JSON.stringify(openAIToAnthropic(parsed, a.requestedModel)));
    }
    const body = Readable.from([out]);
    // Timing only: the usage is read above.
    observeBody(body, '', record, a.clock, a.done);
    const headers = passedHeaders(answer, a.out);
    headers.set('content-type', 'application/json');
    return nodeStreamResponse(body, { status: answer.status, headers });
  }

  const headers = passedHeaders(answer, a.out);
  headers.set('content-type', 'text/event-stream; charset=utf-8');
  headers.set('cache-control', 'no-cache');
  // A stream the provider cut ends with an error event rather than a dropped connection (or, from
  // an OpenAI target, a made-up end_turn): the writer turns OpenAI's error event into Anthropic's.
  const source = endCleanly(answer.body, record, a.anthropicShaped ? namedErrorEvent : openAIErrorEvent);
  if (a.anthropicShaped) {
    // Anthropic's own stream, passed on as it is; its usage read on the way.
    let usage: Record<string, unknown> = {};
    const reader = sseReader((e) => {
      const data = eventJson(e);
      if (!isRecord(data)) return;
      let model: unknown;
      if (data.type === 'message_start' && isRecord(data.message)) {
        if (isRecord(data.message.usage)) usage = { ...data.message.usage };
        model = data.message.model;
      } else if (data.type === 'message_delta' && isRecord(data.usage)) usage = { ...usage, ...data.usage };
      noteUsage(record, anthropicTokenUsage(usage), model);
    });
    async function* tap(): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of source as AsyncIterable<Buffer>) {
          reader.push(chunk);
          yield chunk;
        }
        reader.end();
      } finally {
        source.destroy();
      }
    }
    const body = Readable.from(tap(), { objectMode: false });
    observeBody(body, '', record, a.clock, a.done);
    return nodeStreamResponse(body, { status: answer.status, headers });
  }
  // An OpenAI stream (it always carries usage: the translated request asks for it): observed as
  // any chat stream, then rewritten into Anthropic's events.
  observeBody(source, 'text/event-stream', record, a.clock, a.done);
  const writer = new AnthropicStreamWriter(a.requestedModel);
  return nodeStreamResponse(rewriteStream(source, writer), { status: answer.status, headers });
}

// ---- The dialect -------------------------------------------------------------------------------

const jsonAttempt = (status: number, value: unknown): Attempt => {
  const bytes = Buffer.from(JSON.stringify(value));
  return { status, headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) }, body: Readable.from([bytes]) };
};

/** The request as it came, to an Anthropic target: override_params over it, its own key and version headers. */
async function callAsIs(
  deps: CallerDeps,
  input: CallInput,
  req: AsIs,
  target: ResolvedTarget,
  declared: ProviderDefinition,
  signal: AbortSignal | undefined,
): Promise<Attempt> {
  const overrides = target.override_params;
  const body = Object.keys(overrides).length ? { ...req.value, ...overrides } : req.value;
  const { ctx, base, timeoutMs } = await prepareNative(deps, input, target, declared, body, true);
  const text = body === req.value ? req.text : JSON.stringify(body);
  const out = await passThroughRequest(text, req.kind, ctx, input.clientHeaders);
  const url = base ? new URL(base + (req.kind === 'messages' ? '/messages' : '/messages/count_tokens')) : out.url;
  const res = await deps.upstream.send({ ...out, url, headers: { ...forwardedHeaders(input, target), ...out.headers }, timeoutMs, signal });
  return { status: res.status, headers: res.headers, body: res.body };
}

/** A Messages request as it came. */
interface AsIs {
  kind: MessagesKind;
  text: string;
  value: Record<string, unknown>;
  /** Set when the request uses what only Anthropic takes: the refusal for every other target. */
  anthropicOnly?: ValidationError;
}

function messagesRequest(req: AsIs, openai: Record<string, unknown>): DialectRequest {
  const requestedModel = typeof req.value.model === 'string' ? req.value.model : '';
  /** Anthropic targets sent the rewritten request in OpenAI's format: they answer in it too. */
  const translated = new Set<ResolvedTarget>();
  return {
    openai,
    wrapCaller:
      (inner: TargetCaller, input: CallInput, deps: CallerDeps): TargetCaller =>
      async (target, signal) => {
        const declared = target.provider ? findProvider(target.provider) : undefined;
        // A guardrail rewrote the request: Anthropic gets the rewritten one (translated), never the original.
        const rewritten = input.body.kind === 'json' && input.body.rewritten === true;
        if (rewritten && req.anthropicOnly) throw req.anthropicOnly;
        if (declared?.native && isPassThrough({ provider: declared.id })) {
          if (!rewritten) return callAsIs(deps, input, req, target, declared, signal);
          translated.add(target);
        }
        if (req.kind === 'count_tokens') {
          // An unknown provider is still refused; every other one gets the gateway's estimate, no provider call.
          if (!declared?.native) resolveProvider(target, input);
          return jsonAttempt(200, estimateInputTokens(req.value));
        }
        if (req.anthropicOnly) throw req.anthropicOnly;
        return inner(target, signal);
      },
    answer: (a: DialectAnswer) =>
      respondMessages({
        ...a,
        kind: req.kind,
        // count_tokens is Anthropic's or the gateway's estimate in its shape.
        anthropicShaped: req.kind === 'count_tokens' || (isPassThrough(a.target) && !translated.has(a.target)),
        requestedModel,
      }),
  };
}

/** The dialect of `/v1/messages` (`messages`) or `/v1/messages/count_tokens`. */
export function anthropicDialect(kind: MessagesKind): Dialect {
  return {
    name: `anthropic-${kind}`,
    inbound: inboundHeaders,
    translate(value, text) {
      const { chat, anthropicOnly } = toChatRequest(kind, value);
      return messagesRequest({ kind, text, value, ...(anthropicOnly ? { anthropicOnly } : {}) }, chat);
    },
    refusalBody,
  };
}
