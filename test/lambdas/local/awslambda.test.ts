/**
 * The local stand-in for the Lambda runtime's `awslambda` globals: the response stream framing
 * (JSON prelude, eight NUL bytes, body) and its decoder. No network.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  awslambda,
  installAwsLambdaGlobals,
  isStreamingHandler,
  PRELUDE_CONTENT_TYPE,
  PreludeDecoder,
  ResponseStream,
  type Prelude,
} from '../../../lambdas/local/awslambda.ts';

const NULS = Buffer.alloc(8);

/** A ResponseStream whose output is collected chunk by chunk. */
function collectingStream(): { stream: ResponseStream; chunks: Buffer[]; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const stream = new ResponseStream((c) => chunks.push(c));
  return { stream, chunks, bytes: () => Buffer.concat(chunks) };
}

function end(stream: ResponseStream, last?: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => (last === undefined ? stream.end(resolve) : stream.end(last, resolve)));
}

/** Decodes `chunks` in order; returns the prelude and the body. */
function decode(chunks: readonly Buffer[]): { prelude: Prelude | undefined; body: Buffer; bodyCalls: number } {
  let prelude: Prelude | undefined;
  const body: Buffer[] = [];
  let bodyCalls = 0;
  const decoder = new PreludeDecoder(
    (p) => {
      expect(prelude).toBeUndefined();
      prelude = p;
    },
    (c) => {
      expect(prelude).toBeDefined();
      bodyCalls++;
      body.push(c);
    },
  );
  for (const c of chunks) decoder.push(c);
  return { prelude, body: Buffer.concat(body), bodyCalls };
}

const PRELUDE = { statusCode: 201, headers: { 'content-type': 'text/event-stream', 'x-gw-trace-id': 't-1' }, cookies: ['a=1'] };

describe('HttpResponseStream.from', () => {
  it('sets the integration content type and writes nothing until the first body write', () => {
    const { stream, chunks } = collectingStream();
    const out = awslambda.HttpResponseStream.from(stream, PRELUDE);
    expect(out).toBe(stream);
    expect(stream.contentType).toBe(PRELUDE_CONTENT_TYPE);
    expect(chunks).toEqual([]);
  });

  it('writes the JSON prelude and eight NUL bytes before the first body byte', async () => {
    const { stream, chunks, bytes } = collectingStream();
    awslambda.HttpResponseStream.from(stream, PRELUDE);
    stream.write('data: one\n\n');
    stream.write(Buffer.from('data: two\n\n'));
    await end(stream);

    const json = Buffer.from(JSON.stringify(PRELUDE));
    expect(bytes()).toEqual(Buffer.concat([json, NULS, Buffer.from('data: one\n\ndata: two\n\n')]));
    // The body chunks are not merged: each write reaches the client as it is made.
    expect(chunks.at(-2)?.toString()).toBe('data: one\n\n');
    expect(chunks.at(-1)?.toString()).toBe('data: two\n\n');
  });

  it('writes the prelude even when the body is empty', async () => {
    const { stream, bytes } = collectingStream();
    awslambda.HttpResponseStream.from(stream, { statusCode: 204, headers: {} });
    await end(stream);
    expect(bytes()).toEqual(Buffer.concat([Buffer.from('{"statusCode":204,"headers":{}}'), NULS]));
  });

  it('writes the prelude once, also after an empty first write (as middy does)', async () => {
    const { stream, bytes } = collectingStream();
    awslambda.HttpResponseStream.from(stream, { statusCode: 200 });
    stream.write('');
    stream.write('x');
    await end(stream);
    expect(bytes()).toEqual(Buffer.concat([Buffer.from('{"statusCode":200}'), NULS, Buffer.from('x')]));
  });

  it('a plain ResponseStream writes the body without any framing', async () => {
    const { stream, bytes } = collectingStream();
    expect(stream.contentType).toBe('application/octet-stream');
    await end(stream, 'raw');
    expect(bytes().toString()).toBe('raw');
  });
});

