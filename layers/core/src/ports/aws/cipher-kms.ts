/**
 * Cipher with KMS envelope encryption (AWS). Each encryption asks KMS for a fresh data key under
 * the encryption context, encrypts locally with AES-256-GCM (the context bound as additional data
 * too) and stores the KMS-encrypted data key beside the ciphertext. Decryption asks KMS to decrypt
 * the data key with the same context; plaintext data keys are kept in memory briefly (bounded,
 * short-lived), so a warm credential costs no KMS call.
 */
import type { KMSClient } from '@aws-sdk/client-kms';
import { CipherError, contextBytes, joinParts, open, seal, splitParts, type Cipher, type CipherContext } from '../cipher.ts';

const PREFIX = 'gk1';

export interface KmsCipherOptions {
  /** Key id, ARN or alias of the KMS key. */
  keyId: string;
  /** A shared client; when absent one is built from the options below on first use. */
  client?: KMSClient;
  region?: string;
  /** A KMS-compatible endpoint (tests); absent in AWS. */
  endpoint?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** How long a decrypted data key is reused (default 60 s). */
  cacheTtlMs?: number;
  /** How many decrypted data keys are kept at most (default 256). */
  cacheMaxEntries?: number;
  /** Milliseconds since the epoch (tests move it). */
  now?: () => number;
}

interface CachedKey {
  key: Buffer;
  at: number;
}

const isKmsRefusal = (err: unknown): boolean =>
  err instanceof Error && ['InvalidCiphertextException', 'IncorrectKeyException', 'AccessDeniedException'].includes(err.name);

export class KmsCipher implements Cipher {
  readonly #opts: KmsCipherOptions;
  readonly #ttl: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #keys = new Map<string, CachedKey>();
  #client: Promise<KMSClient> | undefined;
  #sdk: Promise<typeof import('@aws-sdk/client-kms')> | undefined;

  constructor(opts: KmsCipherOptions) {
    this.#opts = opts;
    this.#ttl = opts.cacheTtlMs ?? 60_000;
    this.#max = opts.cacheMaxEntries ?? 256;
    this.#now = opts.now ?? Date.now;
  }

  // The SDK is loaded on first use: requests that touch no credential never pay for it.
  #loadSdk() {
    this.#sdk ??= import('@aws-sdk/client-kms');
    return this.#sdk;
  }

  #getClient(): Promise<KMSClient> {
    const o = this.#opts;
    if (o.client) return Promise.resolve(o.client);
    this.#client ??= this.#loadSdk().then(
      ({ KMSClient: Client }) =>
        new Client({
          ...(o.region ? { region: o.region } : {}),
          ...(o.endpoint ? { endpoint: o.endpoint } : {}),
          ...(o.credentials ? { credentials: o.credentials } : {}),
        }),
    );
    return this.#client;
  }

  async encrypt(plaintext: string, context: CipherContext): Promise<string> {
    const [client, { GenerateDataKeyCommand }] = await Promise.all([this.#getClient(), this.#loadSdk()]);
    const out = await client.send(new GenerateDataKeyCommand({ KeyId: this.#opts.keyId, KeySpec: 'AES_256', EncryptionContext: { ...context } }));
    if (!out.Plaintext || !out.CiphertextBlob) throw new CipherError('KMS returned no data key');
    const key = Buffer.from(out.Plaintext);
    try {
      const box = seal(key, plaintext, context);
      return joinParts(PREFIX, [Buffer.from(out.CiphertextBlob), box.iv, box.tag, box.data]);
    } finally {
      key.fill(0);
      out.Plaintext.fill(0);
    }
  }

  async decrypt(ciphertext: string, context: CipherContext): Promise<string> {
    const [encryptedKey, iv, tag, data] = splitParts(ciphertext, PREFIX, 4) as [Buffer, Buffer, Buffer, Buffer];
    const key = await this.#dataKey(encryptedKey, context);
    try {
      return open(key, { iv, tag, data }, context);
    } finally {
      key.fill(0);
    }
  }

  /** A copy of the data key, for the caller to wipe (the cached one may be wiped on expiry meanwhile). */
  async #dataKey(encryptedKey: Buffer, context: CipherContext): Promise<Buffer> {
    // The context is part of the cache key: a hit must never skip the check KMS would make.
    const id = `${encryptedKey.toString('base64')}|${contextBytes(context).toString('base64')}`;
    const now = this.#now();
    const hit = this.#keys.get(id);
    if (hit && now - hit.at < this.#ttl) return Buffer.from(hit.key);
    if (hit) this.#drop(id, hit);

    const [client, { DecryptCommand }] = await Promise.all([this.#getClient(), this.#loadSdk()]);
    let plaintext: Uint8Array | undefined;
    try {
      const out = await client.send(new DecryptCommand({ KeyId: this.#opts.keyId, CiphertextBlob: encryptedKey, EncryptionContext: { ...context } }));
      plaintext = out.Plaintext;
    } catch (err) {
      if (isKmsRefusal(err)) throw new CipherError(`KMS refused to decrypt the data key (${(err as Error).name})`);
      throw err;
    }
    if (!plaintext || plaintext.length !== 32) throw new CipherError('KMS returned no 256-bit data key');
    const key = Buffer.from(plaintext);
    plaintext.fill(0);
    this.#sweep(now);
    if (this.#keys.size >= this.#max) {
      const oldest = this.#keys.entries().next();
      if (!oldest.done) this.#drop(oldest.value[0], oldest.value[1]);
    }
    this.#keys.set(id, { key, at: now });
    return Buffer.from(key);
  }

  /** Removes expired keys, so plaintext keys do not outlive their TTL in memory. */
  #sweep(now: number): void {
    for (const [id, entry] of this.#keys) if (now - entry.at >= this.#ttl) this.#drop(id, entry);
  }

  #drop(id: string, entry: CachedKey): void {
    entry.key.fill(0);
    this.#keys.delete(id);
  }

  /** Number of decrypted data keys held (tests). */
  get cachedKeys(): number {
    return this.#keys.size;
  }
}
