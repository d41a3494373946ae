/**
 * The lines of a batch input file (OpenAI's format: one JSON object a line, `{custom_id, method,
 * url, body}`, `custom_id` unique), checked chunk by chunk as the upload streams past. Problems
 * name their 1-based line; after MAX_PROBLEMS the rest is no longer checked.
 */
import type { FieldProblem } from '../../http/errors.ts';
import { isRecord, tryParseJson } from '../../http/json.ts';

const MAX_PROBLEMS = 20;
/** A line is one request: at most a JSON endpoint's body limit. */
const MAX_LINE_BYTES = 32 << 20;
const NEWLINE = 0x0a;

export function lineProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'must be a JSON object';
  if (typeof value.custom_id !== 'string' || value.custom_id === '') return 'custom_id must be a non-empty string';
  if (value.method !== 'POST') return 'method must be "POST"';
  if (typeof value.url !== 'string' || !value.url.startsWith('/v1/')) return 'url must be a /v1/ path, e.g. /v1/chat/completions';
  if (!isRecord(value.body)) return 'body must be a JSON object';
  return undefined;
}

export class BatchLineChecker {
  readonly problems: FieldProblem[] = [];
  #line = 0;
  #partial: Buffer[] = [];
  #partialBytes = 0;
  #tooLong = false;
  readonly #seen = new Map<string, number>();

  push(chunk: Buffer): void {
    let from = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, from)) {
      this.#hold(chunk.subarray(from, nl));
      this.#finishLine();
      from = nl + 1;
    }
    this.#hold(chunk.subarray(from));
  }

  /** Checks the last line (one without a final newline); call once the upload has ended. */
  end(): FieldProblem[] {
    if (this.#partialBytes > 0 || this.#tooLong) this.#finishLine();
    if (this.#line === 0) this.#report(1, 'the file has no lines');
    return this.problems;
  }

  #hold(piece: Buffer): void {
    if (piece.length === 0 || this.#tooLong) return;
    this.#partialBytes += piece.length;
    if (this.#partialBytes > MAX_LINE_BYTES) {
      this.#tooLong = true;
      this.#partial = [];
    } else this.#partial.push(piece);
  }

  #finishLine(): void {
    const line = ++this.#line;
    const text = Buffer.concat(this.#partial, this.#partialBytes).toString('utf8').replace(/\r$/, '');
    const tooLong = this.#tooLong;
    this.#partial = [];
    this.#partialBytes = 0;
    this.#tooLong = false;
    if (this.problems.length >= MAX_PROBLEMS) return;
    if (tooLong) return this.#report(line, `is longer than ${MAX_LINE_BYTES >> 20} MiB`);
    if (text.trim() === '') return this.#report(line, 'is empty');
    const parsed = tryParseJson(text);
    if (!parsed.ok) return this.#report(line, 'is not valid JSON');
    const problem = lineProblem(parsed.value);
    if (problem) return this.#report(line, problem);
    const id = (parsed.value as { custom_id: string }).custom_id;
    const first = this.#seen.get(id);
    if (first !== undefined) return this.#report(line, `custom_id ${JSON.stringify(id)} is already used on line ${first}`);
    this.#seen.set(id, line);
  }

  #report(line: number, message: string): void {
    this.problems.push({ path: 'file', message: `line ${line}: ${message}` });
  }
}
