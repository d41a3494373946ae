/**
 * Cipher with a local key (local runtime): AES-256-GCM under a 32-byte key kept in a file, created
 * with mode 0600 on first use. Without a file name (an in-memory data directory) the key lives in a
 * fresh temporary directory, so it lasts as long as the data it protects.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CipherError, joinParts, open, seal, splitParts, type Cipher, type CipherContext } from '../cipher.ts';

const PREFIX = 'gl1';
const KEY_BYTES = 32;

export interface FileCipherOptions {
  /** Where the key is kept; absent: a temporary file. */
  keyFile?: string | undefined;
}

async function readKey(file: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new CipherError(`The cipher key file ${file} does not hold a ${KEY_BYTES}-byte base64 key`);
  return key;
}

async function loadOrCreateKey(file: string): Promise<Buffer> {
  const existing = await readKey(file);
  if (existing) return existing;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = randomBytes(KEY_BYTES);
  try {
    // `wx`: never overwrite a key another process wrote meanwhile; that one wins.
    await writeFile(file, `${key.toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const theirs = await readKey(file);
    if (!theirs) throw err;
    return theirs;
  }
}

export class FileCipher implements Cipher {
  readonly #keyFile: string | undefined;
  #resolvedFile: string | undefined;
  #key: Promise<Buffer> | undefined;

  constructor(opts: FileCipherOptions = {}) {
    this.#keyFile = opts.keyFile;
  }

  /** The key file in use (after first use when it is a temporary one). */
  async keyFile(): Promise<string> {
    await this.#getKey();
    return this.#resolvedFile as string;
  }

  #getKey(): Promise<Buffer> {
    this.#key ??= (async () => {
      const file = this.#keyFile ?? path.join(await mkdtemp(path.join(os.tmpdir(), 'gantry-cipher-')), 'cipher.key');
      this.#resolvedFile = file;
      return loadOrCreateKey(file);
    })().catch((err: unknown) => {
      // A failed load (permissions, say) is retried by the next call rather than cached.
      this.#key = undefined;
      throw err;
    });
    return this.#key;
  }

  async encrypt(plaintext: string, context: CipherContext): Promise<string> {
    const box = seal(await this.#getKey(), plaintext, context);
    return joinParts(PREFIX, [box.iv, box.tag, box.data]);
  }

  async decrypt(ciphertext: string, context: CipherContext): Promise<string> {
    const [iv, tag, data] = splitParts(ciphertext, PREFIX, 3) as [Buffer, Buffer, Buffer];
    return open(await this.#getKey(), { iv, tag, data }, context);
  }
}
