/**
 * What an upload of purpose `batch` must be: a file of lines, i.e. UTF-8 text whose lines are each
 * at most MAX_LINE_BYTES, checked chunk by chunk as the upload streams past. What the lines say
 * (JSON, OpenAI's line shape, unique custom_id, the endpoint's body rules) is judged when a batch
 * is created on the file (batches/input.ts): a bad line fails that batch with its `errors.data`
 * entry and an error file, as OpenAI's API does, instead of refusing the upload.
 */
import type { FieldProblem } from '../../http/errors.ts';

/** A line is one request: at most a JSON endpoint's body limit. */
export const MAX_LINE_BYTES = 32 << 20;
const NEWLINE = 0x0a;

export class BatchLineChecker {
  #line = 1;
  #lineBytes = 0;
  #problem: FieldProblem | undefined;
  readonly #utf8 = new TextDecoder('utf-8', { fatal: true });

  push(chunk: Buffer): void {
    for (let from = 0; !this.#problem; ) {
      const nl = chunk.indexOf(NEWLINE, from);
      // The newline goes to the decoder too: a character cut short at the end of a line is an error of that line.
      const piece = chunk.subarray(from, nl < 0 ? chunk.length : nl + 1);
      if (!this.#take(piece, nl < 0 ? piece.length : piece.length - 1) || nl < 0) return;
      this.#line++;
      this.#lineBytes = 0;
      from = nl + 1;
    }
  }

  /** The problem found, if any (the first: what follows is not read as lines); call once the upload has ended. */
  end(): FieldProblem[] {
    if (!this.#problem) {
      try {
        this.#utf8.decode();
      } catch {
        this.#report('is not UTF-8 text (it ends inside a character)');
      }
    }
    return this.#problem ? [this.#problem] : [];
  }

  /** A piece of the current line (`bytes` of it before any newline); false once a problem is found. */
  #take(piece: Buffer, bytes: number): boolean {
    try {
      this.#utf8.decode(piece, { stream: true });
    } catch {
      this.#report('is not UTF-8 text');
      return false;
    }
    this.#lineBytes += bytes;
    if (this.#lineBytes <= MAX_LINE_BYTES) return true;
    this.#report(`is longer than ${MAX_LINE_BYTES >> 20} MiB`);
    return false;
  }

  #report(message: string): void {
    this.#problem = { path: 'file', message: `line ${this.#line}: ${message}` };
  }
}
