/**
 * Masks secrets in a provider's answer: a provider that echoes the key it was sent ("Incorrect API
 * key provided: sk-...") must not hand it to the client, the request log or the cache. Every form
 * a secret may come back in (as sent, escaped in JSON, URL-encoded) is replaced by `[REDACTED]` in
 * the headers and the body, streamed or not. A stream holds back only a tail that could still be
 * the start of a secret, so a secret split across chunks is caught and an SSE event, which never
 * ends with the start of one, passes at once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import zlib from 'node:zlib';

/** Shorter values are not masked: they would mask ordinary words. No real credential is that short. */
export const MIN_SECRET_LENGTH = 8;
export const SECRET_MASK = '[REDACTED]';
const MASK = Buffer.from(SECRET_MASK);

/** The texts a secret may come back as: as sent, escaped in JSON (also with `\/`), URL-encoded. */
function formsOf(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  return [secret, json, json.replaceAll('/', '\\/'), encodeURIComponent(secret)];
}

/** A decoder for the content codings a provider may still use although it was asked for none. */
const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  zstd: () => zlib.createZstdDecompress(),
};

/** The coding to decode before scrubbing (undefined: none); null for one Gantry cannot decode. */
export function codingOf(headers: IncomingHttpHeaders): string | undefined | null {
  const value = headers['content-encoding'];
  const coding = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  if (!coding || coding === 'identity') return undefined;
  return coding in DECODERS ? coding : null;
}

const EMPTY = Buffer.alloc(0);

const prematureClose = (): Error => Object.assign(new Error('aborted'), { code: 'ECONNRESET' });

/**
 * Every occurrence of the needles in `data`, leftmost first (the longest where two start at the
 * same place), not overlapping. Each needle is searched again only once its last hit is passed, so
 * the work stays linear however many times a server repeats a secret.
 */
function* matches(data: Buffer, needles: readonly Buffer[]): Generator<{ at: number; end: number }> {
  const hits = needles.map((needle) => ({ needle, at: data.indexOf(needle) }));
  for (;;) {
    let best: (typeof hits)[number] | undefined;
    for (const h of hits) {
      if (h.at !== -1 && (!best || h.at < best.at || (h.at === best.at && h.needle.length > best.needle.length))) best = h;
    }
    if (!best) return;
    const end = best.at + best.needle.length;
    yield { at: best.at, end };
    for (const h of hits) if (h.at !== -1 && h.at < end) h.at = data.indexOf(h.needle, end);
  }
}

/** Length of the longest tail of `data` (from `from` on) that is the start of a needle but not all of it. */
function partialTail(data: Buffer, needles: readonly Buffer[], from: number): number {
  let best = 0;
  for (const needle of needles) {
    const first = needle.readUInt8(0);
    for (let i = data.indexOf(first, Math.max(from, data.length - needle.length + 1)); i !== -1; i = data.indexOf(first, i + 1)) {
      const k = data.length - i;
      if (k <= best) break;
      if (data.compare(needle, 0, k, i) === 0) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/** The secrets sent on one request, as the byte and text needles answers are searched for. */
export class SecretSet {
  readonly #texts: readonly string[];
  readonly #needles: readonly Buffer[];

  private constructor(texts: readonly string[]) {
    this.#texts = texts;
    this.#needles = texts.map((t) => Buffer.from(t));
  }

  /** Undefined when no value is long enough to be a secret: then there is nothing to scrub. */
  static of(values: Iterable<string | undefined>): SecretSet | undefined {
    const texts = new Set<string>();
    for (const value of values) {
      if (value === undefined || value.length < MIN_SECRET_LENGTH) continue;
      for (const form of formsOf(value)) texts.add(form);
    }
    // Longest first: a secret that contains another is masked whole.
    return texts.size ? new SecretSet([...texts].sort((a, b) => b.length - a.length)) : undefined;
  }

  text(value: string): string {
    let out = value;
    for (const t of this.#texts) if (out.includes(t)) out = out.replaceAll(t, SECRET_MASK);
    return out;
  }

  /** Header values masked. The body's length may change, so Content-Length goes. */
  headers(headers: IncomingHttpHeaders): IncomingHttpHeaders {
    const out: IncomingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name === 'content-length' || value === undefined) continue;
      out[name] = Array.isArray(value) ? value.map((v) => this.text(v)) : this.text(value);
    }
    return out;
  }

  /**
   * `data` with every secret masked, and the tail held back because it could be the start of a
   * secret that the next chunk completes (`final`: nothing more comes, nothing is held).
   */
  scrub(data: Buffer, final: boolean): { out: Buffer; held: Buffer } {
    const parts: Buffer[] = [];
    let pos = 0;
    for (const m of matches(data, this.#needles)) {
      parts.push(data.subarray(pos, m.at), MASK);
      pos = m.end;
    }
    const hold = final ? 0 : partialTail(data, this.#needles, pos);
    if (pos === 0 && hold === 0) return { out: data, held: EMPTY };
    parts.push(data.subarray(pos, data.length - hold));
    return { out: Buffer.concat(parts), held: Buffer.from(data.subarray(data.length - hold)) };
  }

  /**
   * The body with every secret masked, chunk by chunk with the source's backpressure. A body in a
   * content coding (`codingOf`) is decoded first: its bytes could not be searched. The source's
   * error ends the output with that error, and the output's end or teardown releases the source.
   */
  stream(source: Readable, contentEncoding: string | undefined): Readable {
    let held: Buffer = EMPTY;
    const scrub = (chunk: Buffer, final: boolean): Buffer | undefined => {
      const r = this.scrub(held.length ? Buffer.concat([held, chunk]) : chunk, final);
      held = r.held;
      return r.out.length ? r.out : undefined;
    };
    const out = new Transform({
      transform: (chunk: Buffer, _encoding, done) => done(null, scrub(chunk, false)),
      flush: (done) => done(null, scrub(EMPTY, true)),
    });
    const decoder = contentEncoding ? DECODERS[contentEncoding]?.() : undefined;
    source.once('error', (err) => out.destroy(err));
    source.once('close', () => {
      if (!source.readableEnded && !out.destroyed) out.destroy(prematureClose());
    });
    out.once('close', () => source.destroy());
    if (decoder) {
      decoder.once('error', (err) => out.destroy(err));
      out.once('close', () => decoder.destroy());
      source.pipe(decoder).pipe(out);
    } else {
      source.pipe(out);
    }
    return out;
  }
}

/**
 * An answer with the secrets masked in its headers and body. A body in a content coding Gantry
 * decodes is decoded (and loses its Content-Encoding); the caller refuses any other (`codingOf`).
 */
export function scrubAnswer<A extends { headers: IncomingHttpHeaders; body: Readable }>(answer: A, secrets: SecretSet): A {
  const coding = codingOf(answer.headers) ?? undefined;
  const headers = secrets.headers(answer.headers);
  if (coding) delete headers['content-encoding'];
  return { ...answer, headers, body: secrets.stream(answer.body, coding) };
}

/** A whole message (a realtime WebSocket frame) with every secret masked: nothing to hold back. */
export function maskFrame(secrets: SecretSet | undefined, data: Buffer): Buffer {
  return secrets ? secrets.scrub(data, true).out : data;
}
