/** Turning a provider's answer into the gateway's: streamed through, errors in OpenAI's shape. */
import { endOnBreak, readCapped } from '../http/node-streams.ts';
import { Readable } from 'node:stream';
import { nodeStreamResponse, textResponse } from '../http/bodies.ts';
import type { IncomingHttpHeaders } from 'node:http';
import { GantryError, toOpenAIBody, UpstreamError } from '../http/errors.ts';
import { tryParseJson } from '../http/json.ts';
import type { GatewayRecord } from '../kernel/lifecycle.ts';

/** A provider answer: status, headers and a body still to be read. */
export interface ProviderAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/**
 * What a provider body that broke while being read becomes: a 502 naming the cause (the idle
 * timeout's own error, or a connection closed before the answer was complete).
 */
export function brokenAnswer(err: unknown): GantryError {
  if (err instanceof GantryError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return new UpstreamError(502, `The provider closed the connection before its answer was complete${code ? ` (${code})` : ''}`);
}

/** How a stream cut by the provider ends on an OpenAI stream: the error event the openai SDK raises. */
export const openAIErrorEvent = (e: GantryError): string => `data: ${JSON.stringify(toOpenAIBody(e))}\n\n`;

/**
 * How a cut stream of unknown protocol ends (the passthrough, Anthropic's own stream): an `error`
 * event both SDKs raise, Anthropic's by its name and OpenAI's by its `error` member.
 */
export const namedErrorEvent = (e: GantryError): string => `event: error\ndata: ${JSON.stringify({ type: 'error', error: toOpenAIBody(e).error })}\n\n`;

/**
 * A provider body whose break (closed early, shorter than its Content-Length, silent past the idle
 * timeout) ends the client's answer cleanly, after `tail`'s error event when the stream has a
 * protocol to carry one, and is recorded for the log. Never a dropped client connection.
 */
export function endCleanly(body: Readable, record: GatewayRecord, tail?: (e: GantryError) => string): Readable {
  return endOnBreak(body, (err) => {
    const e = brokenAnswer(err);
    record.errorCode = 'upstream_stream_interrupted';
    record.errorMessage = e.message;
    return tail?.(e);
  });
}

/** Reads a provider body, turning a broken one into `brokenAnswer`'s 502. */
export async function readProvider<T>(reading: Promise<T>): Promise<T> {
  try {
    return await reading;
  } catch (err) {
    throw brokenAnswer(err);
  }
}

/** Provider headers worth passing on to the client. */
const PASSED = /^(content-type|content-disposition|x-request-id|request-id|openai-(processing-ms|version|model)|x-ratelimit-.*|retry-after(-ms)?)$/;

/** Provider headers the passthrough does not relay: the connection's own, and any x-gw-* claim. */
const NOT_RELAYED = /^(connection|keep-alive|transfer-encoding|te|trailer|upgrade|proxy-.*|content-length|x-gw-.*)$/;

const MAX_ERROR_BODY = 1 << 20;

export function passedHeaders(up: ProviderAnswer, extra: Record<string, string>): Headers {
  const h = new Headers();
  for (const [name, value] of Object.entries(up.headers)) {
    if (value !== undefined && PASSED.test(name)) h.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  for (const [name, value] of Object.entries(extra)) h.set(name, value);
  return h;
}

/**
 * A 2xx answer is streamed to the client as it arrives (never buffered). An error answer keeps the
 * provider's status; a body that is not an OpenAI-style JSON error (an HTML page from a proxy, say)
 * is wrapped into one, so clients always get a parsable error and never a 200.
 */
export async function relay(up: ProviderAnswer, extraHeaders: Record<string, string>): Promise<Response> {
  const headers = passedHeaders(up, extraHeaders);
  if (up.status < 400) {
    return nodeStreamResponse(up.body, { status: up.status, headers });
  }
  const text = (await readProvider(readCapped(up.body, MAX_ERROR_BODY))).bytes.toString('utf8');
  const parsed = tryParseJson(text);
  if (parsed.ok && parsed.value !== null && typeof parsed.value === 'object' && 'error' in parsed.value) {
    headers.set('content-type', 'application/json');
    return textResponse(text, { status: up.status, headers });
  }
  const snippet = text
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
  const err = new UpstreamError(up.status, `The provider answered ${up.status}${snippet ? `: ${snippet}` : ''}`);
  headers.set('content-type', 'application/json');
  return textResponse(JSON.stringify(toOpenAIBody(err)), { status: up.status, headers });
}

/**
 * The passthrough: the provider's status, headers and body bytes exactly as sent, streamed, errors
 * included; only connection-level headers are dropped and the gateway's own added.
 */
export function relayRaw(up: ProviderAnswer, extraHeaders: Record<string, string>): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(up.headers)) {
    if (value === undefined || NOT_RELAYED.test(name)) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  for (const [name, value] of Object.entries(extraHeaders)) headers.set(name, value);
  return nodeStreamResponse(up.body, { status: up.status, headers });
}

const MAX_TRANSFORMED_BODY = 16 << 20;

/**
 * A 2xx JSON answer rewritten by the endpoint (rerank sorts its results), as a body to relay. An
 * answer that is not a JSON object goes on untouched.
 */
export async function transformJsonAnswer(
  up: ProviderAnswer,
  transform: (answer: Record<string, unknown>) => Record<string, unknown>,
): Promise<ProviderAnswer> {
  const { bytes, truncated } = await readProvider(readCapped(up.body, MAX_TRANSFORMED_BODY));
  if (truncated) throw new UpstreamError(502, `The provider's answer is larger than ${MAX_TRANSFORMED_BODY} bytes`);
  const parsed = tryParseJson(bytes.toString('utf8'));
  const out =
    parsed.ok && parsed.value !== null && typeof parsed.value === 'object' && !Array.isArray(parsed.value)
      ? Buffer.from(JSON.stringify(transform(parsed.value as Record<string, unknown>)))
      : bytes;
  return { ...up, body: Readable.from([out]) };
}
