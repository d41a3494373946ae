/**
 * Log exports: a record per export (filters, columns, status, progress) and the background job that
 * writes the matching logs as JSONL. The job works in pages; after each part it writes, it stores
 * its cursor and counts, so a job cut short (a Lambda timeout, a restart) resumes where it stopped,
 * and a cancel between two parts stops it. In S3 the parts are a multipart upload of one object;
 * elsewhere they are separate blobs joined at the end.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../ports/logger.ts';
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { S3BlobStore } from '../ports/aws/blob-s3.ts';
import type { BlobStore } from '../ports/blob.ts';
import type { Clock } from '../ports/clock.ts';
import type { Queue } from '../ports/queue.ts';
import { ExportStore, type ExportRecord as StoredExport, type SinkState } from '../store/log-exports.ts';
import { parseFilters } from './filters.ts';
import { withBodies, type LogStore } from './log-store.ts';
import { redact } from '../security/redact.ts';
import { BODY_COLUMNS, exportLine, type ExportColumn } from './log-views.ts';
import type { ExportQueueMessage } from './messages.ts';

/** Rows in one export at most (the reference API's `page_size` maximum). */
export const MAX_EXPORT_ROWS = 50_000;

export type ExportRecord = StoredExport<ExportColumn>;

/** The export records, their columns typed. */
export class ExportRepository extends ExportStore<ExportColumn> {}

export const exportFileKey = (r: Pick<ExportRecord, 'workspace_id' | 'id'>): string => `exports/${r.workspace_id}/${r.id}/logs.jsonl`;

/** Where an export's parts go: an S3 multipart upload, or separate blobs joined at the end. */
export interface ExportSink {
  /** Smallest part worth writing (S3 needs 5 MiB for every part but the last). */
  readonly minPartBytes: number;
  write(key: string, state: SinkState | null, part: number, bytes: Uint8Array): Promise<SinkState>;
  complete(key: string, state: SinkState | null, parts: number): Promise<void>;
  abort(key: string, state: SinkState | null, parts: number): Promise<void>;
}

export class S3MultipartSink implements ExportSink {
  readonly minPartBytes = 5 * 1024 * 1024;
  readonly #s3: S3BlobStore;
  constructor(s3: S3BlobStore) {
    this.#s3 = s3;
  }

