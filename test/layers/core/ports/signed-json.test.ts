/**
 * The lean signed client against real HTTP servers: one speaking DynamoDB's JSON protocol that
 * checks every request down to its SigV4 signature (test/support/sigv4.ts) and fails as told
 * (500s, throttling, hanging), and the SQS stand-in a deployed function's tests use.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { isDependencyUnavailable } from '../../../../layers/core/src/http/errors.ts';
import { SqsClientRef, SqsQueue } from '../../../../layers/core/src/ports/aws/sqs-queue.ts';
import {
  awsJsonEndpoint,
  DYNAMODB_JSON,
  SignedJsonClient,
  awsSigner,
  signRequest,
  SQS_JSON,
  type SignedJsonOptions,
} from '../../../../layers/core/src/ports/aws/signed-json.ts';
import { startStandIns, type StandIns } from '../../../support/aws-stand-ins.ts';
import { sigV4Valid } from '../../../support/sigv4.ts';

const REGION = 'eu-west-1';
const CREDS = { accessKeyId: 'AKIDSIGNED', secretAccessKey: 'signed-secret-key-do-not-log' };

interface Seen {
  /** The client's port: the same one for calls on a kept-alive connection. */
  port: number | undefined;
  headers: IncomingMessage['headers'];
  body: unknown;
  signatureValid: boolean;
}
/** What the server does with one request: answer (status, JSON), or never answer. */
type Plan = { status: number; json: unknown } | 'hang';

const seen: Seen[] = [];
/** One plan per request, used in order; then 200 with `{ok: true}`. */
const plans: Plan[] = [];
let server: Server;
let endpoint: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      seen.push({
        port: req.socket.remotePort,
        headers: req.headers,
        body: JSON.parse(raw.toString('utf8')),
        signatureValid: sigV4Valid(req, raw, { ...CREDS, region: REGION, service: 'dynamodb' }),
      });
      const plan = plans.shift() ?? { status: 200, json: { ok: true } };
      if (plan === 'hang') return;
      res.writeHead(plan.status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `req-${seen.length}` }).end(JSON.stringify(plan.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen.length = 0;
  plans.length = 0;
});

const clients: SignedJsonClient[] = [];
afterAll(() => {
  for (const c of clients) c.destroy();
});

function client(opts: Partial<SignedJsonOptions> = {}): SignedJsonClient {
  const made = SignedJsonClient.create({ service: DYNAMODB_JSON, region: REGION, endpoint, credentials: CREDS, ...opts });
  if (!made) throw new Error('no endpoint');
  clients.push(made);
  return made;
}

const dynamoError = (type: string, message: string, extra: Record<string, unknown> = {}) => ({
  __type: `com.amazonaws.dynamodb.v20120810#${type}`,
  message,
  ...extra,
});

