/** BlobStore over a local directory (local runtime): one file per key. */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { blobKeySegments, type BlobStore } from '../blob.ts';

const isMissing = (err: unknown): boolean => {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // ENOTDIR: a key whose parent is a file (e.g. `a/b` when `a` is stored) holds nothing.
  return code === 'ENOENT' || code === 'ENOTDIR';
};

export class FsBlobStore implements BlobStore {
  readonly root: string;
  constructor(rootDir: string) {
    this.root = resolve(rootDir);
  }

  /** The file of a key; keys that could leave the root never get this far. */
  #path(key: string): string {
    const path = join(this.root, ...blobKeySegments(key));
    // Defence in depth: the key check already rules out `..` and absolute paths.
    if (!path.startsWith(this.root + sep)) throw new TypeError(`Invalid blob key ${JSON.stringify(key)}`);
    return path;
  }

  /** The content type is not kept: `get` returns bytes only, and callers know what they stored. */
  async put(key: string, body: Uint8Array, _contentType?: string): Promise<void> {
    await this.#write(key, (tmp) => writeFile(tmp, body));
  }

  async putStream(key: string, body: AsyncIterable<Uint8Array>, _contentType?: string): Promise<void> {
    await this.#write(key, (tmp) => pipeline(body, createWriteStream(tmp)));
  }

  /**
   * Writes a temp file and renames it onto the key's path, so a reader never sees half a body.
   * Temp files live under `.tmp` in the root (same file system, so rename is atomic), a name no
   * key can take since segments may not start with a dot.
   */
  async #write(key: string, write: (tmp: string) => Promise<void>): Promise<void> {
    const path = this.#path(key);
    const tmpDir = join(this.root, '.tmp');
    const tmp = join(tmpDir, randomUUID());
    await Promise.all([mkdir(dirname(path), { recursive: true }), mkdir(tmpDir, { recursive: true })]);
    try {
      await write(tmp);
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const path = this.#path(key);
    try {
      // Opened first, so a missing key is known before an answer starts.
      return (await open(path, 'r')).createReadStream();
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const path = this.#path(key);
    try {
      const buf = await readFile(path);
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
  }
}
