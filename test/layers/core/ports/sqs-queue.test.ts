/**
 * SqsQueue against a small HTTP server speaking SQS's JSON protocol (awsJson1_0 with query
 * compatibility, as the installed SDK sends it): SendMessageBatch with MD5s of the bodies it
 * accepted and per-entry failures. The server checks the request down to the SigV4 signature.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SQS_MAX_PAYLOAD_BYTES, SqsClientRef, SqsQueue, SqsSendError } from '../../../../layers/core/src/ports/aws/sqs-queue.ts';
import { sigV4Valid } from '../../../support/sigv4.ts';

const REGION = 'eu-west-1';
const CREDS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test-key' };

interface Entry {
  Id: string;
  MessageBody: string;
}
interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: { QueueUrl: string; Entries: Entry[] };
  signatureValid: boolean;
}
interface Fault {
  SenderFault: boolean;
  Code: string;
  Message: string;
}

const seen: Seen[] = [];
/** Decides per entry (and request number, from 1) whether SQS reports it failed. */
let fault: (entry: Entry, request: number) => Fault | undefined;
/** When set, the whole request fails with this error. */
let requestError: { status: number; type: string; message: string } | undefined;
let server: Server;
let endpoint: string;
let queueUrl: string;

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = JSON.parse(raw.toString('utf8')) as Seen['body'];
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        signatureValid: sigV4Valid(req, raw, { ...CREDS, region: REGION, service: 'sqs' }),
      });
      const json = { 'content-type': 'application/x-amz-json-1.0' };
      if (requestError) {
        res
          .writeHead(requestError.status, { ...json, 'x-amzn-query-error': `${requestError.type};Sender` })
          .end(JSON.stringify({ __type: `com.amazonaws.sqs#${requestError.type}`, message: requestError.message }));
        return;
      }
      const Successful: { Id: string; MessageId: string; MD5OfMessageBody: string }[] = [];
      const Failed: (Fault & { Id: string })[] = [];
      for (const e of body.Entries) {
        const f = fault(e, seen.length);
        if (f) Failed.push({ Id: e.Id, ...f });
        else Successful.push({ Id: e.Id, MessageId: `msg-${seen.length}-${e.Id}`, MD5OfMessageBody: md5(e.MessageBody) });
      }
      res.writeHead(200, json).end(JSON.stringify({ Successful, Failed }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  queueUrl = `${endpoint}/123456789012/gantry-log-events`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen.length = 0;
  fault = () => undefined;
  requestError = undefined;
});

type ClientKind = 'sdk' | 'lean';
let kind: ClientKind = 'sdk';
// No SDK retries, so every request the adapter makes is one the server sees. The SDK's SQS client, or
// the lean signed client the functions use by default (ports/aws/signed-json.ts).
const queue = <T>() =>
  new SqsQueue<T>({
    queueUrl,
    client:
      kind === 'sdk'
        ? new SQSClient({ region: REGION, endpoint, credentials: CREDS, maxAttempts: 1 })
        : new SqsClientRef({ region: REGION, endpoint, credentials: CREDS, maxAttempts: 1 }),
  });

const entries = () => seen.map((s) => s.body.Entries);
const bodies = () => entries().map((es) => es.map((e) => JSON.parse(e.MessageBody) as unknown));

