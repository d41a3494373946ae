/**
 * What an upload of purpose `batch` must be, checked as it streams past in chunks of any size: UTF-8
 * text (the line of the first bad byte named, a character split across chunks is fine), lines of at
 * most 32 MiB. What the lines say is not judged here: a batch on the file does it.
 */
import { describe, expect, it } from 'vitest';
import { BatchLineChecker, MAX_LINE_BYTES } from '../../../../../layers/core/src/gateway/files/batch-lines.ts';

const check = (text: Buffer, size: number) => {
  const checker = new BatchLineChecker();
  for (let i = 0; i < text.length; i += size) checker.push(text.subarray(i, i + size));
  return checker.end();
};

describe('BatchLineChecker', () => {
  const good = (id: string) => JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { input: 'é ✓ 😀' } });

  it.each([1, 2, 3, 5, 64])('takes any lines of UTF-8, whatever they say, cut every %i bytes (characters split across chunks)', (size) => {
    const text = Buffer.from(`${good('a')}\r\n{not json\n\n${good('a')}\n[1, 2]`);
    expect(check(text, size)).toEqual([]);
  });

  it('takes an empty file (a batch on it fails with empty_file)', () => {
    expect(new BatchLineChecker().end()).toEqual([]);
  });

  it.each([1, 4, 1024])('names the line of the first byte that is not UTF-8 (chunks of %i bytes)', (size) => {
    const latin1 = Buffer.concat([
      Buffer.from(`${good('a')}\n${good('b')}\n{"custom_id":"caf`),
      Buffer.from([0xe9]),
      Buffer.from('"}\n'),
      Buffer.from([0xff]),
      Buffer.from('\n'),
    ]);
    expect(check(latin1, size)).toEqual([{ path: 'file', message: 'line 3: is not UTF-8 text' }]);
  });

  it('names a line that ends inside a character, and a file that does', () => {
    expect(check(Buffer.concat([Buffer.from('ok\n"'), Buffer.from([0xc3]), Buffer.from('\nok\n')]), 2)).toEqual([
      { path: 'file', message: 'line 2: is not UTF-8 text' },
    ]);
    expect(check(Buffer.concat([Buffer.from('ok\n"'), Buffer.from([0xe2, 0x9c])]), 3)).toEqual([
      { path: 'file', message: 'line 2: is not UTF-8 text (it ends inside a character)' },
    ]);
  });

  it('refuses a line over 32 MiB, and takes one of exactly 32 MiB', () => {
    const mib = Buffer.alloc(1 << 20, 'a');
    const lines = (n: number, extra: number) => {
      const checker = new BatchLineChecker();
      checker.push(Buffer.from('short\n'));
      for (let i = 0; i < n; i++) checker.push(mib);
      checker.push(Buffer.alloc(extra, 'a'));
      checker.push(Buffer.from('\nshort\n'));
      return checker.end();
    };
    expect(MAX_LINE_BYTES).toBe(32 << 20);
    expect(lines(32, 0)).toEqual([]);
    expect(lines(32, 1)).toEqual([{ path: 'file', message: 'line 2: is longer than 32 MiB' }]);
  });
});
