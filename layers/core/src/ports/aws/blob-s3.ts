/**
 * BlobStore over an S3 bucket, every key under an optional prefix. The S3 client (about 130 KB of
 * bundled SDK) loads on the first blob access: most gateway requests never touch a blob, so it
 * stays out of the gateway's cold start.
 */
import type { CompletedPart, S3Client } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { blobKeySegments, type BlobStore } from '../blob.ts';

export interface S3BlobStoreOptions {
  bucket: string;
  /** Prepended to every key; a trailing `/` is added when missing. */
  prefix?: string;
  /** A shared client; when absent one is built from the options below. */
  client?: S3Client;
  region?: string;
  /** An S3-compatible endpoint (tests, MinIO); absent in AWS. */
  endpoint?: string;
  /** `endpoint/bucket/key` instead of `bucket.endpoint/key` (needed for most non-AWS endpoints). */
  forcePathStyle?: boolean;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

const isNotFound = (err: unknown): boolean => {
  if (!(err instanceof Error)) return false;
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return err.name === 'NoSuchKey' || err.name === 'NotFound' || status === 404;
};

let sdk: Promise<typeof import('@aws-sdk/client-s3')> | undefined;
const loadSdk = () => (sdk ??= import('@aws-sdk/client-s3'));

export class S3BlobStore implements BlobStore {
  readonly bucket: string;
  readonly prefix: string;
  readonly #opts: S3BlobStoreOptions;
  #client: Promise<S3Client> | undefined;

  constructor(opts: S3BlobStoreOptions) {
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ? opts.prefix.replace(/\/*$/, '/') : '';
    this.#opts = opts;
    if (opts.client) this.#client = Promise.resolve(opts.client);
  }

  /** The S3 client, built on first use (multipart exports and download links use it too). */
  client(): Promise<S3Client> {
    const o = this.#opts;
    this.#client ??= loadSdk().then(
      ({ S3Client }) =>
        new S3Client({
          ...(o.region ? { region: o.region } : {}),
          ...(o.endpoint ? { endpoint: o.endpoint } : {}),
          ...(o.forcePathStyle ? { forcePathStyle: true } : {}),
          ...(o.credentials ? { credentials: o.credentials } : {}),
        }),
    );
    return this.#client;
  }

  #key(key: string): string {
    blobKeySegments(key);
    return this.prefix + key;
  }

  async put(key: string, body: Uint8Array, contentType?: string): Promise<void> {
    const [client, { PutObjectCommand }] = await Promise.all([this.client(), loadSdk()]);
    await client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.#key(key),
        Body: body,
        ContentLength: body.byteLength,
        ...(contentType ? { ContentType: contentType } : {}),
      }),
    );
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const [client, { GetObjectCommand }] = await Promise.all([this.client(), loadSdk()]);
    try {
      const out = await client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array(0);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const [client, { DeleteObjectCommand }] = await Promise.all([this.client(), loadSdk()]);
    await client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
  }

  /**
   * Bodies up to one part are a single PutObject; larger ones a multipart upload of 16 MiB parts
   * sent one at a time, so at most a part is held. A failed upload is aborted (S3 keeps nothing).
   */
  async putStream(key: string, body: AsyncIterable<Uint8Array>, contentType?: string): Promise<void> {
    const parts = chunksOf(body, PART_BYTES);
    const first = await parts.next();
    const second = first.done ? first : await parts.next();
    if (second.done) return this.put(key, first.done ? new Uint8Array(0) : first.value, contentType);
    const [client, sdk] = await Promise.all([this.client(), loadSdk()]);
    const target = { Bucket: this.bucket, Key: this.#key(key) };
    const { UploadId } = await client.send(new sdk.CreateMultipartUploadCommand({ ...target, ...(contentType ? { ContentType: contentType } : {}) }));
    const done: CompletedPart[] = [];
    try {
      const upload = async (bytes: Uint8Array) => {
        const PartNumber = done.length + 1;
        const out = await client.send(new sdk.UploadPartCommand({ ...target, UploadId, PartNumber, Body: bytes, ContentLength: bytes.byteLength }));
        done.push({ PartNumber, ETag: out.ETag });
      };
      await upload(first.value as Uint8Array);
      await upload(second.value);
      for await (const part of { [Symbol.asyncIterator]: () => parts }) await upload(part);
      await client.send(new sdk.CompleteMultipartUploadCommand({ ...target, UploadId, MultipartUpload: { Parts: done } }));
    } catch (err) {
      await client.send(new sdk.AbortMultipartUploadCommand({ ...target, UploadId })).catch(() => undefined);
      throw err;
    }
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const [client, { GetObjectCommand }] = await Promise.all([this.client(), loadSdk()]);
    try {
      const out = await client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
      // In Node the SDK's body is the HTTP response stream itself.
      return out.Body ? (out.Body as Readable) : Readable.from([]);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/**
 * Larger than API Gateway's 10 MB payload limit, so an upload through it is one PutObject (no
 * multipart upload left half done by a failing Lambda); a 200 MB file is 13 parts.
 */
const PART_BYTES = 16 << 20;

/** The source regrouped into pieces of exactly `size` bytes (the last one shorter). */
async function* chunksOf(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let held: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of source) {
    held.push(chunk);
    length += chunk.byteLength;
    while (length >= size) {
      const all = Buffer.concat(held, length);
      yield all.subarray(0, size);
      held = length > size ? [all.subarray(size)] : [];
      length -= size;
    }
  }
  if (length > 0) yield Buffer.concat(held, length);
}
