/**
 * Zero-copy body hand-offs between the core and runtime adapters. The core always returns a
 * standard Response (any adapter can read its body as a web stream), but it also records the
 * body's original form here, so an adapter that knows Node streams can pipe a provider's answer
 * straight into its socket, and a body it already read need not go through a stream again.
 */
import type { Readable } from 'node:stream';
import { PayloadTooLargeError } from './errors.ts';

export type FastBody = Readable | string | Uint8Array;

const responseBodies = new WeakMap<Response, FastBody>();
const requestBodies = new WeakMap<Request, Uint8Array>();

/** What a runtime passes beside the Request (Hono's `env`). */
export interface RuntimeBindings {
  /** Aborts when the client has gone (the local server; Lambda cannot tell). */
  clientSignal?: AbortSignal;
  /** The peer's address as the runtime saw it (the local server; in Lambda, X-Forwarded-For). */
  clientIp?: string;
}

/** The original body of a Response built by the core, if it recorded one and nobody read it since. */
export function fastBodyOf(res: Response): FastBody | undefined {
  return res.bodyUsed || res.body?.locked ? undefined : responseBodies.get(res);
}

/**
 * A web stream of bytes already in memory, produced only when someone reads it. undici copies a
 * byte or string body given to `new Response`/`new Request` at construction (about 8 µs of CPU for
 * a chat-sized body, twice per request); an adapter that takes the recorded body never reads this.
 */
function lazyBody(bytes: () => Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        controller.enqueue(bytes());
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}

const TEXT_PLAIN = 'text/plain;charset=UTF-8';

/** A Response with a text body (JSON, errors); text/plain, as `new Response(text)` would say, unless the headers name a type. */
export function textResponse(text: string, init: ResponseInit): Response {
  const res = new Response(
    lazyBody(() => Buffer.from(text)),
    init,
  );
  if (!res.headers.has('content-type')) res.headers.set('content-type', TEXT_PLAIN);
  responseBodies.set(res, text);
  return res;
}

/**
 * A Response with a body already whole in memory (a priced answer): an adapter writes it with the
 * headers in one go, with no stream between.
 */
export function bytesResponse(bytes: Uint8Array, init: ResponseInit): Response {
  const res = new Response(
    lazyBody(() => bytes),
    init,
  );
  responseBodies.set(res, bytes);
  return res;
}

/**
 * A Response streaming a Node Readable. The web stream is lazy (high-water mark 0): it starts
 * reading the Node stream only if someone reads it, so an adapter piping the Readable directly
 * pays nothing for it.
 */
export function nodeStreamResponse(body: Readable, init: ResponseInit): Response {
  let attached = false;
  const web = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (!attached) {
          attached = true;
          body.on('data', (chunk: Buffer) => {
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            if ((controller.desiredSize ?? 0) <= 0) body.pause();
          });
          body.once('end', () => controller.close());
          body.once('error', (err) => controller.error(err));
        }
        body.resume();
      },
      cancel() {
        body.destroy();
      },
    },
    { highWaterMark: 0 },
  );
  const res = new Response(web, init);
  responseBodies.set(res, body);
  return res;
}

/** A Request whose body the adapter already holds in memory. */
export function requestWithBody(url: string, init: Omit<RequestInit, 'body'>, body?: Uint8Array): Request {
  const req = body ? new Request(url, { ...init, body: lazyBody(() => body), duplex: 'half' } as RequestInit) : new Request(url, init);
  if (body) requestBodies.set(req, body);
  return req;
}

const decoder = new TextDecoder();

/**
 * Refuses a body over `limit` from its Content-Length before a byte of it is read, and one that
 * says nothing (chunked) once it has read past the limit: a large body is never held whole.
 */
async function readCapped(req: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (declared > limit) throw new PayloadTooLargeError(limit);
  const held = requestBodies.get(req);
  if (held) {
    if (held.length > limit) throw new PayloadTooLargeError(limit);
    return held;
  }
  if (!req.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > limit) {
      await req.body.cancel().catch(() => undefined);
      throw new PayloadTooLargeError(limit);
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}

/** The request body as text, at most `limit` bytes, without a trip through the body stream when the adapter gave it. */
export async function readBodyText(req: Request, limit = Number.POSITIVE_INFINITY): Promise<string> {
  return decoder.decode(await readCapped(req, limit));
}

/** The request body's bytes (empty when there is none), at most `limit`, without a copy when the adapter gave them. */
export async function readBodyBytes(req: Request, limit = Number.POSITIVE_INFINITY): Promise<Uint8Array> {
  return readCapped(req, limit);
}
