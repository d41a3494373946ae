/**
 * A real HTTP server for mock providers: records every request and answers from a queue of
 * replies, or from the provider mock's default route. Bodies may be JSON, text, or chunks written
 * one by one (SSE, AWS event-stream frames).
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  /** Path and query as received. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  text?: string;
  /** Written one after the other, each flushed. */
  chunks?: readonly (string | Uint8Array)[];
}

export interface MockServer {
  url: string;
  received: Recorded[];
  /** Replies used one per request, in order, before the default route. */
  queue: Reply[];
  close(): Promise<void>;
}

export async function startMockServer(route: (req: Recorded) => Reply | Promise<Reply>): Promise<MockServer> {
  const received: Recorded[] = [];
  const queue: Reply[] = [];
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
    const body = Buffer.concat(parts).toString('utf8');
    let json: unknown;
    try {
      json = body ? (JSON.parse(body) as unknown) : undefined;
    } catch {
      json = undefined;
    }
    const rec: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, json };
    received.push(rec);
    let reply: Reply;
    try {
      reply = queue.shift() ?? (await route(rec));
    } catch (err) {
      reply = { status: 500, json: { mock_error: (err as Error).message } };
    }
    const contentType = reply.json !== undefined ? 'application/json' : reply.chunks ? 'text/event-stream' : 'text/plain';
    res.writeHead(reply.status ?? 200, { 'content-type': contentType, ...reply.headers });
    if (reply.chunks) {
      for (const c of reply.chunks) {
        res.write(c);
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    } else {
      res.end(reply.json !== undefined ? JSON.stringify(reply.json) : (reply.text ?? ''));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    queue,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** SSE text of `event:`/`data:` pairs (Anthropic and Cohere name their events). */
export const sseEvent = (data: unknown, event?: string): string => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
