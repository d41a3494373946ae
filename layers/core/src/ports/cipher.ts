/**
 * Encryption of secrets kept in the table (provider credentials): KMS envelope encryption in AWS,
 * a local key file on one machine. The context (e.g. `{organisation_id, integration_id}`) is bound
 * to the ciphertext as additional authenticated data, so a ciphertext copied onto another record
 * does not decrypt there.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export type CipherContext = Readonly<Record<string, string>>;

export interface Cipher {
  encrypt(plaintext: string, context: CipherContext): Promise<string>;
  /** Throws CipherError when the ciphertext was altered, or belongs to another context or key. */
  decrypt(ciphertext: string, context: CipherContext): Promise<string>;
}

/** A ciphertext that cannot be decrypted. The message never contains secret material. */
export class CipherError extends Error {
  override name = 'CipherError';
}

/** The context in one canonical form (keys sorted), used as AES-GCM additional data. */
export function contextBytes(context: CipherContext): Buffer {
  const sorted = Object.keys(context)
    .sort()
    .map((k) => [k, context[k]]);
  return Buffer.from(JSON.stringify(sorted), 'utf8');
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SealedBox {
  iv: Buffer;
  tag: Buffer;
  data: Buffer;
}

/** AES-256-GCM with a fresh random IV; the context is authenticated, not encrypted. */
export function seal(key: Buffer, plaintext: string, context: CipherContext): SealedBox {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(contextBytes(context));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), data };
}

export function open(key: Buffer, box: SealedBox, context: CipherContext): string {
  if (box.iv.length !== IV_BYTES || box.tag.length !== TAG_BYTES) throw new CipherError('Malformed ciphertext');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, box.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(contextBytes(context));
    decipher.setAuthTag(box.tag);
    return Buffer.concat([decipher.update(box.data), decipher.final()]).toString('utf8');
  } catch {
    throw new CipherError('The ciphertext does not decrypt with this key and context');
  }
}

const b64 = (b: Buffer): string => b.toString('base64url');

/** `prefix.part.part...`, every part base64url. */
export function joinParts(prefix: string, parts: readonly Buffer[]): string {
  return [prefix, ...parts.map(b64)].join('.');
}

/** The parts of a ciphertext written by joinParts, or a CipherError when it is not one. */
export function splitParts(ciphertext: string, prefix: string, count: number): Buffer[] {
  const parts = ciphertext.split('.');
  if (parts[0] !== prefix || parts.length !== count + 1 || parts.slice(1).some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) {
    throw new CipherError(`Not a ${prefix} ciphertext`);
  }
  return parts.slice(1).map((p) => Buffer.from(p, 'base64url'));
}

/** A cipher that refuses every use, naming what to configure (no key source was given). */
export function unconfiguredCipher(reason: string): Cipher {
  const refuse = () => Promise.reject(new CipherError(reason));
  return { encrypt: refuse, decrypt: refuse };
}
