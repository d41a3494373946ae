/** BlobStore over an S3 bucket, every key under an optional prefix. */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
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

export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;

  constructor(opts: S3BlobStoreOptions) {
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ? opts.prefix.replace(/\/*$/, '/') : '';
    this.client =
      opts.client ??
      new S3Client({
        ...(opts.region ? { region: opts.region } : {}),
        ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
        ...(opts.forcePathStyle ? { forcePathStyle: true } : {}),
        ...(opts.credentials ? { credentials: opts.credentials } : {}),
      });
  }

  #key(key: string): string {
    blobKeySegments(key);
    return this.prefix + key;
  }

  async put(key: string, body: Uint8Array, contentType?: string): Promise<void> {
    await this.client.send(
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
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
      return out.Body ? await out.Body.transformToByteArray() : new Uint8Array(0);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#key(key) }));
  }
}
