/** The bounded reads and clean ends of http/node-streams.ts over real Node streams: within the cap, past it, a broken source, and what happens to the source. */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { endOnBreak, readCapped, readUpTo, readWithin } from '../../../../layers/core/src/http/node-streams.ts';

/** A stream of `count` chunks of `size` bytes ('a', 'b', ...), which records whether it was released. */
function source(count: number, size: number): { body: Readable; released: () => boolean } {
  const chunks = Array.from({ length: count }, (_, i) => Buffer.alloc(size, 97 + i));
  const body = Readable.from(chunks, { objectMode: false });
  return { body, released: () => body.destroyed };
}

const text = async (r: Readable): Promise<string> => {
  const parts: Buffer[] = [];
  for await (const c of r as AsyncIterable<Buffer>) parts.push(c);
  return Buffer.concat(parts).toString('utf8');
};

describe('readCapped', () => {
  it('reads a body within the cap whole', async () => {
    expect(await readCapped(source(3, 2).body, 6)).toEqual({ bytes: Buffer.from('aabbcc'), truncated: false });
  });

  it('keeps the chunks that fit and releases the source past the cap', async () => {
    const s = source(4, 2);
    expect(await readCapped(s.body, 5)).toEqual({ bytes: Buffer.from('aabb'), truncated: true });
    expect(s.released()).toBe(true);
  });
});

describe('readWithin', () => {
  it('answers the bytes of a body within the cap', async () => {
    expect((await readWithin(source(2, 3).body, 6, () => new Error('too large'))).toString()).toBe('aaabbb');
  });

  it('throws the given error and releases the source past the cap', async () => {
    const s = source(3, 3);
    await expect(readWithin(s.body, 6, () => new RangeError('over 6'))).rejects.toThrow(new RangeError('over 6'));
    expect(s.released()).toBe(true);
  });
});

describe('readUpTo', () => {
  it('reads a body within the cap whole', async () => {
    const out = await readUpTo(source(2, 2).body, 4);
    expect(out).toEqual({ bytes: Buffer.from('aabb') });
  });

  it('past the cap, relays every byte: what was read, then the rest', async () => {
    const out = await readUpTo(source(5, 2).body, 3);
    expect('rest' in out).toBe(true);
    if ('rest' in out) expect(await text(out.rest)).toBe('aabbccddee');
  });

  it('releases the source when the relayed body is abandoned', async () => {
    const s = source(5, 2);
    const out = await readUpTo(s.body, 3);
    if (!('rest' in out)) throw new Error('expected a relay');
    for await (const _ of out.rest) break;
    expect(s.released()).toBe(true);
  });
});

describe('endOnBreak', () => {
  /** A source that sends `chunks` and then breaks as `how` says. */
  function breaking(chunks: string[], how: 'error' | 'close' | 'end'): Readable {
    const body = new Readable({ read() {} });
    for (const c of chunks) body.push(c);
    setImmediate(() => {
      if (how === 'error') body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
      else if (how === 'close') body.destroy();
      else body.push(null);
    });
    return body;
  }

  it.each(['error', 'close'] as const)('ends the output with the tail when the source breaks (%s), never with an error', async (how) => {
    const seen: unknown[] = [];
    const out = endOnBreak(breaking(['a', 'b'], how), (err) => {
      seen.push((err as NodeJS.ErrnoException).code);
      return '<cut>';
    });
    expect(await text(out)).toBe('ab<cut>');
    expect(seen).toEqual(['ECONNRESET']);
  });

  it('passes a source that ends normally untouched, without calling onBreak', async () => {
    let called = false;
    expect(await text(endOnBreak(breaking(['a', 'b'], 'end'), () => ((called = true), 'x')))).toBe('ab');
    expect(called).toBe(false);
  });

  it('ends with nothing more when onBreak has no tail', async () => {
    expect(await text(endOnBreak(breaking(['a'], 'error'), () => undefined))).toBe('a');
  });

  it('releases the source, without calling onBreak, when the reader leaves', async () => {
    let called = false;
    const src = new Readable({ read() {} });
    src.push('a');
    const out = endOnBreak(src, () => ((called = true), 'x'));
    out.destroy();
    await new Promise((r) => setImmediate(r));
    expect(src.destroyed).toBe(true);
    expect(called).toBe(false);
  });

  it('holds the source back while the reader is slow', async () => {
    const s = source(64, 16 << 10);
    const out = endOnBreak(s.body, () => undefined);
    await new Promise((r) => setTimeout(r, 20));
    // Nothing read yet: only about a high-water mark is buffered, not the whole 1 MiB.
    expect(out.readableLength).toBeLessThan(256 << 10);
    expect(await text(out)).toHaveLength(64 * (16 << 10));
  });
});