  async write(key: string, state: SinkState | null, part: number, bytes: Uint8Array): Promise<SinkState> {
    const Key = this.#s3.prefix + key;
    let uploadId = state?.uploadId;
    if (!uploadId) {
      const created = await (await this.#s3.client()).send(
        new CreateMultipartUploadCommand({ Bucket: this.#s3.bucket, Key, ContentType: 'application/x-ndjson' }),
      );
      uploadId = created.UploadId as string;
    }
    const out = await (await this.#s3.client()).send(
      new UploadPartCommand({ Bucket: this.#s3.bucket, Key, UploadId: uploadId, PartNumber: part, Body: bytes, ContentLength: bytes.byteLength }),
    );
    const etags = [...(state?.etags ?? [])];
    etags[part - 1] = out.ETag ?? '';
    return { uploadId, etags };
  }

  async complete(key: string, state: SinkState | null, parts: number): Promise<void> {
    if (!state?.uploadId || parts === 0) {
      await this.#s3.put(key, new Uint8Array(0), 'application/x-ndjson');
      return;
    }
    await (await this.#s3.client()).send(
      new CompleteMultipartUploadCommand({
        Bucket: this.#s3.bucket,
        Key: this.#s3.prefix + key,
        UploadId: state.uploadId,
        MultipartUpload: { Parts: state.etags.slice(0, parts).map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    );
  }

  async abort(key: string, state: SinkState | null): Promise<void> {
    if (!state?.uploadId) return;
    await (await this.#s3.client()).send(new AbortMultipartUploadCommand({ Bucket: this.#s3.bucket, Key: this.#s3.prefix + key, UploadId: state.uploadId }));
  }
}

export class BlobPartsSink implements ExportSink {
  readonly minPartBytes: number;
  readonly #blobs: BlobStore;
  constructor(blobs: BlobStore, minPartBytes = 1024 * 1024) {
    this.#blobs = blobs;
    this.minPartBytes = minPartBytes;
  }

  static partKey = (key: string, part: number) => `${key}.part-${String(part).padStart(5, '0')}`;

  async write(key: string, _state: SinkState | null, part: number, bytes: Uint8Array): Promise<SinkState> {
    await this.#blobs.put(BlobPartsSink.partKey(key, part), bytes, 'application/x-ndjson');
    return { etags: [] };
  }

  async complete(key: string, _state: SinkState | null, parts: number): Promise<void> {
    const chunks: Uint8Array[] = [];
    for (let p = 1; p <= parts; p++) chunks.push((await this.#blobs.get(BlobPartsSink.partKey(key, p))) ?? new Uint8Array(0));
    await this.#blobs.put(key, Buffer.concat(chunks), 'application/x-ndjson');
    await this.abort(key, null, parts);
  }

  async abort(key: string, _state: SinkState | null, parts: number): Promise<void> {
    for (let p = 1; p <= parts; p++) await this.#blobs.delete(BlobPartsSink.partKey(key, p));
  }
}

export const sinkFor = (blobs: BlobStore): ExportSink => (blobs instanceof S3BlobStore ? new S3MultipartSink(blobs) : new BlobPartsSink(blobs));

export interface ExportRunnerDeps {
  exports: ExportRepository;
  logs: LogStore;
  blobs: BlobStore;
  sink: ExportSink;
  queue: Queue<ExportQueueMessage>;
  clock: Clock;
  logger: Logger;
  logRetentionDays: number;
  /** How long one message may work before it hands over to the next (default 60 s). */
  sliceMs?: number;
  /** Logs read per page (default 500). */
  pageSize?: number;
}

/** Runs (or resumes) one export for at most one slice of time; queues its continuation. */
export async function runExport(d: ExportRunnerDeps, msg: ExportQueueMessage): Promise<void> {
  const started = d.clock.now();
  const rec = await d.exports.get(msg.organisation_id, msg.export_id);
  if (!rec || rec.run !== msg.run) return;
  const key = exportFileKey(rec);
  if (rec.status === 'stopped') {
    // Cancelled between two slices: the parts written so far are of no use.
    await d.sink.abort(key, rec.sink, rec.parts).catch(() => undefined);
    return;
  }
  if (rec.status !== 'in_progress') return;
  const columns = rec.requested_data;
  const bodies = columns.some((c) => BODY_COLUMNS.has(c));
  const limit = Math.min(Number(rec.filters.page_size ?? MAX_EXPORT_ROWS) || MAX_EXPORT_ROWS, MAX_EXPORT_ROWS);
  const offset = Math.max(0, Math.floor(Number(rec.filters.current_page ?? 0) || 0)) * limit;
  const filters = {
    ...parseFilters(rec.filters, { now: rec.range_to ?? started, retentionDays: d.logRetentionDays }),
    from: rec.range_from ?? 0,
    to: rec.range_to ?? started,
  };
  let state: ExportRecord = { ...rec };
  let buffer: string[] = [];
  let bufferBytes = 0;
  // Progress as of the last part written; what is buffered is read again after a restart.
  let cursor = rec.cursor ?? undefined;
  let exported = rec.exported;
  let skipped = rec.skipped;

  const save = async (next: ExportRecord): Promise<boolean> => {
    const ok = await d.exports.saveIf(next, msg.run, 'in_progress');
    if (ok) state = next;
    return ok;
  };
  const now = () => new Date(d.clock.now()).toISOString();

  try {
    for (;;) {
      const page = await d.logs.page(rec.workspace_id, filters, { limit: d.pageSize ?? 500, cursor, bodies, maxExamined: 5_000 });
      for (const e of page.events) {
        if (skipped < offset) {
          skipped++;
          continue;
        }
        if (exported >= limit) break;
        // Logs written before a redaction rule existed are redacted on their way out too.
        const line = `${JSON.stringify(redact(exportLine(bodies ? await withBodies(e, d.blobs) : e, columns)))}\n`;
        buffer.push(line);
        bufferBytes += Buffer.byteLength(line);
        exported++;
      }
      cursor = page.cursor;
      const done = !cursor || exported >= limit;
      if (bufferBytes >= d.sink.minPartBytes || (done && bufferBytes > 0)) {
        const part = state.parts + 1;
        const sink = await d.sink.write(key, state.sink, part, Buffer.from(buffer.join('')));
        buffer = [];
        bufferBytes = 0;
        const ok = await save({ ...state, parts: part, sink, cursor: cursor ?? null, exported, skipped, last_updated_at: now() });
        if (!ok) {
          // Cancelled or restarted meanwhile: this run stops here.
          await d.sink.abort(key, sink, part).catch(() => undefined);
          return;
        }
      }
      if (done) {
        await d.sink.complete(key, state.sink, state.parts);
        await save({ ...state, status: 'success', file_key: key, total: Math.max(state.total, exported), finished_at: now(), last_updated_at: now() });
        return;
      }
      if (d.clock.now() - started >= (d.sliceMs ?? 60_000) && bufferBytes === 0) {
        await d.queue.send(msg);
        return;
      }
    }
  } catch (err) {
    d.logger.error('log export failed', { exportId: rec.id, error: err });
    await d.sink.abort(key, state.sink, state.parts).catch(() => undefined);
    await save({ ...state, status: 'failed', error: err instanceof Error ? err.message : String(err), finished_at: now(), last_updated_at: now() }).catch(
      () => false,
    );
  }
}

export const newRun = (): string => randomUUID();
