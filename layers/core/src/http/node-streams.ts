/** Node byte streams as the gateway handles them: bounded reads, format rewrites, clean ends. */
import { PassThrough, Readable } from 'node:stream';

/** What was read of a stream before it ended or passed `cap` (`next` continues it). */
interface Head {
  chunks: Buffer[];
  ended: boolean;
  next: AsyncIterator<Buffer>;
}

/** The one bounded read loop: stops at the end or at the first chunk past `cap` (kept in `chunks`). */
async function readHead(body: Readable, cap: number): Promise<Head> {
  const next = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const step = await next.next();
    if (step.done) return { chunks, ended: true, next };
    chunks.push(step.value);
    size += step.value.length;
    if (size > cap) return { chunks, ended: false, next };
  }
}

const joined = (chunks: readonly Buffer[]): Buffer => (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));

/**
 * Reads a stream up to `cap` bytes. Past the cap it stops, releases the source and says the body
 * was truncated (an error page or answer that large is not worth holding).
 */
export async function readCapped(body: Readable, cap: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const head = await readHead(body, cap);
  if (head.ended) return { bytes: joined(head.chunks), truncated: false };
  body.destroy();
  return { bytes: joined(head.chunks.slice(0, -1)), truncated: true };
}

/** Reads a whole stream that must stay within `cap` bytes; past it, releases the source and throws `tooLarge()`. */
export async function readWithin(body: Readable, cap: number, tooLarge: () => Error): Promise<Buffer> {
  const head = await readHead(body, cap);
  if (head.ended) return joined(head.chunks);
  body.destroy();
  throw tooLarge();
}

/**
 * Reads a stream whole when it is at most `cap` bytes; past the cap, gives back a stream that
 * replays what was read and then the rest, so nothing is lost and nothing large is held.
 */
export async function readUpTo(body: Readable, cap: number): Promise<{ bytes: Buffer } | { rest: Readable }> {
  const head = await readHead(body, cap);
  if (head.ended) return { bytes: joined(head.chunks) };
  async function* replay(): AsyncGenerator<Buffer> {
    try {
      yield* head.chunks;
      for (;;) {
        const step = await head.next.next();
        if (step.done) return;
        yield step.value;
      }
    } finally {
      body.destroy();
    }
  }
  return { rest: Readable.from(replay(), { objectMode: false }) };
}

/**
 * Rewrites a Node byte stream chunk by chunk through a stateful transformer (one wire format into
 * another). A broken source ends the output through `end()` rather than an error, the source is
 * always released, and `finally` runs once whatever happened.
 */

export interface ChunkRewriter {
  push(chunk: Uint8Array): string;
  end(): string;
}

export function rewriteStream(source: Readable, rewriter: ChunkRewriter, finally_?: () => void): Readable {
  async function* run(): AsyncGenerator<Buffer> {
    try {
      try {
        for await (const chunk of source as AsyncIterable<Buffer>) {
          const text = rewriter.push(chunk);
          if (text) yield Buffer.from(text);
        }
      } catch {
        // The provider connection broke: end() closes (or reports) the truncated answer.
      }
      const tail = rewriter.end();
      if (tail) yield Buffer.from(tail);
    } finally {
      source.destroy();
      finally_?.();
    }
  }
  return Readable.from(run(), { objectMode: false });
}

/** What a source that closed before its end reports (Node's own words for a cut response). */
const prematureClose = (): Error => Object.assign(new Error('aborted'), { code: 'ECONNRESET' });

/**
 * A body that never fails on its reader: when the source breaks (an error, or a close before its
 * end), the output gets `onBreak`'s tail (an error event in the stream's own protocol, or nothing)
 * and ends, so an HTTP server sends the end of the body instead of dropping the connection. Chunks
 * pass one by one with the source's backpressure; the output's end or teardown releases the source.
 */
export function endOnBreak(source: Readable, onBreak: (err: unknown) => string | undefined): Readable {
  const out = new PassThrough();
  let settled = false;
  const broke = (err: unknown) => {
    if (settled) return;
    settled = true;
    // Torn down by the reader's leaving: nobody is there to tell.
    if (!out.destroyed) out.end(onBreak(err));
  };
  source.on('data', (chunk: Buffer) => {
    if (!out.write(chunk)) source.pause();
  });
  out.on('drain', () => source.resume());
  source.once('end', () => {
    settled = true;
    if (!out.destroyed) out.end();
  });
  source.once('error', broke);
  source.once('close', () => {
    if (!source.readableEnded) broke(prematureClose());
  });
  out.once('close', () => source.destroy());
  return out;
}
