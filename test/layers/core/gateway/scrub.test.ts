import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codingOf, scrubAnswer, SECRET_MASK, SecretSet } from '../../../../layers/core/src/gateway/scrub.ts';

const KEY = 'sk-proj-0123456789abcdef';
const set = (...values: string[]) => {
  const s = SecretSet.of(values);
  if (!s) throw new Error('no secrets');
  return s;
};

async function read(body: Readable): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of body as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
  return Buffer.concat(parts).toString('utf8');
}

/** The source emitted in these chunks, one per tick. */
function chunked(chunks: readonly (string | Buffer)[]): Readable {
  return Readable.from(
    (async function* () {
      for (const c of chunks) {
        await new Promise((r) => setImmediate(r));
        yield Buffer.from(c);
      }
    })(),
  );
}

describe('SecretSet', () => {
  it('has nothing to do without a value of at least 8 characters', () => {
    expect(SecretSet.of([])).toBeUndefined();
    expect(SecretSet.of([undefined, 'sk-x', '1234567'])).toBeUndefined();
    expect(SecretSet.of(['12345678'])).toBeDefined();
  });

  it('masks a key in text, also as JSON-escaped and URL-encoded', () => {
    const aws = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const s = set(KEY, aws, 'pa"ss\\word');
    expect(s.text(`Incorrect API key provided: ${KEY}.`)).toBe(`Incorrect API key provided: ${SECRET_MASK}.`);
    expect(s.text(JSON.stringify({ m: aws }))).toBe(JSON.stringify({ m: SECRET_MASK }));
    expect(s.text('{"m":"wJalrXUtnFEMI\\/K7MDENG\\/bPxRfiCYEXAMPLEKEY"}')).toBe(`{"m":"${SECRET_MASK}"}`);
    expect(s.text(`?secret=${encodeURIComponent(aws)}`)).toBe(`?secret=${SECRET_MASK}`);
    expect(s.text(JSON.stringify({ m: 'pa"ss\\word' }))).toBe(JSON.stringify({ m: SECRET_MASK }));
    expect(s.text('nothing here')).toBe('nothing here');
  });

  it('masks header values and drops Content-Length', () => {
    const s = set(KEY);
    expect(s.headers({ 'content-length': '99', 'x-echo': `Bearer ${KEY}`, 'set-cookie': [`k=${KEY}`, 'a=b'], 'content-type': 'application/json' })).toEqual({
      'x-echo': `Bearer ${SECRET_MASK}`,
      'set-cookie': [`k=${SECRET_MASK}`, 'a=b'],
      'content-type': 'application/json',
    });
  });

  it('masks the longest of two secrets that start at the same place, and every occurrence', () => {
    const s = set('abcdefgh', 'abcdefgh-and-more');
    expect(s.text('abcdefgh-and-more abcdefgh abcdefgh-and-more')).toBe(`${SECRET_MASK} ${SECRET_MASK} ${SECRET_MASK}`);
    const { out, held } = s.scrub(Buffer.from('x abcdefgh-and-more y abcdefgh'), true);
    expect(out.toString()).toBe(`x ${SECRET_MASK} y ${SECRET_MASK}`);
    expect(held.length).toBe(0);
  });

  it('holds back only a tail that could start a secret', () => {
    const s = set(KEY);
    expect(s.scrub(Buffer.from('data: {"a":1}\n\n'), false).held.length).toBe(0);
    const split = s.scrub(Buffer.from('key: sk-proj-0123'), false);
    expect(split.out.toString()).toBe('key: ');
    expect(split.held.toString()).toBe('sk-proj-0123');
    // The end of the body: what was held goes out, it was no secret.
    expect(s.scrub(Buffer.from('sk-pro'), true).out.toString()).toBe('sk-pro');
  });

  it('returns a clean chunk as it is, without copying it', () => {
    const chunk = Buffer.from('data: {"choices":[]}\n\n');
    expect(set(KEY).scrub(chunk, false).out).toBe(chunk);
  });

  it('masks a secret split across stream chunks at any boundary', async () => {
    const text = `data: {"error":{"message":"Incorrect API key provided: ${KEY}"}}\n\ndata: [DONE]\n\n`;
    for (let cut = 1; cut < text.length; cut++) {
      const out = await read(set(KEY).stream(chunked([text.slice(0, cut), text.slice(cut)]), undefined));
      expect(out).toBe(text.replace(KEY, SECRET_MASK));
    }
  });

  it('masks every secret whatever the chunking (property)', async () => {
    const s = set(KEY, 'another-secret-value');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('a', ' ', '"', 's', 'sk-', 'sk-proj-', KEY, 'another-', 'another-secret-value', '\n'), { maxLength: 30 }),
        fc.array(fc.nat(200), { maxLength: 6 }),
        async (words, cuts) => {
          const text = words.join('');
          const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points, text.length]
            .slice(1)
            .map((end, i, all) => text.slice(i === 0 ? 0 : all[i - 1], end))
            .filter((c) => c.length);
          const out = await read(s.stream(chunked(chunks), undefined));
          expect(out).toBe(s.text(text));
          expect(out).not.toContain(KEY);
          expect(out).not.toContain('another-secret-value');
        },
      ),
      { numRuns: 200 },
    );
  });

  it('decodes a gzip body to scrub it, and says which codings it cannot read', async () => {
    const up = { status: 401, headers: { 'content-encoding': 'gzip', 'content-length': '10' }, body: Readable.from([gzipSync(`bad key ${KEY}`)]) };
    const scrubbed = scrubAnswer(up, set(KEY));
    expect(scrubbed.headers).toEqual({});
    expect(await read(scrubbed.body)).toBe(`bad key ${SECRET_MASK}`);
    expect(codingOf({})).toBeUndefined();
    expect(codingOf({ 'content-encoding': 'identity' })).toBeUndefined();
    expect(codingOf({ 'content-encoding': 'BR' })).toBe('br');
    expect(codingOf({ 'content-encoding': 'compress' })).toBeNull();
  });

  it('ends with the source error, and releases the source when the reader leaves', async () => {
    const failing = new Readable({ read() {} });
    const out = set(KEY).stream(failing, undefined);
    const boom = Object.assign(new Error('boom'), { code: 'ECONNRESET' });
    const seen = new Promise((resolve) => out.once('error', resolve));
    failing.push('partial sk-pro');
    failing.destroy(boom);
    expect(await seen).toBe(boom);

    const source = new Readable({ read() {} });
    const left = set(KEY).stream(source, undefined);
    left.destroy();
    await new Promise((r) => setImmediate(r));
    expect(source.destroyed).toBe(true);
  });

  it('turns a source closed before its end into an error, never a hang', async () => {
    const source = new Readable({ read() {} });
    const out = set(KEY).stream(source, undefined);
    const seen = new Promise<Error>((resolve) => out.once('error', resolve));
    source.push('half');
    source.destroy();
    expect(((await seen) as NodeJS.ErrnoException).code).toBe('ECONNRESET');
  });
});