describe('SignedJsonClient', () => {
  it("sends the operation as DynamoDB's JSON protocol, signed so that the service accepts it", async () => {
    const out = await client().call('GetItem', { TableName: 't', Key: { pk: { S: 'a' } } });
    expect(out).toEqual({ ok: true, $metadata: { httpStatusCode: 200, requestId: 'req-1', attempts: 1, totalRetryDelay: 0 } });
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.signatureValid).toBe(true);
    expect(req.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(req.headers['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(req.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDSIGNED\/\d{8}\/eu-west-1\/dynamodb\/aws4_request, SignedHeaders=/);
    expect(req.body).toEqual({ TableName: 't', Key: { pk: { S: 'a' } } });
  });

  it('keeps the connection alive between calls', async () => {
    const c = client();
    await c.call('GetItem', {});
    await c.call('GetItem', {});
    expect(seen).toHaveLength(2);
    expect(seen[1]!.port).toBe(seen[0]!.port);
  });

  it('signs with the credentials of the environment, the session token included, as in Lambda', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', CREDS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', CREDS.secretAccessKey);
    vi.stubEnv('AWS_SESSION_TOKEN', 'session-token-1');
    await client({ credentials: undefined }).call('PutItem', { TableName: 't' });
    expect(seen[0]!.signatureValid).toBe(true);
    expect(seen[0]!.headers['x-amz-security-token']).toBe('session-token-1');
    expect(String(seen[0]!.headers.authorization)).toMatch(/SignedHeaders=[^,]*x-amz-security-token/);
  });

  it('asks a credentials provider once, and again when what it gave is within five minutes of expiring', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      let calls = 0;
      const c = client({
        credentials: async () => {
          calls++;
          return { ...CREDS, expiration: new Date(Date.now() + 60 * 60_000) };
        },
      });
      await c.call('GetItem', {});
      vi.setSystemTime(Date.now() + 54 * 60_000);
      await c.call('GetItem', {});
      expect(calls).toBe(1);
      // 4 minutes left: refreshed before the call, as the SDK does.
      vi.setSystemTime(Date.now() + 2 * 60_000);
      await c.call('GetItem', {});
      await c.call('GetItem', {});
      expect(calls).toBe(2);
      expect(seen.every((s) => s.signatureValid)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("surfaces the service's error with the SDK's name, message, members and metadata, without retrying a client error", async () => {
    const item = { pk: { S: 'a' }, used: { N: '5' } };
    plans.push({ status: 400, json: dynamoError('ConditionalCheckFailedException', 'The conditional request failed', { Item: item }) });
    const err = (await client()
      .call('UpdateItem', {})
      .catch((e: unknown) => e)) as Record<string, unknown> & Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ConditionalCheckFailedException');
    expect(err.message).toBe('The conditional request failed');
    expect(err.Item).toEqual(item);
    expect(err.$fault).toBe('client');
    expect(err.$metadata).toEqual({ httpStatusCode: 400, requestId: 'req-1', attempts: 1, totalRetryDelay: 0 });
    expect(seen).toHaveLength(1);
    expect(isDependencyUnavailable(err)).toBe(false);
  });

  it('names a transaction cancellation as the SDK does, with its reasons', async () => {
    const reasons = [{ Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }, { Code: 'None' }];
    plans.push({ status: 400, json: dynamoError('TransactionCanceledException', 'Transaction cancelled', { CancellationReasons: reasons }) });
    await expect(client().call('TransactWriteItems', {})).rejects.toMatchObject({ name: 'TransactionCanceledException', CancellationReasons: reasons });
  });

  it('retries a 500 and succeeds, with the attempts in $metadata', async () => {
    plans.push({ status: 500, json: dynamoError('InternalServerError', 'boom') }, { status: 503, json: {} });
    const out = await client().call('UpdateItem', { n: 1 });
    expect(out.ok).toBe(true);
    expect(out.$metadata.attempts).toBe(3);
    expect(seen).toHaveLength(3);
    // Each attempt signed again, the same body each time.
    expect(seen.every((s) => s.signatureValid)).toBe(true);
    expect(seen.map((s) => s.body)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }]);
  });

  it('gives up after maxAttempts, answering the last error (a 503 with Retry-After for the routes)', async () => {
    plans.push({ status: 500, json: dynamoError('InternalServerError', 'boom 1') }, { status: 500, json: dynamoError('InternalServerError', 'boom 2') });
    const err = (await client({ maxAttempts: 2 })
      .call('UpdateItem', {})
      .catch((e: unknown) => e)) as Error & { $fault: string; $metadata: { attempts: number } };
    expect(err.name).toBe('InternalServerError');
    expect(err.message).toBe('boom 2');
    expect(err.$fault).toBe('server');
    expect(err.$metadata.attempts).toBe(2);
    expect(seen).toHaveLength(2);
    expect(isDependencyUnavailable(err)).toBe(true);
  });

  it('retries throttling (DynamoDB names it ProvisionedThroughputExceededException)', async () => {
    plans.push({ status: 400, json: dynamoError('ProvisionedThroughputExceededException', 'slow down') });
    const out = await client().call('UpdateItem', {});
    expect(out.$metadata.attempts).toBe(2);
    expect(seen).toHaveLength(2);
  });

  it('fails a call to a server that never answers with a TimeoutError, each attempt within the request timeout', async () => {
    plans.push('hang', 'hang');
    const started = Date.now();
    const err = (await client({ requestTimeoutMs: 150, maxAttempts: 2 })
      .call('GetItem', {})
      .catch((e: unknown) => e)) as Error & { $metadata: { attempts: number } };
    expect(err.name).toBe('TimeoutError');
    expect(err.$metadata.attempts).toBe(2);
    expect(seen).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(isDependencyUnavailable(err)).toBe(true);
  });

  it('retries a refused connection and keeps its code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const attempts: number[] = [];
    const c = client({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 3 });
    c.observe((call) => attempts.push(call.attempt));
    const err = (await c.call('GetItem', {}).catch((e: unknown) => e)) as Error & { code: string; $metadata: { attempts: number } };
    expect(err.code).toBe('ECONNREFUSED');
    expect(err.$metadata.attempts).toBe(3);
    expect(attempts).toEqual([1, 2, 3]);
    expect(isDependencyUnavailable(err)).toBe(true);
  });

  it('never puts the secret key in what it throws', async () => {
    plans.push({ status: 403, json: dynamoError('UnrecognizedClientException', 'The security token included in the request is invalid.') });
    const err = await client()
      .call('GetItem', {})
      .catch((e: unknown) => e);
    expect(JSON.stringify(err)).not.toContain(CREDS.secretAccessKey);
    expect(String((err as Error).stack)).not.toContain(CREDS.secretAccessKey);
  });
});

