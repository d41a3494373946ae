/**
 * A finished batch's output and error files, in OpenAI's line format, kept as files held by the
 * gateway (purpose `batch_output`) in the batch's workspace:
 * - output: `{"id","custom_id","response":{"status_code","request_id","body"},"error":null}` for
 *   each line answered 2xx;
 * - error: the same for each line answered otherwise, and `{"response":null,"error":{"code",
 *   "message"}}` for each line that got no answer (cancelled, expired, interrupted).
 * A batch that fails validation gets an error file only: every line, each bad one with its
 * `errors.data` entry (`code`, `message`, `param`, `line`), the others as not run.
 * Lines keep the input file's order; the files are streamed to storage, never held whole.
 */
import type { CoreDeps } from '../deps.ts';
import { heldFileBlobKey, HeldFileRepository, newFileId } from '../store/files.ts';
import { newBatchRequestId, type BatchLineRecord, type BatchRecord } from '../store/batches.ts';
import { checkedLines, inputLines } from './input.ts';

export const UNRUN_ERRORS = {
  batch_cancelled: 'This request was not executed because the batch was cancelled.',
  batch_expired: 'This request could not be executed before the completion window expired.',
} as const;

export type UnrunCode = keyof typeof UNRUN_ERRORS;

/** A line still recorded as running when the batch was cancelled or expired: a worker stopped with it in flight. */
const INTERRUPTED = {
  code: 'request_interrupted',
  message: 'The worker running this request stopped before its answer was recorded. Resubmit it if needed.',
} as const;

const NOT_RUN_INVALID = 'This request was not executed because the batch failed validation: other lines of the input file are invalid (see errors.data).';

/** Whether the line's record puts it in the output file (answered 2xx); else it goes to the error file. */
export const answeredOk = (rec: BatchLineRecord): boolean =>
  rec.state === 'done' && !rec.error && rec.status_code !== undefined && rec.status_code >= 200 && rec.status_code < 300;

async function bodyText(deps: CoreDeps, rec: BatchLineRecord): Promise<string> {
  if (rec.body !== undefined) return rec.body;
  const bytes = rec.body_blob ? await deps.blobs.get(rec.body_blob) : undefined;
  return bytes ? Buffer.from(bytes).toString('utf8') : 'null';
}

const errorLine = (id: string, customId: string | null, error: { code: string; message: string; param?: string | null; line?: number | null }): string =>
  `{"id":${JSON.stringify(id)},"custom_id":${JSON.stringify(customId)},"response":null,"error":${JSON.stringify(error)}}\n`;

/** The file line of one input line, and whether it belongs to the output file (else the error file). */
async function resultLine(deps: CoreDeps, customId: string, rec: BatchLineRecord | undefined, unrun: UnrunCode): Promise<{ ok: boolean; text: string }> {
  // Never claimed, or given back after a 429 and not claimed again: it was not run.
  if (!rec || rec.state === 'throttled')
    return { ok: false, text: errorLine(rec?.request_id ?? newBatchRequestId(), customId, { code: unrun, message: UNRUN_ERRORS[unrun] }) };
  if (rec.state !== 'done' || rec.error || !rec.status_code) return { ok: false, text: errorLine(rec.request_id, customId, rec.error ?? INTERRUPTED) };
  const ok = answeredOk(rec);
  const response = `{"status_code":${rec.status_code},"request_id":${JSON.stringify(rec.response_request_id ?? rec.request_id)},"body":${await bodyText(deps, rec)}}`;
  return { ok, text: `{"id":${JSON.stringify(rec.request_id)},"custom_id":${JSON.stringify(customId)},"response":${response},"error":null}\n` };
}

/** The lines as bytes, counted as they pass. */
async function* counted(lines: AsyncIterable<string>, count: { lines: number; bytes: number }): AsyncGenerator<Uint8Array> {
  for await (const text of lines) {
    const bytes = Buffer.from(text);
    count.lines++;
    count.bytes += bytes.length;
    yield bytes;
  }
}

/** The line records of a batch in line order, read anew for each file. */
export type LineRecords = () => AsyncIterable<BatchLineRecord>;

