/**
 * S3BlobStore against a small HTTP server speaking S3's REST wire format (path-style object
 * PUT/GET/DELETE, XML errors). The server checks what the adapter sends, down to the SigV4
 * signature over the request.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { S3BlobStore } from '../../../../layers/core/src/ports/aws/blob-s3.ts';

const BUCKET = 'gantry-test';
const REGION = 'eu-west-1';
const CREDS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test-key' };

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: Buffer;
  signatureValid: boolean;
}

const objects = new Map<string, { body: Buffer; contentType: string }>();
const seen: Seen[] = [];
/** Keys whose GET answers 403 AccessDenied. */
const forbidden = new Set<string>();
let server: Server;
let endpoint: string;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** Recomputes the request's SigV4 signature (S3 flavour: the path is not encoded twice). */
function signatureValid(req: IncomingMessage, url: URL): boolean {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
    req.headers.authorization ?? '',
  );
  if (!auth) return false;
  const [, accessKey, day, region, signedHeaders, signature] = auth as unknown as string[];
  if (accessKey !== CREDS.accessKeyId || region !== REGION) return false;
  const names = (signedHeaders as string).split(';');
  const query = [...url.searchParams]
    .map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(v)])
    .sort(([a], [b]) => (a! < b! ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [
    req.method,
    url.pathname,
    query,
    ...names.map((n) => `${n}:${String(req.headers[n]).trim()}`),
    '',
    signedHeaders,
    req.headers['x-amz-content-sha256'],
  ].join('\n');
  const date = String(req.headers['x-amz-date']);
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonical)].join('\n');
  let key: Buffer = hmac(`AWS4${CREDS.secretAccessKey}`, day as string);
  for (const part of [region as string, 's3', 'aws4_request']) key = hmac(key, part);
  return hmac(key, toSign).toString('hex') === signature;
}

function s3Error(status: number, code: string, message: string, key: string): [number, string] {
  return [
    status,
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><Key>${key}</Key><RequestId>REQ1</RequestId><HostId>HOST1</HostId></Error>`,
  ];
}

/** Multipart uploads in progress: their parts by number. */
const uploads = new Map<string, Map<number, Buffer>>();

/** S3's multipart upload calls (create, part, complete, abort); false for any other request. */
function multipart(method: string, url: URL, key: string, body: Buffer, res: import('node:http').ServerResponse): boolean {
  const uploadId = url.searchParams.get('uploadId');
  if (method === 'POST' && url.searchParams.has('uploads')) {
    const id = `up-${uploads.size + 1}`;
    uploads.set(id, new Map());
    res
      .writeHead(200, { 'content-type': 'application/xml' })
      .end(
        `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>${BUCKET}</Bucket><Key>${key}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
      );
    return true;
  }
  const parts = uploadId ? uploads.get(uploadId) : undefined;
  if (!parts) return false;
  if (method === 'PUT') {
    parts.set(Number(url.searchParams.get('partNumber')), body);
    res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` }).end();
  } else if (method === 'POST') {
    const numbers = [...body.toString('utf8').matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
    objects.set(key, { body: Buffer.concat(numbers.map((n) => parts.get(n) as Buffer)), contentType: 'binary/octet-stream' });
    uploads.delete(uploadId as string);
    res
      .writeHead(200, { 'content-type': 'application/xml' })
      .end(
        `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>${BUCKET}</Bucket><Key>${key}</Key><ETag>"done"</ETag></CompleteMultipartUploadResult>`,
      );
  } else {
    uploads.delete(uploadId as string);
    res.writeHead(204).end();
  }
  return true;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://s3.test');
      const body = Buffer.concat(chunks);
      seen.push({
        method: req.method ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        signatureValid: signatureValid(req, url),
      });
      const prefix = `/${BUCKET}/`;
      if (!url.pathname.startsWith(prefix)) {
        const [status, xml] = s3Error(404, 'NoSuchBucket', 'The specified bucket does not exist', '');
        res.writeHead(status, { 'content-type': 'application/xml' }).end(xml);
        return;
      }
      const key = decodeURIComponent(url.pathname.slice(prefix.length));
      if (multipart(req.method ?? '', url, key, body, res)) return;
      if (req.method === 'PUT') {
        objects.set(key, { body, contentType: req.headers['content-type'] ?? 'binary/octet-stream' });
        res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` }).end();
      } else if (req.method === 'GET') {
        const obj = objects.get(key);
        const [status, xml] = forbidden.has(key)
          ? s3Error(403, 'AccessDenied', 'Access Denied', key)
          : s3Error(404, 'NoSuchKey', 'The specified key does not exist.', key);
        if (!obj || forbidden.has(key)) res.writeHead(status, { 'content-type': 'application/xml' }).end(xml);
        else res.writeHead(200, { 'content-type': obj.contentType, 'content-length': obj.body.length }).end(obj.body);
      } else if (req.method === 'DELETE') {
        objects.delete(key);
        res.writeHead(204).end();
      } else {
        res.writeHead(405).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen.length = 0;
  uploads.clear();
  objects.clear();
  forbidden.clear();
});

const storeWith = (prefix?: string) =>
  new S3BlobStore({ bucket: BUCKET, endpoint, forcePathStyle: true, region: REGION, credentials: CREDS, ...(prefix ? { prefix } : {}) });

