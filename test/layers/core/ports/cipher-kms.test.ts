/**
 * KmsCipher against a small HTTP server speaking KMS's JSON protocol (awsJson1_1: POST /,
 * `X-Amz-Target: TrentService.<Operation>`, base64 blobs). The server wraps data keys under its own
 * master key with the encryption context as additional data, as KMS does, and records every
 * request, so the tests check exactly what the adapter asks for and when it asks.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KmsCipher } from '../../../../layers/core/src/ports/aws/cipher-kms.ts';
import { CipherError } from '../../../../layers/core/src/ports/cipher.ts';

const KEY_ID = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const REGION = 'eu-west-1';
const CREDS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test-key' };
const CTX = { organisation_id: 'org-1', integration_id: 'int-1' };
const SECRET = 'sk-live-0123456789abcdefghijklmnopqrstuvwxyz';

interface Seen {
  target: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

const master = randomBytes(32);
const seen: Seen[] = [];
/** Plaintext data keys handed out, by their base64 encrypted form. */
const issued = new Map<string, Buffer>();
let denyDecrypt = false;
let server: Server;
let endpoint: string;

const aad = (ctx: unknown) => Buffer.from(JSON.stringify(Object.entries((ctx ?? {}) as Record<string, string>).sort()));

function wrap(dataKey: Buffer, ctx: unknown): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', master, iv);
  c.setAAD(aad(ctx));
  const body = Buffer.concat([c.update(dataKey), c.final()]);
  return Buffer.concat([Buffer.from('KMS1'), iv, c.getAuthTag(), body]);
}