/**
 * Walks the records beside the input lines: both come in line order, so each input line finds its
 * record (if any) by moving the records forward, and only one page of them is held at a time.
 */
class RecordCursor {
  readonly #it: AsyncIterator<BatchLineRecord>;
  #head: BatchLineRecord | undefined;
  #done = false;
  constructor(records: AsyncIterable<BatchLineRecord>) {
    this.#it = records[Symbol.asyncIterator]();
  }
  async at(index: number): Promise<BatchLineRecord | undefined> {
    while (!this.#done && (this.#head === undefined || this.#head.index < index)) {
      const next = await this.#it.next();
      if (next.done) this.#done = true;
      else this.#head = next.value;
    }
    return this.#head?.index === index ? this.#head : undefined;
  }
}

async function* fileLines(deps: CoreDeps, inputKey: string, records: LineRecords, unrun: UnrunCode, wantOk: boolean): AsyncGenerator<string> {
  const cursor = new RecordCursor(records());
  for await (const { index, text } of inputLines(deps, inputKey)) {
    const customId = (JSON.parse(text) as { custom_id: string }).custom_id;
    const line = await resultLine(deps, customId, await cursor.at(index), unrun);
    if (line.ok === wantOk) yield line.text;
  }
}

async function* validationLines(deps: CoreDeps, inputKey: string, endpoint: string): AsyncGenerator<string> {
  for await (const { index, check } of checkedLines(deps, inputKey, endpoint)) {
    const line = index + 1;
    yield check.ok
      ? errorLine(newBatchRequestId(), check.line.custom_id, { code: 'batch_failed', message: NOT_RUN_INVALID, param: null, line })
      : errorLine(newBatchRequestId(), check.custom_id, { ...check.error, line });
  }
}

async function writeFile(deps: CoreDeps, b: BatchRecord, kind: 'output' | 'error', lines: AsyncIterable<string>) {
  const now = deps.clock.now();
  const id = newFileId(now);
  const blobKey = heldFileBlobKey(b.workspace_id, id);
  const count = { lines: 0, bytes: 0 };
  await deps.blobs.putStream(blobKey, counted(lines, count), 'application/jsonl');
  if (count.lines === 0) {
    await deps.blobs.delete(blobKey);
    return { id: undefined, lines: 0 };
  }
  const filename = `${b.id}_${kind}.jsonl`;
  await new HeldFileRepository(deps.repos.table).put({
    id,
    organisation_id: b.organisation_id,
    workspace_id: b.workspace_id,
    filename,
    purpose: 'batch_output',
    bytes: count.bytes,
    created_at: Math.floor(now / 1000),
    blob_key: blobKey,
  });
  return { id, lines: count.lines };
}

/**
 * Writes both files; their ids (absent when a file would be empty) and line counts. `allOk`, asked
 * once the output file is written: every line's record was read answered 2xx, so the error file
 * would be empty and its pass over the batch is skipped (a record read done never changes).
 */
export async function writeResults(
  deps: CoreDeps,
  b: BatchRecord,
  inputKey: string,
  records: LineRecords,
  unrun: UnrunCode,
  allOk: () => boolean = () => false,
) {
  const output = await writeFile(deps, b, 'output', fileLines(deps, inputKey, records, unrun, true));
  const errors = allOk() ? { id: undefined, lines: 0 } : await writeFile(deps, b, 'error', fileLines(deps, inputKey, records, unrun, false));
  return { output_file_id: output.id, error_file_id: errors.id, completed: output.lines, failed: errors.lines };
}

/** The error file of a batch that failed validation (every line of the input); its id and line count. */
export async function writeValidationErrors(deps: CoreDeps, b: BatchRecord, inputKey: string): Promise<{ error_file_id: string | undefined; failed: number }> {
  const errors = await writeFile(deps, b, 'error', validationLines(deps, inputKey, b.endpoint));
  return { error_file_id: errors.id, failed: errors.lines };
}

/** Removes a file written for a batch that another runner had already moved on (a repeated start). */
export async function discardFile(deps: CoreDeps, b: BatchRecord, fileId: string): Promise<void> {
  const rec = await new HeldFileRepository(deps.repos.table).delete(b.workspace_id, fileId);
  if (rec) await deps.blobs.delete(rec.blob_key);
}
