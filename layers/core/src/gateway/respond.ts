/** Turning a provider's answer into the gateway's: streamed through, errors in OpenAI's shape. */
import type { Readable } from 'node:stream';
import { nodeStreamResponse, textResponse } from '../http/bodies.ts';
import type { IncomingHttpHeaders } from 'node:http';
import { toOpenAIBody, UpstreamError } from '../http/errors.ts';
import { tryParseJson } from '../http/json.ts';

/** A provider answer: status, headers and a body still to be read. */
export interface ProviderAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/** Provider headers worth passing on to the client. */
const PASSED = /^(content-type|x-request-id|request-id|openai-(processing-ms|version|model)|x-ratelimit-.*|retry-after(-ms)?)$/;

const MAX_ERROR_BODY = 1 << 20;

export function passedHeaders(up: ProviderAnswer, extra: Record<string, string>): Headers {
  const h = new Headers();
  for (const [name, value] of Object.entries(up.headers)) {
    if (value !== undefined && PASSED.test(name)) h.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  for (const [name, value] of Object.entries(extra)) h.set(name, value);
  return h;
}

async function readCapped(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ERROR_BODY) {
      body.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
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
  const text = await readCapped(up.body);
  const parsed = tryParseJson(text);
  if (parsed.ok && parsed.value !== null && typeof parsed.value === 'object' && 'error' in parsed.value) {
    headers.set('content-type', 'application/json');
    return textResponse(text, { status: up.status, headers });
  }
  const snippet = text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200);
  const err = new UpstreamError(up.status, `The provider answered ${up.status}${snippet ? `: ${snippet}` : ''}`);
  headers.set('content-type', 'application/json');
  return textResponse(JSON.stringify(toOpenAIBody(err)), { status: up.status, headers });
}
