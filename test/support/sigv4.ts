/**
 * Checks an AWS request's SigV4 signature the way the service would (header signing, body hashed),
 * so mock AWS servers in tests refuse anything an SDK would not really send.
 */
import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export interface SigV4Expectation {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** The signing name (`sqs`, `ses`, ...). */
  service: string;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** Whether `req` (with its full `body`) carries a valid signature for these credentials. */
export function sigV4Valid(req: IncomingMessage, body: Buffer, want: SigV4Expectation): boolean {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
    req.headers.authorization ?? '',
  );
  if (!auth) return false;
  const [, accessKey, day, region, service, signedHeaders, signature] = auth as unknown as string[];
  if (accessKey !== want.accessKeyId || region !== want.region || service !== want.service) return false;
  const url = new URL(req.url ?? '/', 'http://aws.test');
  const query = [...url.searchParams]
    .map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(v)])
    .sort(([a], [b]) => (a! < b! ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [
    req.method,
    url.pathname,
    query,
    ...(signedHeaders as string).split(';').map((n) => `${n}:${String(req.headers[n]).trim()}`),
    '',
    signedHeaders,
    sha256(body),
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date']), scope, sha256(canonical)].join('\n');
  let key: Buffer = hmac(`AWS4${want.secretAccessKey}`, day as string);
  for (const part of [region as string, service as string, 'aws4_request']) key = hmac(key, part);
  return hmac(key, toSign).toString('hex') === signature;
}