describe('PreludeDecoder', () => {
  const framed = (prelude: object, body: Buffer) => Buffer.concat([Buffer.from(JSON.stringify(prelude)), NULS, body]);

  it('decodes the prelude and passes the body on', () => {
    const { prelude, body } = decode([framed(PRELUDE, Buffer.from('hello'))]);
    expect(prelude).toEqual(PRELUDE);
    expect(body.toString()).toBe('hello');
  });

  it('fills in a status of 200, no headers and no cookies when the prelude leaves them out', () => {
    const { prelude } = decode([framed({}, Buffer.alloc(0))]);
    expect(prelude).toEqual({ statusCode: 200, headers: {}, cookies: [] });
  });

  it('reports an empty body as no body call at all', () => {
    const { prelude, bodyCalls } = decode([framed(PRELUDE, Buffer.alloc(0))]);
    expect(prelude?.statusCode).toBe(201);
    expect(bodyCalls).toBe(0);
  });

  it('waits for the whole delimiter before deciding', () => {
    let calls = 0;
    const decoder = new PreludeDecoder(
      () => calls++,
      () => undefined,
    );
    decoder.push(Buffer.concat([Buffer.from('{"statusCode":200}'), Buffer.alloc(7)]));
    expect(decoder.done).toBe(false);
    expect(calls).toBe(0);
    decoder.push(Buffer.alloc(1));
    expect(decoder.done).toBe(true);
    expect(calls).toBe(1);
  });

  it('passes each later chunk on as it arrives', () => {
    const seen: string[] = [];
    const decoder = new PreludeDecoder(
      () => undefined,
      (c) => seen.push(c.toString()),
    );
    decoder.push(framed(PRELUDE, Buffer.from('a')));
    expect(seen).toEqual(['a']);
    decoder.push(Buffer.from('b'));
    expect(seen).toEqual(['a', 'b']);
    decoder.push(Buffer.alloc(0));
    expect(seen).toEqual(['a', 'b']);
  });

  it('decodes the same bytes split at every position', () => {
    const bytes = framed(PRELUDE, Buffer.from('body with \u0000\u0000 nulls'));
    for (let i = 0; i <= bytes.length; i++) {
      const { prelude, body } = decode([bytes.subarray(0, i), bytes.subarray(i)]);
      expect(prelude).toEqual(PRELUDE);
      expect(body.toString()).toBe('body with \u0000\u0000 nulls');
    }
  });

  it('decodes the bytes fed one at a time', () => {
    const bytes = framed(PRELUDE, Buffer.from('xyz'));
    const { prelude, body } = decode([...bytes].map((b) => Buffer.from([b])));
    expect(prelude).toEqual(PRELUDE);
    expect(body.toString()).toBe('xyz');
  });

  it('decodes any body, NUL bytes included, split across any chunk boundaries', () => {
    fc.assert(
      fc.property(
        fc.record({
          statusCode: fc.integer({ min: 100, max: 599 }),
          headers: fc.dictionary(fc.string({ minLength: 1 }), fc.string()),
          cookies: fc.array(fc.string()),
        }),
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (prelude, rawBody, cuts) => {
          const bytes = framed(prelude, Buffer.from(rawBody));
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const chunks: Buffer[] = [];
          let at = 0;
          for (const p of [...points, bytes.length]) {
            chunks.push(bytes.subarray(at, p));
            at = p;
          }
          const decoded = decode(chunks);
          expect(decoded.prelude).toEqual(prelude);
          expect(new Uint8Array(decoded.body)).toEqual(rawBody);
        },
      ),
    );
  });

  it('round-trips what HttpResponseStream.from writes', async () => {
    const { stream, chunks } = collectingStream();
    awslambda.HttpResponseStream.from(stream, PRELUDE);
    stream.write(Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 1]));
    await end(stream, 'tail');
    const { prelude, body } = decode(chunks);
    expect(prelude).toEqual(PRELUDE);
    expect(body).toEqual(Buffer.concat([Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 1]), Buffer.from('tail')]));
  });
});

describe('streamifyResponse', () => {
  it('marks a handler as streaming, and nothing else is', () => {
    const fn = async () => undefined;
    expect(isStreamingHandler(fn)).toBe(false);
    expect(awslambda.streamifyResponse(fn)).toBe(fn);
    expect(isStreamingHandler(fn)).toBe(true);
    expect(isStreamingHandler({})).toBe(false);
    expect(isStreamingHandler(undefined)).toBe(false);
  });
});

describe('installAwsLambdaGlobals', () => {
  const g = globalThis as unknown as { awslambda?: Record<string, unknown> };
  const before = g.awslambda;
  /** Read through a call: TypeScript would keep the narrowing of a `delete` across installAwsLambdaGlobals(). */
  const current = (): Record<string, unknown> | undefined => g.awslambda;
  afterEach(() => {
    if (before === undefined) delete g.awslambda;
    else g.awslambda = before;
  });

  it('creates the globals when there are none', () => {
    delete g.awslambda;
    installAwsLambdaGlobals();
    expect(current()?.streamifyResponse).toBe(awslambda.streamifyResponse);
    expect(current()?.HttpResponseStream).toBe(awslambda.HttpResponseStream);
  });

  it('merges into an existing object without clobbering what it holds', () => {
    const invokeStore = { marker: 'sdk' };
    const ownStreamify = (fn: unknown) => fn;
    const existing: Record<string, unknown> = { InvokeStore: invokeStore, streamifyResponse: ownStreamify };
    g.awslambda = existing;
    installAwsLambdaGlobals();
    expect(g.awslambda).toBe(existing);
    expect(existing.InvokeStore).toBe(invokeStore);
    expect(existing.streamifyResponse).toBe(ownStreamify);
    expect(existing.HttpResponseStream).toBe(awslambda.HttpResponseStream);
  });

  it('is idempotent', () => {
    delete g.awslambda;
    installAwsLambdaGlobals();
    const first = current();
    installAwsLambdaGlobals();
    expect(current()).toBe(first);
    expect(Object.keys(first ?? {}).sort()).toEqual(['HttpResponseStream', 'streamifyResponse']);
  });
});
