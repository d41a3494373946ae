/**
 * Anthropic's Messages format at the gateway (`POST /v1/messages`, `/v1/messages/count_tokens`):
 * the pipeline-side half of `anthropic-inbound.ts`. The request becomes an OpenAI chat request for
 * the routing engine; the answer, from whichever target answered, becomes Anthropic's again (an
 * Anthropic target's answer is already). Imported by the pipeline on the first such request only.
 */
import { readCapped, rewriteStream } from '../http/node-streams.ts';
import { Readable } from 'node:stream';
import type { Clock } from '../ports/clock.ts';
import { nodeStreamResponse, textResponse } from '../http/bodies.ts';
import type { GantryError } from '../http/errors.ts';
import { toOpenAIBody, ValidationError } from '../http/errors.ts';
import { isRecord } from '../providers/native/chat-input.ts';
import { eventJson, sseReader } from '../providers/native/sse-in.ts';
import type { PriceBook } from '../pricing/price-book.ts';
import { formatUsd } from '../pricing/cost.ts';
import { AnthropicStreamWriter, anthropicToOpenAI, openAIToAnthropic, toAnthropicError } from './anthropic-inbound.ts';

export { isPassThrough } from './anthropic-inbound.ts';
import type { GatewayRecord, TokenUsage } from './lifecycle.ts';
import { observeBody, toUsage } from './observe.ts';
import { passedHeaders, type ProviderAnswer } from './respond.ts';

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
    const chat: Record<string, unknown> = { model: source.model, max_tokens: source.max_tokens, messages: [{ role: 'user', content: '(a request only Anthropic can serve)' }] };
    if (source.stream === true) {
      chat.stream = true;
      chat.stream_options = { include_usage: true };
    }
    return { chat, anthropicOnly: err };
  }
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
  const bearer = headers.get('authorization')?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
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

export interface MessagesAnswer {
  kind: MessagesKind;
  answer: ProviderAnswer;
  /** The answer is already Anthropic's (an Anthropic target, or the gateway's token estimate). */
  anthropicShaped: boolean;
  requestedModel: string;
  record: GatewayRecord;
  clock: Clock;
  pricing: PriceBook;
  /** The gateway's response headers. */
  out: Record<string, string>;
  /** Completes the record (hooks), once the response has ended. */
  done: () => void;
}

const json = (value: unknown, status: number, headers: Headers): Response => {
  headers.set('content-type', 'application/json');
  return textResponse(JSON.stringify(value), { status, headers });
};

/** Renders the routing engine's answer in Anthropic's format, filling the record as the pipeline does. */
export async function respondMessages(a: MessagesAnswer): Promise<Response> {
  const { answer, record } = a;
  if (answer.status >= 400) {
    const text = (await readCapped(answer.body, MAX_ERROR_BYTES)).bytes.toString('utf8');
    a.done();
    const headers = passedHeaders(answer, a.out);
    const parsed = parse(Buffer.from(text));
    if (a.anthropicShaped && isRecord(parsed) && parsed.type === 'error') return json(parsed, answer.status, headers);
    const openai = isRecord(parsed) && isRecord(parsed.error) ? parsed : { error: { message: `The provider answered ${answer.status}${text ? `: ${text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200)}` : ''}` } };
    return json(toAnthropicError(answer.status, openai), answer.status, headers);
  }

  if (a.kind === 'count_tokens' || !record.stream) {
    const { bytes } = await readCapped(answer.body, MAX_JSON_BYTES);
    const parsed = parse(bytes);
    let out = bytes;
    if (a.kind === 'messages' && isRecord(parsed)) {
      record.response = parsed;
      const usage = a.anthropicShaped ? anthropicTokenUsage(parsed.usage) : toUsage(parsed.usage as Parameters<typeof toUsage>[0]);
      if (usage) record.usage = usage;
      if (typeof parsed.model === 'string') record.model = parsed.model;
      const micros = a.pricing.costMicros(record);
      if (micros !== undefined) {
        record.costMicros = micros;
        a.out['x-gw-cost'] = formatUsd(micros);
      }
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
  const source = answer.body;
  if (a.anthropicShaped) {
    // Anthropic's own stream, passed on as it is; its usage read on the way.
    let usage: Record<string, unknown> = {};
    const reader = sseReader((e) => {
      const data = eventJson(e);
      if (!isRecord(data)) return;
      if (data.type === 'message_start' && isRecord(data.message)) {
        if (isRecord(data.message.usage)) usage = { ...data.message.usage };
        if (typeof data.message.model === 'string') record.model = data.message.model;
      } else if (data.type === 'message_delta' && isRecord(data.usage)) usage = { ...usage, ...data.usage };
      const u = anthropicTokenUsage(usage);
      if (u) record.usage = u;
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