describe('signRequest', () => {
  it("signs as the AWS SDK's signer (@smithy/signature-v4) does, header for header", async () => {
    const body = Buffer.from(JSON.stringify({ TableName: 't', Key: { pk: { S: 'é 😀' } } }));
    const headers = {
      host: 'dynamodb.eu-west-1.amazonaws.com',
      'content-type': 'application/x-amz-json-1.0',
      'content-length': String(body.byteLength),
      'x-amz-target': 'DynamoDB_20120810.UpdateItem',
    };
    for (const [credentials, date] of [
      [CREDS, new Date('2026-03-04T05:06:07.890Z')],
      [{ ...CREDS, sessionToken: 'FwoGZXIvYXdzEBY//token+/=' }, new Date('2026-03-04T23:59:59.999Z')],
      // The next day: another signing key (the cache must not keep the old one).
      [CREDS, new Date('2026-03-05T00:00:00.000Z')],
    ] as const) {
      const sdk = new SignatureV4({ service: 'dynamodb', region: REGION, credentials, sha256: Sha256, applyChecksum: false });
      const expected = await sdk.sign(
        { method: 'POST', protocol: 'https:', hostname: headers.host, path: '/', query: {}, headers: { ...headers }, body },
        { signingDate: date },
      );
      const ours = await awsSigner('dynamodb', REGION, async () => credentials);
      expect(await signRequest(ours, headers.host, { headers: { ...headers }, body, date })).toEqual(expected.headers);
    }
  });
});

describe('awsJsonEndpoint', () => {
  it('picks the explicit endpoint, then AWS_ENDPOINT_URL_<SERVICE>, then AWS_ENDPOINT_URL, then the regional one', () => {
    const env = { AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb.test:8000', AWS_ENDPOINT_URL: 'http://all.test' };
    expect(awsJsonEndpoint(DYNAMODB_JSON, REGION, 'http://explicit.test', env)?.href).toBe('http://explicit.test/');
    expect(awsJsonEndpoint(DYNAMODB_JSON, REGION, undefined, env)?.href).toBe('http://ddb.test:8000/');
    expect(awsJsonEndpoint(SQS_JSON, REGION, undefined, env)?.href).toBe('http://all.test/');
    expect(awsJsonEndpoint(SQS_JSON, REGION, undefined, { ...env, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' })?.href).toBe(
      'https://sqs.eu-west-1.amazonaws.com/',
    );
    expect(awsJsonEndpoint(DYNAMODB_JSON, 'cn-north-1', undefined, {})?.href).toBe('https://dynamodb.cn-north-1.amazonaws.com.cn/');
  });

  it('leaves to the SDK the endpoints its rules would pick otherwise (FIPS, dual-stack, unknown partitions)', () => {
    expect(awsJsonEndpoint(DYNAMODB_JSON, REGION, undefined, { AWS_USE_FIPS_ENDPOINT: 'true' })).toBeUndefined();
    expect(awsJsonEndpoint(DYNAMODB_JSON, REGION, undefined, { AWS_USE_DUALSTACK_ENDPOINT: 'true' })).toBeUndefined();
    expect(awsJsonEndpoint(DYNAMODB_JSON, 'us-isob-east-1', undefined, {})).toBeUndefined();
    expect(awsJsonEndpoint(DYNAMODB_JSON, 'local', undefined, {})).toBeUndefined();
  });
});

describe('SQS through the lean client', () => {
  let standIns: StandIns;
  beforeAll(async () => {
    standIns = await startStandIns();
  });
  afterAll(() => standIns.close());

  it("sends the log queue's batches to the SQS stand-in named by AWS_ENDPOINT_URL_SQS, credentials from the environment", async () => {
    vi.stubEnv('AWS_ENDPOINT_URL_SQS', standIns.url);
    vi.stubEnv('AWS_ACCESS_KEY_ID', CREDS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', CREDS.secretAccessKey);
    const ref = new SqsClientRef({ region: REGION });
    expect(ref.lean?.endpoint).toBe(`${standIns.url}/`);
    const sends: string[] = [];
    ref.lean?.observe((c) => sends.push(c.operation));
    const queueUrl = `${standIns.url}/123456789012/gantry-log-events`;
    const queue = new SqsQueue<{ n: number }>({ queueUrl, client: ref });
    await queue.sendBatch(Array.from({ length: 12 }, (_, n) => ({ n })));
    expect(standIns.messages.get(queueUrl)?.map((m) => JSON.parse(m) as unknown)).toEqual(Array.from({ length: 12 }, (_, n) => ({ n })));
    expect(sends).toEqual(['SendMessageBatch', 'SendMessageBatch']);
  });
});
