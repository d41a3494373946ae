/**
 * Serves the core on node:http. Lean on purpose (it is the local hot path): the body is read once
 * into memory and handed to the core without a stream; the client's disconnect is an AbortSignal
 * in the runtime bindings rather than on the Request (a signal on an undici Request is kept alive
 * by a finalization registry until a full GC); a provider's answer is piped straight from its
 * socket to the client's.
 */
import { Readable } from 'node:stream';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Hono } from 'hono';
import { fastBodyOf, requestWithBody, type RuntimeBindings } from '../../layers/core/src/http/bodies.ts';

const NO_BODY = new Set(['GET', 'HEAD']);

/**
 * Bodies up to this size (by Content-Length) are read at once, before the core runs: the fast path
 * of every chat request. Larger ones, and those without a Content-Length, go to the core as a
 * stream, read only once the caller is authenticated and only up to the endpoint's limit.
 */
const EAGER_BODY_BYTES = 1 << 20;
/** No endpoint takes more: refused from the Content-Length without reading or authenticating. */
const MAX_BODY_BYTES = 512 << 20;

/**
 * The whole (small) body, from 'data' and 'end' events: `for await` over the request builds an
 * async iterator, its promises and an end-of-stream watcher per request (1.5% of the local server's
 * allocations under load, profiled).
 */
function readBody(req: IncomingMessage): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('error', reject);
    // A client that goes away mid-body: 'close' without 'end', and the request is not served.
    req.once('close', () => {
      if (!req.complete) reject(new Error('the client closed the request before its body was complete'));
    });
    req.once('end', () => resolve(chunks.length === 0 ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  });
}

/** The core's Request: the body in memory when small, else the socket's stream. */
async function toRequest(req: IncomingMessage, url: string, method: string): Promise<Request> {
  const init = { method, headers: toHeaders(req.rawHeaders) };
  if (NO_BODY.has(method)) return requestWithBody(url, init);
  const length = Number(req.headers['content-length'] ?? NaN);
  if (length <= EAGER_BODY_BYTES) return requestWithBody(url, init, await readBody(req));
  return new Request(url, { ...init, body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } as RequestInit);
}

/** The methods API Gateway routes (`ANY`); others (TRACE, CONNECT, WebDAV's ...) never reach a function. */
const METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** Answers 405 to a method no route takes (a Request cannot even be built for TRACE); true when it did. */
export function refusedMethod(req: IncomingMessage, res: ServerResponse): boolean {
  if (METHODS.has(req.method ?? '')) return false;
  const body = JSON.stringify({
    error: { message: `The method ${req.method} is not allowed`, type: 'invalid_request_error', param: null, code: 'method_not_allowed' },
  });
  res.writeHead(405, { 'content-type': 'application/json', allow: [...METHODS].join(', ') });
  res.end(body);
  return true;
}

function refuseTooLarge(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({
    error: { message: `The request body is larger than ${MAX_BODY_BYTES >> 20} MiB`, type: 'invalid_request_error', param: null, code: 'request_too_large' },
  });
  closeAfterEarlyAnswer(req, res);
  res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
  res.end(body);
}

/** How long a connection closed after an early answer still reads (and drops) what the client sends. */
const LINGER_MS = 2_000;

/**
 * Before an answer's headers: when the request's body has not all arrived (a refusal from the
 * headers or the Content-Length, 401, 404, 413, ..., on any route), the bytes still coming stand
 * where the next request of a keep-alive connection would, so the connection closes after this
 * answer (`connection: close`) instead of waiting for a request it would never read.
 */
export function closeAfterEarlyAnswer(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || res.headersSent) return;
  res.shouldKeepAlive = false;
  // The request's own socket is gone once the core cancelled its body; the answer's is not.
  const socket = res.socket;
  if (!socket || socket.destroyed) return;
  // Node closes with destroySoon once the answer is sent: linger instead.
  socket.destroySoon = () => lingeringClose(req, socket);
}

/**
 * Ends the connection after its answer while reading and dropping the rest of the body, until the
 * client closes its side or LINGER_MS pass: a socket closed with unread bytes is reset, and the
 * reset can reach the client before it has read the answer.
 */
function lingeringClose(req: IncomingMessage, socket: Socket): void {
  socket.end();
  // What req._dump() does: the body's reader (the core's stream) is gone, so the bytes go nowhere.
  req.removeAllListeners('data');
  req.resume();
  const cut = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('end', () => socket.destroy());
  socket.once('close', () => clearTimeout(cut));
}

function toHeaders(raw: string[]): Headers {
  const h = new Headers();
  for (let i = 0; i < raw.length; i += 2) h.append(raw[i] as string, raw[i + 1] as string);
  return h;
}

function nodeHeaders(res: Response): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'set-cookie') out[name] = value;
  });
  const cookies = res.headers.getSetCookie();
  if (cookies.length) out['set-cookie'] = cookies;
  return out;
}

/**
 * Writes a core Response to a Node response, using the fastest form of its body available.
 * `beforeEnd`: what the end of the answer waits for (its request log on disk); the client has the
 * whole answer only once it has ended.
 */
export async function writeResponse(response: Response, res: ServerResponse, beforeEnd?: () => Promise<void>): Promise<void> {
  const headers = nodeHeaders(response);
  const fast = fastBodyOf(response);
  if (typeof fast === 'string' || fast instanceof Uint8Array) {
    res.writeHead(response.status, headers);
    if (beforeEnd) await beforeEnd();
    res.end(fast);
    return;
  }
  if (fast) {
    res.writeHead(response.status, headers);
    // Stops reading the provider as soon as the client is gone, and ends the client's response when
    // the provider's body breaks (rather than leaving it open). Not stream.pipeline: it builds an
    // AbortController and a DOMException per call, a third of the local server's throughput.
    res.once('close', () => {
      if (!fast.readableEnded) fast.destroy();
    });
    fast.once('error', () => res.destroy());
    if (beforeEnd) {
      const end = () => void res.end();
      fast.once('end', () => void beforeEnd().then(end, end));
    }
    fast.pipe(res, { end: !beforeEnd });
    return;
  }
  res.writeHead(response.status, headers);
  if (!response.body) {
    if (beforeEnd) await beforeEnd();
    res.end();
    return;
  }
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
  }
  if (beforeEnd) await beforeEnd();
  res.end();
}

/** For each answer, what its end waits for, if anything (see writeResponse). */
export type EndBarrier = (response: Response) => (() => Promise<void>) | undefined;

export function createNodeListener(app: Hono, onError: (err: unknown) => void, beforeEnd?: EndBarrier): RequestListener {
  return (req, res) => {
    const method = req.method ?? 'GET';
    const url = `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`;
    const aborter = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) aborter.abort();
    });
    const bindings: RuntimeBindings = { clientSignal: aborter.signal };
    if (req.socket.remoteAddress) bindings.clientIp = req.socket.remoteAddress;
    if (refusedMethod(req, res)) return;
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return refuseTooLarge(req, res);
    toRequest(req, url, method)
      .then((request) => app.fetch(request, bindings))
      .then((response) => {
        closeAfterEarlyAnswer(req, res);
        return writeResponse(response, res, beforeEnd?.(response));
      })
      .catch((err: unknown) => {
        onError(err);
        closeAfterEarlyAnswer(req, res);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end();
      });
  };
}
