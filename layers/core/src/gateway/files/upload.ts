/**
 * `POST /v1/files` held by the gateway: the multipart body read part by part, the file part
 * streamed to blob storage (counted, and for purpose `batch` checked to be lines of UTF-8 on the
 * way; what the lines say is checked when a batch is created on it), so no upload is ever held
 * whole. Anything refused leaves nothing stored.
 */
import { PayloadTooLargeError, ValidationError } from '../../http/errors.ts';
import type { BlobStore } from '../../ports/blob.ts';
import { FILE_PURPOSES } from '../validate/files.ts';
import { BatchLineChecker } from './batch-lines.ts';
import { boundaryOf, multipartParts, type FormPart } from './multipart.ts';

/** OpenAI's limit for a batch input file; every file the gateway holds keeps to it. */
export const HELD_FILE_MAX_BYTES = 200 << 20;
/** Room for the form around the file (boundaries, part headers, `purpose`). */
const FORM_OVERHEAD_BYTES = 1 << 20;
const MAX_FIELD_BYTES = 1024;

export interface StoredUpload {
  filename: string;
  purpose: string;
  bytes: number;
}

/** Counts bytes passing through and refuses the stream past `limit` with the file limit's 413. */
async function* capped(source: AsyncIterable<Uint8Array>, limit: number, counted: (n: number) => void): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.byteLength;
    if (total > limit) throw new PayloadTooLargeError(HELD_FILE_MAX_BYTES);
    counted(total);
    yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  }
}

async function* tapped(source: AsyncIterable<Buffer>, checker: BatchLineChecker | undefined): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    checker?.push(chunk);
    yield chunk;
  }
}

async function* noBody(): AsyncGenerator<Uint8Array> {}

async function fieldText(part: FormPart): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of capped(part.body, MAX_FIELD_BYTES, () => undefined)) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function checkPurpose(purpose: string | undefined): string {
  if (purpose === undefined) throw ValidationError.field('purpose', 'is required');
  if (!(FILE_PURPOSES as readonly string[]).includes(purpose)) throw ValidationError.field('purpose', `must be one of ${FILE_PURPOSES.join(', ')}`);
  return purpose;
}

/** Reads the upload into `blobKey`; what was stored, or an error (after removing what was stored). */
export async function storeUpload(req: Request, blobs: BlobStore, blobKey: string): Promise<StoredUpload> {
  const boundary = boundaryOf(req.headers.get('content-type'));
  if (!boundary) throw ValidationError.field('content-type', 'must be multipart/form-data with a boundary');
  if (Number(req.headers.get('content-length') ?? NaN) > HELD_FILE_MAX_BYTES + FORM_OVERHEAD_BYTES) throw new PayloadTooLargeError(HELD_FILE_MAX_BYTES);
  const body = capped((req.body as AsyncIterable<Uint8Array> | null) ?? noBody(), HELD_FILE_MAX_BYTES + FORM_OVERHEAD_BYTES, () => undefined);
  let purpose: string | undefined;
  let file: { filename: string; bytes: number; checker: BatchLineChecker | undefined } | undefined;
  try {
    for await (const part of multipartParts(body, boundary)) {
      if (part.name === 'purpose') purpose = await fieldText(part);
      else if (part.name === 'file' && part.filename !== undefined) {
        if (file) throw ValidationError.field('file', 'must be given once');
        // The purpose usually follows the file (as OpenAI's SDKs send it): then every file is checked as a batch file would be.
        const stored = { filename: part.filename, bytes: 0, checker: purpose === undefined || purpose === 'batch' ? new BatchLineChecker() : undefined };
        file = stored;
        await blobs.putStream(
          blobKey,
          tapped(
            capped(part.body, HELD_FILE_MAX_BYTES, (n) => (stored.bytes = n)),
            stored.checker,
          ),
          'application/octet-stream',
        );
      }
    }
    if (!file) throw ValidationError.field('file', 'is required');
    const checked = checkPurpose(purpose);
    const problems = checked === 'batch' ? (file.checker?.end() ?? []) : [];
    if (problems.length) throw new ValidationError(problems, { param: 'file', openaiCode: 'invalid_batch_file' });
    return { filename: file.filename, purpose: checked, bytes: file.bytes };
  } catch (err) {
    if (file) await blobs.delete(blobKey).catch(() => undefined);
    throw err;
  }
}
