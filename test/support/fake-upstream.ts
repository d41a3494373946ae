/**
 * An in-memory `Upstream` (ports/upstream.ts) for the unit lane: records every request the gateway
 * sends and answers canned provider responses (JSON, SSE, text, a body the provider cuts, or no
 * answer at all) without a socket. It keeps the parts of the port's contract the gateway relies
 * on, as UpstreamClient (gateway/upstream.ts) does: `timeoutMs` ends a call that got no answer
 * with a 408 RequestTimeoutError, an aborted signal with UpstreamError 499, and a header Node would
 * not send is refused with `unsendableHeader`'s error. Real sockets: test/support/mock-http.ts.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { RequestTimeoutError, UpstreamError } from '../../layers/core/src/http/errors.ts';
import { unsendableHeader } from '../../layers/core/src/gateway/upstream.ts';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../layers/core/src/ports/upstream.ts';

/** One request as the provider would have received it. */
export interface SentRequest {
  url: URL;
  method: string;
  /** Names in lower case, as the provider's HTTP server reads them. */
  headers: Record<string, string>;
  /** The body as text (undefined when none was sent). */
  body: string | undefined;
  /** The body parsed as JSON, when it is. */
  json: unknown;
  timeoutMs: number | undefined;
}

export interface CannedReply {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** A JSON body (content-type application/json unless `headers` say otherwise). */
  json?: unknown;
  text?: string;
  /** Server-sent events: each `data: <JSON>` (a string goes as it is), then `data: [DONE]`. */
  sse?: readonly unknown[];
  /** The body ends with an error after its bytes, as a provider that closed the connection mid-answer. */
  cut?: boolean;
  /** No answer at all: the call ends only by its timeout or its signal. */
  hang?: boolean;
}

/** The SSE text of `events`, as OpenAI streams them. */
export const sseText = (events: readonly unknown[]): string =>
  [...events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`), 'data: [DONE]\n\n'].join('');

/** A chat completion as OpenAI answers it. */
export function chatCompletion(
  content: string,
  usage = { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
  model = 'gpt-4o-mini',
): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_767_225_600,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage,
  };
}

/** A chat completion chunk (`delta.content`), the last one of a stream with `usage` when given. */
export function chatChunk(content: string | undefined, usage?: Record<string, number>): Record<string, unknown> {
  const chunk: Record<string, unknown> = {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_767_225_600,
    model: 'gpt-4o-mini',
    choices: content === undefined ? [] : [{ index: 0, delta: { content }, finish_reason: null }],
  };
  if (usage) chunk.usage = usage;
  return chunk;
}

/** Each chunk is read on demand, then the body ends (or breaks, `cut`): the reader sees every byte first. */
function bodyOf(chunks: readonly Buffer[], cut: boolean): Readable {
  let next = 0;
  return new Readable({
    read() {
      if (next < chunks.length) return void this.push(chunks[next++]);
      if (cut) this.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      else this.push(null);
    },
  });
}

/** The answer a provider would give for `reply`, its body still to be read. */
export function cannedAnswer(reply: CannedReply): UpstreamResponse {
  const headers: IncomingHttpHeaders = {};
  let chunks: Buffer[] = [];
  if (reply.sse !== undefined) {
    headers['content-type'] = 'text/event-stream';
    // One chunk per event, as a provider flushes them.
    chunks = sseText(reply.sse)
      .split(/(?<=\n\n)/)
      .map((s) => Buffer.from(s));
  } else if (reply.json !== undefined) {
    headers['content-type'] = 'application/json';
    chunks = [Buffer.from(JSON.stringify(reply.json))];
  } else if (reply.text !== undefined) {
    headers['content-type'] = 'text/plain';
    chunks = [Buffer.from(reply.text)];
  }
  for (const [name, value] of Object.entries(reply.headers ?? {})) headers[name.toLowerCase()] = value;
  return { status: reply.status ?? 200, headers, body: bodyOf(chunks, reply.cut === true) };
}

/** A call nobody answers: it ends by its timeout (408) or its signal (499), as the port says. */
function unanswered(req: UpstreamRequest): Promise<UpstreamResponse> {
  return new Promise((_, reject) => {
    const timer = req.timeoutMs === undefined ? undefined : setTimeout(() => reject(new RequestTimeoutError(req.timeoutMs ?? 0)), req.timeoutMs);
    req.signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new UpstreamError(499, 'The client closed the request'));
      },
      { once: true },
    );
  });
}

const lowerCased = (headers: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

const textOf = (body: UpstreamRequest['body']): string | undefined =>
  body === undefined ? undefined : typeof body === 'string' ? body : Buffer.from(body).toString('utf8');

function jsonOf(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class FakeUpstream implements Upstream {
  /** Every request sent, in order. */
  readonly sent: SentRequest[] = [];
  /** Replies used one per request, in order, before `route`. */
  readonly queue: CannedReply[] = [];
  /** Every body handed out, to check that the gateway closed the ones it did not use. */
  readonly bodies: Readable[] = [];
  readonly #route: (req: SentRequest) => CannedReply;

  constructor(route: (req: SentRequest) => CannedReply = () => ({ json: chatCompletion('Hello!') })) {
    this.#route = route;
  }

  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const refused = unsendableHeader(req.headers);
    if (refused) throw refused;
    const body = textOf(req.body);
    const sent: SentRequest = { url: req.url, method: req.method, headers: lowerCased(req.headers), body, json: jsonOf(body), timeoutMs: req.timeoutMs };
    this.sent.push(sent);
    const reply = this.queue.shift() ?? this.#route(sent);
    if (reply.hang) return unanswered(req);
    if (req.signal?.aborted) throw new UpstreamError(499, 'The client closed the request');
    const answer = cannedAnswer(reply);
    this.bodies.push(answer.body);
    return answer;
  }

  close(): void {}
}