describe.each(['sdk', 'lean'] as const)('SqsQueue (%s client)', (clientKind) => {
  beforeEach(() => {
    kind = clientKind;
  });

  it('sends a JSON body with SendMessageBatch, signed, in the JSON protocol', async () => {
    await queue<{ id: string; n: number }>().send({ id: 'req-1', n: 2 });
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/');
    expect(req.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(req.headers['x-amz-target']).toBe('AmazonSQS.SendMessageBatch');
    expect(req.headers['x-amzn-query-mode']).toBe('true');
    expect(req.signatureValid).toBe(true);
    expect(req.body).toEqual({ QueueUrl: queueUrl, Entries: [{ Id: '0', MessageBody: '{"id":"req-1","n":2}' }] });
  });

  it('sends nothing for an empty batch', async () => {
    await queue().sendBatch([]);
    expect(seen).toEqual([]);
  });

  it('splits a batch into requests of at most 10 entries, in order', async () => {
    const sent = Array.from({ length: 23 }, (_, i) => ({ i }));
    await queue().sendBatch(sent);
    expect(entries().map((es) => es.length)).toEqual([10, 10, 3]);
    expect(bodies().flat()).toEqual(sent);
    expect(entries()[1]!.map((e) => e.Id)).toEqual(['10', '11', '12', '13', '14', '15', '16', '17', '18', '19']);
    expect(seen.every((s) => s.signatureValid)).toBe(true);
  });

  it('keeps the bodies of one request within 256 KiB', async () => {
    // 100 KiB of JSON each: two fit in a request, a third does not.
    const big = (c: string) => c.repeat(100 * 1024 - 2);
    await queue<string>().sendBatch([big('a'), big('b'), big('c'), big('d'), big('e')]);
    expect(bodies()).toEqual([[big('a'), big('b')], [big('c'), big('d')], [big('e')]]);
  });

  it('sends a body of exactly 256 KiB, and refuses one byte more without any request', async () => {
    const exact = 'x'.repeat(SQS_MAX_PAYLOAD_BYTES - 2);
    await queue<string>().sendBatch([exact, 'small']);
    expect(bodies()).toEqual([[exact], ['small']]);
    seen.length = 0;
    const err = await queue<string>()
      .sendBatch(['fine', `${exact}y`])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(/Message #1 is 262145 bytes .* limit of 262144 bytes \(256 KiB\)/);
    expect(seen).toEqual([]);
  });

  it('counts bytes, not characters', async () => {
    // 3 bytes per character in UTF-8: 90,000 characters are 270,002 bytes of JSON.
    await expect(queue<string>().send('€'.repeat(90_000))).rejects.toThrow(/270002 bytes/);
  });

  it('resends only the entries SQS failed on its side, then succeeds', async () => {
    fault = (e, request) => (e.Id === '3' && request === 1 ? { SenderFault: false, Code: 'InternalError', Message: 'try again' } : undefined);
    await queue<number>().sendBatch([0, 1, 2, 3, 4]);
    expect(entries()).toEqual([[0, 1, 2, 3, 4].map((n) => ({ Id: String(n), MessageBody: String(n) })), [{ Id: '3', MessageBody: '3' }]]);
  });

  it('gives up after 3 sends of a failing entry and throws naming it', async () => {
    fault = (e) => (e.Id === '12' ? { SenderFault: false, Code: 'ServiceUnavailable', Message: 'overloaded' } : undefined);
    const err = await queue<number>()
      .sendBatch(Array.from({ length: 15 }, (_, i) => i))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SqsSendError);
    expect((err as SqsSendError).message).toBe(`SQS did not accept 1 message(s) for ${queueUrl}: #12 ServiceUnavailable: overloaded`);
    expect((err as SqsSendError).failures).toEqual([{ index: 12, code: 'ServiceUnavailable', message: 'overloaded', senderFault: false }]);
    // The first request went through; the second was sent again twice for its failed entry.
    expect(entries().map((es) => es.map((e) => e.Id))).toEqual([
      ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
      ['10', '11', '12', '13', '14'],
      ['12'],
      ['12'],
    ]);
  });

  it('does not resend entries failed by the sender, and names every failure', async () => {
    fault = (e) =>
      e.Id === '1'
        ? { SenderFault: true, Code: 'InvalidMessageContents', Message: 'bad characters' }
        : e.Id === '2' && seen.length < 2
          ? { SenderFault: false, Code: 'InternalError', Message: 'oops' }
          : undefined;
    const err = (await queue<string>()
      .sendBatch(['a', 'b', 'c'])
      .catch((e: unknown) => e)) as SqsSendError;
    expect(err.failures).toEqual([{ index: 1, code: 'InvalidMessageContents', message: 'bad characters', senderFault: true }]);
    expect(entries().map((es) => es.map((e) => e.Id))).toEqual([['0', '1', '2'], ['2']]);
  });

  it('escapes U+FFFE and U+FFFF, which SQS refuses, keeping the same JSON value', async () => {
    const body = { text: 'a\uffffb\ufffe', ctl: '\u0001', emoji: '😀' };
    await queue().send(body);
    const sent = entries()[0]![0]!.MessageBody;
    expect(sent).not.toMatch(/[\ufffe\uffff]/);
    expect(sent).toContain('\\uffff');
    expect(JSON.parse(sent)).toEqual(body);
  });

  it('refuses a body without a JSON form', async () => {
    await expect(queue().send(undefined)).rejects.toThrow(new TypeError('Message #0 has no JSON form'));
    expect(seen).toEqual([]);
  });

  it('passes on an error for the whole request', async () => {
    requestError = { status: 400, type: 'QueueDoesNotExist', message: 'The specified queue does not exist.' };
    await expect(queue().send({ a: 1 })).rejects.toMatchObject({ name: 'QueueDoesNotExist' });
  });

  it('builds its own client from region and endpoint', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', CREDS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', CREDS.secretAccessKey);
    vi.stubEnv('AWS_SESSION_TOKEN', '');
    try {
      await new SqsQueue({ queueUrl, region: REGION, endpoint, sdk: clientKind === 'sdk' }).send('hi');
    } finally {
      vi.unstubAllEnvs();
    }
    expect(seen.map((s) => [s.body.Entries, s.signatureValid])).toEqual([[[{ Id: '0', MessageBody: '"hi"' }], true]]);
  });
});
