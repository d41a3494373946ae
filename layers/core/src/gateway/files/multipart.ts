/**
 * A multipart/form-data body read part by part as it arrives (RFC 7578), so a file part can go to
 * storage without the body ever being held whole. Each part's body must be read to its end (or
 * the read abandoned with an error) before the next part is asked for.
 */
import { ValidationError } from '../../http/errors.ts';

export interface FormPart {
  name: string;
  /** Present for file parts. */
  filename?: string;
  body: AsyncIterable<Buffer>;
}

const MAX_PART_HEADERS = 16 << 10;
const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');

const malformed = (why: string): ValidationError =>
  new ValidationError([{ path: '', message: `The multipart body could not be parsed: ${why}` }], { param: null, openaiCode: 'invalid_multipart' });

/** The bytes read and not yet handed out, refilled from the source on demand. */
class Scanner {
  buf: Buffer = CRLF;
  readonly #source: AsyncIterator<Uint8Array>;
  constructor(source: AsyncIterable<Uint8Array>) {
    this.#source = source[Symbol.asyncIterator]();
  }

  /** Reads one more chunk; false at the end of the body. */
  async more(): Promise<boolean> {
    const step = await this.#source.next();
    if (step.done) return false;
    this.buf = this.buf.length ? Buffer.concat([this.buf, step.value]) : Buffer.from(step.value);
    return true;
  }

  /** Everything up to `mark` (consumed with it), read within `cap` bytes. */
  async until(mark: Buffer, cap: number, what: string): Promise<Buffer> {
    for (;;) {
      const at = this.buf.indexOf(mark);
      if (at >= 0) {
        const head = this.buf.subarray(0, at);
        this.buf = this.buf.subarray(at + mark.length);
        return head;
      }
      if (this.buf.length > cap) throw malformed(`${what} too long`);
      if (!(await this.more())) throw malformed(`${what} not terminated`);
    }
  }
}

/** A part's bytes up to the next delimiter, handed out as they arrive (a delimiter's length kept back). */
async function* partBody(sc: Scanner, delimiter: Buffer): AsyncGenerator<Buffer> {
  for (;;) {
    const at = sc.buf.indexOf(delimiter);
    if (at >= 0) {
      const last = sc.buf.subarray(0, at);
      sc.buf = sc.buf.subarray(at + delimiter.length);
      if (last.length) yield last;
      return;
    }
    const keep = delimiter.length - 1;
    if (sc.buf.length > keep) {
      const out = sc.buf.subarray(0, sc.buf.length - keep);
      sc.buf = sc.buf.subarray(sc.buf.length - keep);
      yield out;
    }
    if (!(await sc.more())) throw malformed('the closing boundary is missing');
  }
}

function partHeaders(raw: Buffer): { name: string; filename?: string } {
  const disposition = raw
    .toString('utf8')
    .split('\r\n')
    .find((line) => /^content-disposition\s*:/i.test(line));
  const name = disposition?.match(/;\s*name="([^"]*)"/i)?.[1];
  if (name === undefined) throw malformed('a part has no content-disposition name');
  const filename = disposition?.match(/;\s*filename="([^"]*)"/i)?.[1];
  return filename === undefined ? { name } : { name, filename };
}

/** The parts of a multipart body with this boundary, in order. */
export async function* multipartParts(source: AsyncIterable<Uint8Array>, boundary: string): AsyncGenerator<FormPart> {
  const sc = new Scanner(source);
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // The preamble (usually empty) ends at the first delimiter; the scanner starts with a CRLF so it matches.
  for await (const _ of partBody(sc, delimiter));
  for (;;) {
    while (sc.buf.length < 2) if (!(await sc.more())) throw malformed('the body ends after a boundary');
    if (sc.buf[0] === 0x2d && sc.buf[1] === 0x2d) return;
    if (!sc.buf.subarray(0, 2).equals(CRLF)) throw malformed('a boundary is not followed by a line break');
    sc.buf = sc.buf.subarray(2);
    const headers = partHeaders(await sc.until(HEADERS_END, MAX_PART_HEADERS, 'part headers'));
    const body = partBody(sc, delimiter);
    yield { ...headers, body };
    // Whatever the reader left of the part.
    for await (const _ of body);
  }
}

/** The boundary of a multipart/form-data content type, or undefined. */
export function boundaryOf(contentType: string | null): string | undefined {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const m = contentType.match(/;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i);
  return m?.[1] ?? m?.[2];
}
