/**
 * A faithful stand-in for the `awslambda` globals of the Node.js Lambda runtime, so the local
 * server can run requests through the real handlers. As in the runtime, `HttpResponseStream.from`
 * sets the integration content type and writes the JSON prelude plus eight NUL bytes before the
 * first body write; the caller decodes that framing exactly as API Gateway does.
 */
import { Writable } from 'node:stream';

export const PRELUDE_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER = new Uint8Array(8);
const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');

export type StreamingHandler<E = unknown, C = unknown> = (event: E, responseStream: ResponseStream, context: C) => Promise<unknown>;

/** The writable the runtime hands to a streaming handler. */
export class ResponseStream extends Writable {
  contentType = 'application/octet-stream';
  /** Set by HttpResponseStream.from; runs once before the first write. */
  beforeFirstWrite: ((write: (chunk: Uint8Array | string) => void) => void) | undefined;
  readonly #sink: (chunk: Buffer) => void;
  #started = false;

  constructor(sink: (chunk: Buffer) => void) {
    super();
    this.#sink = sink;
  }

  setContentType(type: string): void {
    this.contentType = type;
  }

  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (!this.#started) {
      this.#started = true;
      this.beforeFirstWrite?.((c) => this.#sink(Buffer.from(c)));
    }
    this.#sink(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.#started) {
      this.#started = true;
      this.beforeFirstWrite?.((c) => this.#sink(Buffer.from(c)));
    }
    cb();
  }
}

export interface AwsLambdaGlobal {
  streamifyResponse<E, C>(fn: StreamingHandler<E, C>): StreamingHandler<E, C>;
  HttpResponseStream: { from(stream: ResponseStream, prelude: Record<string, unknown>): ResponseStream };
}

export const awslambda: AwsLambdaGlobal = {
  streamifyResponse(fn) {
    Object.defineProperty(fn, STREAMING, { value: 'response' });
    return fn;
  },
  HttpResponseStream: {
    from(stream, prelude) {
      stream.setContentType(PRELUDE_CONTENT_TYPE);
      const json = JSON.stringify(prelude);
      stream.beforeFirstWrite = (write) => {
        write(json);
        write(DELIMITER);
      };
      return stream;
    },
  },
};

export const isStreamingHandler = (fn: unknown): boolean => typeof fn === 'function' && (fn as unknown as Record<symbol, unknown>)[STREAMING] === 'response';

/**
 * Installs the globals (idempotent); must run before a streaming handler module is imported.
 * Merges into an existing object: the AWS SDK's invoke store creates `awslambda` for itself.
 */
export function installAwsLambdaGlobals(): void {
  const g = globalThis as unknown as { awslambda?: Partial<AwsLambdaGlobal> };
  g.awslambda ??= {};
  g.awslambda.streamifyResponse ??= awslambda.streamifyResponse;
  g.awslambda.HttpResponseStream ??= awslambda.HttpResponseStream;
}

export interface Prelude {
  statusCode: number;
  headers: Record<string, string>;
  cookies: string[];
}

/**
 * Decodes the prelude framing from a byte stream: calls `onPrelude` once, then `onBody` for every
 * later byte, as they arrive.
 */
export class PreludeDecoder {
  #head: Buffer = Buffer.alloc(0);
  #done = false;
  readonly #onPrelude: (p: Prelude) => void;
  readonly #onBody: (chunk: Buffer) => void;

  constructor(onPrelude: (p: Prelude) => void, onBody: (chunk: Buffer) => void) {
    this.#onPrelude = onPrelude;
    this.#onBody = onBody;
  }

  get done(): boolean {
    return this.#done;
  }

  push(chunk: Buffer): void {
    if (this.#done) {
      if (chunk.length) this.#onBody(chunk);
      return;
    }
    this.#head = Buffer.concat([this.#head, chunk]);
    const at = this.#head.indexOf(Buffer.from(DELIMITER));
    if (at < 0) return;
    const raw = JSON.parse(this.#head.subarray(0, at).toString('utf8')) as Partial<Prelude>;
    this.#done = true;
    this.#onPrelude({ statusCode: raw.statusCode ?? 200, headers: raw.headers ?? {}, cookies: raw.cookies ?? [] });
    const rest = this.#head.subarray(at + DELIMITER.length);
    this.#head = Buffer.alloc(0);
    if (rest.length) this.#onBody(rest);
  }
}
