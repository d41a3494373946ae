/**
 * The local cipher: AES-256-GCM under a key file created with mode 0600 on first use. Ciphertexts
 * are bound to their context, so one copied to another record does not decrypt; the key persists
 * across instances and processes; the configuration picks the file from GW_DATA_DIR.
 */
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../layers/core/src/config.ts';
import { CipherError } from '../../../../layers/core/src/ports/cipher.ts';
import { FileCipher } from '../../../../layers/core/src/ports/local/cipher-file.ts';

const CTX = { organisation_id: 'org-1', integration_id: 'int-1' };
const SECRET = 'sk-live-0123456789abcdefghijklmnopqrstuvwxyz';

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gantry-cipher-test-'));
});

describe('FileCipher', () => {
  it('round-trips under the same context, with a fresh IV every time', async () => {
    const cipher = new FileCipher({ keyFile: path.join(dir, 'cipher.key') });
    const a = await cipher.encrypt(SECRET, CTX);
    const b = await cipher.encrypt(SECRET, CTX);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^gl1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(a).not.toContain(SECRET);
    expect(await cipher.decrypt(a, CTX)).toBe(SECRET);
    expect(await cipher.decrypt(b, { integration_id: 'int-1', organisation_id: 'org-1' })).toBe(SECRET);
  });

  it('creates the key file on first use, 32 random bytes, mode 0600, its directory included', async () => {
    const file = path.join(dir, 'nested', 'deeper', 'cipher.key');
    const cipher = new FileCipher({ keyFile: file });
    await cipher.encrypt('x', CTX);
    const info = await stat(file);
    expect(info.mode & 0o777).toBe(0o600);
    expect(Buffer.from((await readFile(file, 'utf8')).trim(), 'base64')).toHaveLength(32);
    expect(await cipher.keyFile()).toBe(file);
  });

  it('refuses a ciphertext moved to another context (another record or organisation)', async () => {
    const cipher = new FileCipher({ keyFile: path.join(dir, 'cipher.key') });
    const sealed = await cipher.encrypt(SECRET, CTX);
    const others: Record<string, string>[] = [
      { organisation_id: 'org-1', integration_id: 'int-2' },
      { organisation_id: 'org-2', integration_id: 'int-1' },
      { organisation_id: 'org-1' },
      { ...CTX, extra: 'x' },
    ];
    for (const other of others) {
      const err = await rejection(cipher.decrypt(sealed, other));
      expect(err).toBeInstanceOf(CipherError);
      expect((err as Error).message).not.toContain(SECRET);
    }
  });

  it('refuses tampered and malformed ciphertexts', async () => {
    const cipher = new FileCipher({ keyFile: path.join(dir, 'cipher.key') });
    const sealed = await cipher.encrypt(SECRET, CTX);
    const parts = sealed.split('.');
    const data = Buffer.from(parts[3] as string, 'base64url');
    data[0] = (data[0] as number) ^ 1;
    const tampered = [...parts.slice(0, 3), data.toString('base64url')].join('.');
    for (const bad of [tampered, 'gl1.abc', 'gk1.a.b.c.d', 'plain text', `${sealed}.x`, parts.slice(0, 3).join('.') + '.!!']) {
      expect(await rejection(cipher.decrypt(bad, CTX))).toBeInstanceOf(CipherError);
    }
  });

  it('keeps the key: another instance on the same file decrypts, one on another file does not', async () => {
    const file = path.join(dir, 'cipher.key');
    const sealed = await new FileCipher({ keyFile: file }).encrypt(SECRET, CTX);
    expect(await new FileCipher({ keyFile: file }).decrypt(sealed, CTX)).toBe(SECRET);
    const stranger = new FileCipher({ keyFile: path.join(dir, 'other.key') });
    expect(await rejection(stranger.decrypt(sealed, CTX))).toBeInstanceOf(CipherError);
  });

  it('agrees on one key when two instances create the file at once', async () => {
    const file = path.join(dir, 'race.key');
    const [a, b] = [new FileCipher({ keyFile: file }), new FileCipher({ keyFile: file })];
    const [sa, sb] = await Promise.all([a.encrypt('from a', CTX), b.encrypt('from b', CTX)]);
    const reader = new FileCipher({ keyFile: file });
    expect(await reader.decrypt(sa, CTX)).toBe('from a');
    expect(await reader.decrypt(sb, CTX)).toBe('from b');
  });

  it('uses a temporary key file, mode 0600, when none is named (in-memory data)', async () => {
    const cipher = new FileCipher();
    const sealed = await cipher.encrypt(SECRET, CTX);
    const file = await cipher.keyFile();
    expect(file.startsWith(os.tmpdir())).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await cipher.decrypt(sealed, CTX)).toBe(SECRET);
  });

  it('fails naming the file when it does not hold a 32-byte key', async () => {
    const file = path.join(dir, 'bad.key');
    await writeFile(file, 'not a key\n');
    const err = await rejection(new FileCipher({ keyFile: file }).encrypt('x', CTX));
    expect(err).toBeInstanceOf(CipherError);
    expect((err as Error).message).toContain(file);
  });
});

describe('cipher configuration', () => {
  const base = { TABLE_NAME: 't' };
  it('keeps the key in GW_DATA_DIR unless GW_CIPHER_KEY_FILE names one; in-memory data gets a temporary one', () => {
    expect(loadConfig({ ...base, GW_DATA_DIR: '.data' }).cipherKeyFile).toBe('.data/cipher.key');
    expect(loadConfig({ ...base, GW_DATA_DIR: '/var/gantry/' }).cipherKeyFile).toBe('/var/gantry/cipher.key');
    expect(loadConfig({ ...base, GW_DATA_DIR: '.data', GW_CIPHER_KEY_FILE: '/secrets/k' }).cipherKeyFile).toBe('/secrets/k');
    expect(loadConfig({ ...base, GW_DATA_DIR: ':memory:' }).cipherKeyFile).toBeUndefined();
    expect(loadConfig(base).cipherKeyFile).toBeUndefined();
  });

  it('reads the KMS key id', () => {
    expect(loadConfig({ ...base, CIPHER_KMS_KEY_ID: 'arn:aws:kms:eu-west-1:123456789012:key/abc' }).cipherKmsKeyId).toBe(
      'arn:aws:kms:eu-west-1:123456789012:key/abc',
    );
    expect(loadConfig({ ...base, CIPHER_KMS_KEY_ID: '' }).cipherKmsKeyId).toBeUndefined();
  });
});
