/**
 * The streaming multipart reader on bodies cut at every possible place: a boundary or a part
 * header split across chunks reads the same as whole.
 */
import { describe, expect, it } from 'vitest';
import { boundaryOf, multipartParts } from '../../../../../layers/core/src/gateway/files/multipart.ts';

const BOUNDARY = 'b0und';
const body = Buffer.from(
  `preamble\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n` +
    `line one\r\n--b0un not a delimiter\r\nline two\r\n--${BOUNDARY}--\r\nepilogue`,
);

async function* split(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(source: AsyncIterable<Uint8Array>) {
  const parts: { name: string; filename?: string; text: string }[] = [];
  for await (const part of multipartParts(source, BOUNDARY)) {
    const chunks: Buffer[] = [];
    for await (const c of part.body) chunks.push(c);
    parts.push({ name: part.name, ...(part.filename !== undefined ? { filename: part.filename } : {}), text: Buffer.concat(chunks).toString() });
  }
  return parts;
}

describe('multipartParts', () => {
  it.each([1, 2, 3, 7, 13, body.length])('reads the parts whatever the chunk size (%i)', async (size) => {
    expect(await read(split(body, size))).toEqual([
      { name: 'purpose', text: 'batch' },
      { name: 'file', filename: 'in.jsonl', text: `line one\r\n--b0un not a delimiter\r\nline two` },
    ]);
  });

  it('refuses a body without its closing boundary, naming no field', async () => {
    const cut = body.subarray(0, body.indexOf('line two'));
    await expect(read(split(cut, 5))).rejects.toMatchObject({ status: 400, param: null, message: expect.stringContaining('closing boundary') });
  });

  it('finds the boundary of a content type', () => {
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(boundaryOf('application/json')).toBeUndefined();
  });
});
