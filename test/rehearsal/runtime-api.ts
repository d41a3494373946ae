/**
 * A small Lambda Runtime API (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html) for
 * one function: the runtime client long-polls `GET /2018-06-01/runtime/invocation/next`, answers
 * with `POST .../{id}/response` (buffered, or in response-streaming mode: the header
 * `Lambda-Runtime-Function-Response-Mode: streaming`, a chunked body and, on a failure after the
 * first byte, the trailers `Lambda-Runtime-Function-Error-Type` and `Lambda-Runtime-Function-Error-Body`
 * (base64 JSON)), or fails with `POST .../{id}/error` or `POST /2018-06-01/runtime/init/error`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Lambda's limit on a buffered response payload. */
const BUFFERED_LIMIT = 6 * 1024 * 1024;
export const PRELUDE_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';

/** What the function answered one invocation. */
export type Outcome =
  | { kind: 'response'; body: Buffer }
  | { kind: 'stream'; contentType: string; body: Buffer; chunks: number }
  | { kind: 'error'; errorType: string; errorMessage: string; stage: 'invoke' | 'stream' | 'init' };

export interface InvokeOptions {
  /** The function's timeout (its deadline header); default 30 s. */
  timeoutMs?: number;
}

export interface RuntimeApi {
  /** `host:port`, the value of AWS_LAMBDA_RUNTIME_API. */
  address: string;
  invoke(event: unknown, opts?: InvokeOptions): Promise<Outcome>;
  /** Settles every waiting invocation with this failure (the function's process died). */
  fail(reason: string): void;
  /** The init error the runtime reported, if any. */
  initError: Outcome | undefined;
  /** The runtime asked for an invocation: its init (the handler module's import) is done. */
  polled: boolean;
  close(): Promise<void>;
}

interface Pending {
  id: string;
  event: unknown;
  deadline: number;
  resolve(o: Outcome): void;
}

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** The `{errorType, errorMessage}` of an error body (the runtime's JSON), or the raw text. */
function errorOf(body: Buffer | string, typeHeader: string | undefined, stage: 'invoke' | 'stream' | 'init'): Outcome {
  const text = body.toString();
  try {
    const parsed = JSON.parse(text) as { errorType?: string; errorMessage?: string };
    return { kind: 'error', errorType: parsed.errorType ?? typeHeader ?? 'Unknown', errorMessage: parsed.errorMessage ?? text, stage };
  } catch {
    return { kind: 'error', errorType: typeHeader ?? 'Unknown', errorMessage: text, stage };
  }
}

export async function startRuntimeApi(): Promise<RuntimeApi> {
  const queue: Pending[] = [];
  const inFlight = new Map<string, Pending>();
  let waiting: ServerResponse | undefined;
  let initError: Outcome | undefined;
  let polled = false;
  let failure: Outcome | undefined;

  const deliver = () => {
    const next = waiting && queue.shift();
    if (!next || !waiting) return;
    const res = waiting;
    waiting = undefined;
    inFlight.set(next.id, next);
    res
      .writeHead(200, {
        'content-type': 'application/json',
        'lambda-runtime-aws-request-id': next.id,
        'lambda-runtime-deadline-ms': String(next.deadline),
        'lambda-runtime-invoked-function-arn': 'arn:aws:lambda:us-east-1:123456789012:function:rehearsal',
        'lambda-runtime-trace-id': `Root=1-${Date.now().toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)};Sampled=0`,
      })
      .end(JSON.stringify(next.event));
  };

  const settle = (id: string, outcome: Outcome) => {
    const p = inFlight.get(id);
    inFlight.delete(id);
    p?.resolve(outcome);
  };

  const handleResponse = async (req: IncomingMessage, res: ServerResponse, id: string) => {
    const streaming = req.headers['lambda-runtime-function-response-mode'] === 'streaming';
    if (!streaming) {
      const body = await readBody(req);
      if (body.length > BUFFERED_LIMIT) {
        res.writeHead(413, { 'content-type': 'application/json' }).end(JSON.stringify({ errorType: 'RequestEntityTooLarge' }));
        return settle(id, { kind: 'error', errorType: 'Function.ResponseSizeTooLarge', errorMessage: `${body.length} bytes`, stage: 'invoke' });
      }
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"OK"}');
      return settle(id, { kind: 'response', body });
    }
    // Streaming: the body is chunked; a failure after the first byte arrives in the trailers.
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    await new Promise<void>((resolve, reject) => req.on('end', resolve).on('error', reject));
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"OK"}');
    const errorType = req.trailers['lambda-runtime-function-error-type'];
    if (errorType) {
      const encoded = req.trailers['lambda-runtime-function-error-body'] ?? '';
      return settle(id, errorOf(Buffer.from(encoded, 'base64'), errorType, 'stream'));
    }
    settle(id, { kind: 'stream', contentType: String(req.headers['content-type'] ?? ''), body: Buffer.concat(chunks), chunks: chunks.length });
  };

  const server: Server = createServer((req, res) => {
    const url = req.url ?? '';
    const route = /^\/2018-06-01\/runtime\/invocation\/([^/]+)\/(response|error)$/.exec(url);
    if (req.method === 'GET' && url === '/2018-06-01/runtime/invocation/next') {
      waiting = res;
      polled = true;
      return deliver();
    }
    if (req.method === 'POST' && url === '/2018-06-01/runtime/init/error') {
      void readBody(req).then((body) => {
        initError = errorOf(body, req.headers['lambda-runtime-function-error-type'] as string | undefined, 'init');
        res.writeHead(202).end('{"status":"OK"}');
      });
      return;
    }
    if (req.method === 'POST' && route) {
      const id = decodeURIComponent(route[1]!);
      if (!inFlight.has(id)) return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"errorType":"InvalidRequestID"}');
      if (route[2] === 'response') return void handleResponse(req, res, id);
      void readBody(req).then((body) => {
        res.writeHead(202).end('{"status":"OK"}');
        settle(id, errorOf(body, req.headers['lambda-runtime-function-error-type'] as string | undefined, 'invoke'));
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    address: `127.0.0.1:${port}`,
    get initError() {
      return initError;
    },
    get polled() {
      return polled;
    },
    invoke(event, opts = {}) {
      return new Promise<Outcome>((resolve) => {
        if (failure) return resolve(failure);
        queue.push({ id: randomUUID(), event, deadline: Date.now() + (opts.timeoutMs ?? 30_000), resolve });
        deliver();
      });
    },
    fail(reason) {
      failure = initError ?? { kind: 'error', errorType: 'Runtime.ExitError', errorMessage: reason, stage: 'init' };
      for (const p of [...queue.splice(0), ...inFlight.values()]) p.resolve(failure);
      inFlight.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        waiting?.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Splits an HTTP-integration stream (JSON prelude, eight NUL bytes, body) as API Gateway does. */
export function splitPrelude(body: Buffer): { prelude: { statusCode?: number; headers?: Record<string, string> }; body: Buffer } {
  for (let i = 0; i + 8 <= body.length; i++) {
    if (body.subarray(i, i + 8).every((b) => b === 0)) return { prelude: JSON.parse(body.subarray(0, i).toString('utf8')), body: body.subarray(i + 8) };
  }
  throw new Error('no prelude delimiter in the streamed response');
}
