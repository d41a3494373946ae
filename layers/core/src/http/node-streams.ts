import { Readable } from 'node:stream';
/** Node byte streams as the gateway handles them: bounded reads and format rewrites. */

/**
 * Reads a stream up to `cap` bytes. Past the cap it stops, releases the source and says the body
 * was truncated (an error page or answer that large is not worth holding).
 */
export async function readCapped(body: Readable, cap: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > cap) {
      body.destroy();
      return { bytes: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(chunk);
  }
  return { bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks), truncated: false };
}

/**
 * Reads a stream whole when it is at most `cap` bytes; past the cap, gives back a stream that
 * replays what was read and then the rest, so nothing is lost and nothing large is held.
 */
export async function readUpTo(body: Readable, cap: number): Promise<{ bytes: Buffer } | { rest: Readable }> {
  const it = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const next = await it.next();
    if (next.done) return { bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) };
    chunks.push(next.value);
    size += next.value.length;
    if (size > cap) break;
  }
  async function* replay(): AsyncGenerator<Buffer> {
    try {
      yield* chunks;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
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