function unwrap(blob: Buffer, ctx: unknown): Buffer | undefined {
  if (blob.subarray(0, 4).toString() !== 'KMS1') return undefined;
  try {
    const d = createDecipheriv('aes-256-gcm', master, blob.subarray(4, 16));
    d.setAAD(aad(ctx));
    d.setAuthTag(blob.subarray(16, 32));
    return Buffer.concat([d.update(blob.subarray(32)), d.final()]);
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      seen.push({ target, headers: req.headers, body });
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(json));
      };
      if (req.method !== 'POST' || req.url !== '/') return answer(400, { __type: 'UnknownOperationException' });
      if (target === 'TrentService.GenerateDataKey') {
        const dataKey = randomBytes(32);
        const blob = wrap(dataKey, body.EncryptionContext);
        issued.set(blob.toString('base64'), dataKey);
        return answer(200, { KeyId: KEY_ID, CiphertextBlob: blob.toString('base64'), Plaintext: dataKey.toString('base64') });
      }
      if (target === 'TrentService.Decrypt') {
        if (denyDecrypt) return answer(400, { __type: 'AccessDeniedException', message: 'denied' });
        const key = unwrap(Buffer.from(String(body.CiphertextBlob), 'base64'), body.EncryptionContext);
        if (!key || body.KeyId !== KEY_ID) return answer(400, { __type: 'InvalidCiphertextException', message: 'bad' });
        return answer(200, { KeyId: KEY_ID, Plaintext: key.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' });
      }
      return answer(400, { __type: 'UnknownOperationException' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

beforeEach(() => {
  seen.length = 0;
  denyDecrypt = false;
});

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

function cipher(opts: { now?: () => number; cacheTtlMs?: number; cacheMaxEntries?: number } = {}): KmsCipher {
  return new KmsCipher({ keyId: KEY_ID, region: REGION, endpoint, credentials: CREDS, ...opts });
}

const targets = () => seen.map((s) => s.target.replace('TrentService.', ''));

describe('KmsCipher', () => {
  it('asks KMS for a fresh AES-256 data key under the context for every encryption', async () => {
    const c = cipher();
    const a = await c.encrypt(SECRET, CTX);
    const b = await c.encrypt(SECRET, CTX);
    expect(targets()).toEqual(['GenerateDataKey', 'GenerateDataKey']);
    for (const s of seen) {
      expect(s.body).toEqual({ KeyId: KEY_ID, KeySpec: 'AES_256', EncryptionContext: CTX });
      expect(s.headers['content-type']).toBe('application/x-amz-json-1.1');
      expect(s.headers.authorization).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${CREDS.accessKeyId}/\\d{8}/${REGION}/kms/aws4_request`));
    }
    expect(a).not.toBe(b);
    expect(a).toMatch(/^gk1(\.[A-Za-z0-9_-]+){4}$/);
  });

  it('stores the encrypted data key beside the ciphertext, never the plaintext key or secret', async () => {
    const sealed = await cipher().encrypt(SECRET, CTX);
    const edk = Buffer.from(sealed.split('.')[1] as string, 'base64url');
    const dataKey = issued.get(edk.toString('base64'));
    expect(dataKey).toBeDefined();
    expect(sealed).not.toContain(SECRET);
    expect(sealed).not.toContain((dataKey as Buffer).toString('base64url'));
  });

  it('decrypts through KMS Decrypt with the key id, the encrypted data key and the context', async () => {
    const sealed = await cipher().encrypt(SECRET, CTX);
    seen.length = 0;
    expect(await cipher().decrypt(sealed, CTX)).toBe(SECRET);
    expect(targets()).toEqual(['Decrypt']);
    expect(seen[0]?.body).toEqual({
      KeyId: KEY_ID,
      CiphertextBlob: Buffer.from(sealed.split('.')[1] as string, 'base64url').toString('base64'),
      EncryptionContext: CTX,
    });
  });

  it('keeps decrypted data keys briefly: warm decryptions make no KMS call until the TTL passes', async () => {
    let now = 1_000_000;
    const c = cipher({ now: () => now, cacheTtlMs: 60_000 });
    const sealed = await c.encrypt(SECRET, CTX);
    seen.length = 0;
    for (let i = 0; i < 3; i++) expect(await c.decrypt(sealed, CTX)).toBe(SECRET);
    expect(targets()).toEqual(['Decrypt']);
    now += 59_999;
    await c.decrypt(sealed, CTX);
    expect(targets()).toEqual(['Decrypt']);
    now += 1;
    await c.decrypt(sealed, CTX);
    expect(targets()).toEqual(['Decrypt', 'Decrypt']);
  });

  it('bounds the data key cache and drops expired keys', async () => {
    let now = 0;
    const c = cipher({ now: () => now, cacheMaxEntries: 2, cacheTtlMs: 1_000 });
    const sealed = await Promise.all([c.encrypt('a', CTX), c.encrypt('b', CTX), c.encrypt('c', CTX)]);
    for (const s of sealed) await c.decrypt(s, CTX);
    expect(c.cachedKeys).toBe(2);
    seen.length = 0;
    await c.decrypt(sealed[0] as string, CTX); // evicted first
    await c.decrypt(sealed[2] as string, CTX); // still cached
    expect(targets()).toEqual(['Decrypt']);
    now += 1_000;
    await c.decrypt(sealed[1] as string, CTX);
    expect(c.cachedKeys).toBe(1);
  });

  it('refuses a ciphertext under another context, even when its data key is cached', async () => {
    const c = cipher();
    const sealed = await c.encrypt(SECRET, CTX);
    await c.decrypt(sealed, CTX);
    seen.length = 0;
    const err = await rejection(c.decrypt(sealed, { organisation_id: 'org-1', integration_id: 'int-2' }));
    expect(err).toBeInstanceOf(CipherError);
    expect((err as Error).message).toContain('InvalidCiphertextException');
    expect(seen.map((s) => s.body.EncryptionContext)).toEqual([{ organisation_id: 'org-1', integration_id: 'int-2' }]);
  });

  it('refuses tampered data and reports KMS refusals as CipherError', async () => {
    const c = cipher();
    const sealed = await c.encrypt(SECRET, CTX);
    const parts = sealed.split('.');
    const data = Buffer.from(parts[4] as string, 'base64url');
    data[0] = (data[0] as number) ^ 1;
    expect(await rejection(c.decrypt([...parts.slice(0, 4), data.toString('base64url')].join('.'), CTX))).toBeInstanceOf(CipherError);
    expect(await rejection(c.decrypt('gl1.a.b.c', CTX))).toBeInstanceOf(CipherError);
    denyDecrypt = true;
    const err = await rejection(cipher().decrypt(sealed, CTX));
    expect(err).toBeInstanceOf(CipherError);
    expect((err as Error).message).toContain('AccessDeniedException');
  });
});