describe('S3BlobStore', () => {
  it('PUTs the object at /bucket/prefix/key, signed, with length, type and checksums', async () => {
    const body = new Uint8Array(300).map((_, i) => i % 256);
    await storeWith('gw').put('cache/abc123', body, 'text/event-stream');
    expect(seen).toHaveLength(1);
    const put = seen[0]!;
    expect(put.method).toBe('PUT');
    expect(put.path).toBe(`/${BUCKET}/gw/cache/abc123`);
    expect(put.query.get('x-id')).toBe('PutObject');
    expect(put.body).toEqual(Buffer.from(body));
    expect(put.headers['content-length']).toBe('300');
    expect(put.headers['content-type']).toBe('text/event-stream');
    expect(put.headers['x-amz-content-sha256']).toBe(sha256(Buffer.from(body)));
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    expect(put.headers['x-amz-checksum-crc32']).toBe(crc.toString('base64'));
    expect(put.headers.authorization).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${CREDS.accessKeyId}/\\d{8}/${REGION}/s3/aws4_request, `));
    expect(put.signatureValid).toBe(true);
    expect(objects.get('gw/cache/abc123')?.contentType).toBe('text/event-stream');
  });

  it('GETs the bytes back', async () => {
    const store = storeWith('gw/');
    const body = new Uint8Array([0, 255, 1, 254, 10, 13]);
    await store.put('k/1', body);
    seen.length = 0;
    expect(await store.get('k/1')).toEqual(body);
    expect(seen.map((s) => [s.method, s.path, s.query.get('x-id'), s.signatureValid])).toEqual([['GET', `/${BUCKET}/gw/k/1`, 'GetObject', true]]);
  });

  it('answers undefined for a missing key (404 NoSuchKey)', async () => {
    expect(await storeWith().get('missing')).toBeUndefined();
    expect(seen.map((s) => [s.method, s.path])).toEqual([['GET', `/${BUCKET}/missing`]]);
  });

  it('passes other errors on', async () => {
    const store = storeWith();
    await store.put('secret', new Uint8Array([1]));
    forbidden.add('secret');
    await expect(store.get('secret')).rejects.toMatchObject({ name: 'AccessDenied' });
  });

  it('DELETEs the object', async () => {
    const store = storeWith('p');
    await store.put('gone', new Uint8Array([1]));
    seen.length = 0;
    await store.delete('gone');
    expect(seen.map((s) => [s.method, s.path, s.query.get('x-id'), s.signatureValid])).toEqual([['DELETE', `/${BUCKET}/p/gone`, 'DeleteObject', true]]);
    expect(objects.has('p/gone')).toBe(false);
    expect(await store.get('gone')).toBeUndefined();
  });

  it('refuses keys the local store would refuse, without a request', async () => {
    const store = storeWith();
    await expect(store.put('../x', new Uint8Array([1]))).rejects.toThrow(TypeError);
    await expect(store.get('/abs')).rejects.toThrow(TypeError);
    await expect(store.delete('a//b')).rejects.toThrow(TypeError);
    expect(seen).toEqual([]);
  });

  it('streams a small body as one PUT and reads it back as a stream', async () => {
    const store = storeWith('gw');
    await store.putStream('files/s', chunks(Buffer.from('ab'), Buffer.from('cd')), 'application/octet-stream');
    expect(seen.map((s) => [s.method, s.path, s.query.get('x-id'), s.signatureValid])).toEqual([['PUT', `/${BUCKET}/gw/files/s`, 'PutObject', true]]);
    expect(await readAll(await store.getStream('files/s'))).toEqual(Buffer.from('abcd'));
    expect(await store.getStream('files/none')).toBeUndefined();
  });

  it('streams a body over one part as a multipart upload of 16 MiB parts', async () => {
    const body = randomBytes(33 << 20);
    const pieces = Array.from({ length: 33 }, (_, i) => body.subarray(i << 20, (i + 1) << 20));
    await storeWith().putStream('big', chunks(...pieces));
    expect(seen.map((s) => [s.method, s.query.get('x-id') ?? [...s.query.keys()].join('&'), s.body.length, s.signatureValid])).toEqual([
      ['POST', 'uploads', 0, true],
      ['PUT', 'UploadPart', 16 << 20, true],
      ['PUT', 'UploadPart', 16 << 20, true],
      ['PUT', 'UploadPart', 1 << 20, true],
      ['POST', 'uploadId', expect.any(Number), true],
    ]);
    expect(objects.get('big')?.body.equals(body)).toBe(true);
  });

  it('aborts the multipart upload when the source fails, keeping nothing', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield randomBytes(17 << 20);
      yield randomBytes(17 << 20);
      throw new Error('client went away');
    }
    await expect(storeWith().putStream('broken', failing())).rejects.toThrow('client went away');
    expect(seen.at(-1)).toMatchObject({ method: 'DELETE', signatureValid: true });
    expect(seen.at(-1)?.query.get('x-id')).toBe('AbortMultipartUpload');
    expect(objects.has('broken')).toBe(false);
    expect(uploads.size).toBe(0);
  });
});

async function* chunks(...pieces: Buffer[]): AsyncGenerator<Uint8Array> {
  yield* pieces;
}

async function readAll(stream: AsyncIterable<Buffer> | undefined): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of stream ?? []) out.push(c);
  return Buffer.concat(out);
}
