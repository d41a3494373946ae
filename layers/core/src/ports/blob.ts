/**
 * Blob storage for bodies too large for a table item (cached responses, files, batch data):
 * S3 in AWS, a directory on disk locally.
 */
import type { Readable } from 'node:stream';

export interface BlobStore {
  put(key: string, body: Uint8Array, contentType?: string): Promise<void>;
  /** The stored bytes, or undefined when nothing is stored under the key. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** Deleting a key that holds nothing is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Stores a body of unknown length as it arrives, never holding it whole (uploaded files). When
   * the source throws, nothing is stored under the key and the error passes on.
   */
  putStream(key: string, body: AsyncIterable<Uint8Array>, contentType?: string): Promise<void>;
  /** The stored bytes as a stream, or undefined when nothing is stored under the key. */
  getStream(key: string): Promise<Readable | undefined>;
}

/** Segments: letters, digits and `._@=+-`, not starting with a dot (so no `.`, `..` or hidden files). */
const SEGMENT = /^[A-Za-z0-9_@=+-][A-Za-z0-9._@=+-]*$/;
const MAX_KEY_LENGTH = 1024;

/**
 * Checks a key once for every adapter, so a key that works in S3 also works on disk: relative,
 * `/`-separated, each segment from a small alphabet. Throws a TypeError naming the key otherwise.
 */
export function blobKeySegments(key: string): string[] {
  const segments = key.split('/');
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !segments.every((s) => SEGMENT.test(s))) {
    throw new TypeError(`Invalid blob key ${JSON.stringify(key)}`);
  }
  return segments;
}
