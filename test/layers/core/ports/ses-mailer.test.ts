/**
 * SesMailer against a small HTTP server speaking the SESv2 REST API (POST /v2/email/outbound-emails,
 * JSON in and out, errors named by `x-amzn-errortype`). The server checks the request down to the
 * SigV4 signature. Bad messages never reach it.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { SesMailer } from '../../../../layers/core/src/ports/aws/ses-mailer.ts';
import type { MailMessage } from '../../../../layers/core/src/ports/mailer.ts';
import { sigV4Valid } from '../../../support/sigv4.ts';

const REGION = 'eu-west-1';
const CREDS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test-key' };
const FROM = 'alerts@gantry.example.com';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
  signatureValid: boolean;
}

const seen: Seen[] = [];
/** Errors to answer, one per request, before answering success again. */
const errors: { status: number; type: string; message: string }[] = [];
let server: Server;
let endpoint: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      seen.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(raw.toString('utf8')),
        signatureValid: sigV4Valid(req, raw, { ...CREDS, region: REGION, service: 'ses' }),
      });
      const error = errors.shift();
      if (error) {
        res.writeHead(error.status, { 'content-type': 'application/json', 'x-amzn-errortype': error.type }).end(JSON.stringify({ message: error.message }));
      } else if (req.method === 'POST' && req.url === '/v2/email/outbound-emails') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ MessageId: `ses-${seen.length}` }));
      } else {
        res.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'NotFoundException' }).end('{}');
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
  errors.length = 0;
});

// No SDK retries, so every request the adapter makes is one the server sees.
const client = () => new SESv2Client({ region: REGION, endpoint, credentials: CREDS, maxAttempts: 1 });
const mailer = () => new SesMailer({ from: FROM, client: client() });

const MESSAGE: MailMessage = {
  to: ['owner@example.com', 'admin+alerts@example.org'],
  subject: 'Usage limit reached: 80% of $100',
  text: 'Workspace "default" used $80.00 of $100.00.\n\n— Gantry',
  kind: 'usage-limit.threshold',
};

function validationError(promise: Promise<unknown>): Promise<ValidationError> {
  return promise.then(
    () => {
      throw new Error('the message was accepted');
    },
    (err: unknown) => {
      expect(err).toBeInstanceOf(ValidationError);
      return err as ValidationError;
    },
  );
}

describe('SesMailer', () => {
  it('sends one SendEmail with simple text content, signed', async () => {
    await mailer().send(MESSAGE);
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect([req.method, req.path]).toEqual(['POST', '/v2/email/outbound-emails']);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.signatureValid).toBe(true);
    expect(req.body).toEqual({
      FromEmailAddress: FROM,
      Destination: { ToAddresses: ['owner@example.com', 'admin+alerts@example.org'] },
      Content: {
        Simple: {
          Subject: { Data: 'Usage limit reached: 80% of $100', Charset: 'UTF-8' },
          Body: { Text: { Data: 'Workspace "default" used $80.00 of $100.00.\n\n— Gantry', Charset: 'UTF-8' } },
        },
      },
      // SES tag values allow letters, digits, `_` and `-`.
      EmailTags: [{ Name: 'kind', Value: 'usage-limit_threshold' }],
    });
  });

  it('passes on SES errors by name', async () => {
    errors.push({ status: 400, type: 'MessageRejected', message: 'Email address is not verified.' });
    await expect(mailer().send(MESSAGE)).rejects.toMatchObject({ name: 'MessageRejected', message: 'Email address is not verified.' });
  });

  it('passes on throttling once the client stops retrying', async () => {
    errors.push({ status: 429, type: 'TooManyRequestsException', message: 'Too many requests' });
    await expect(mailer().send(MESSAGE)).rejects.toMatchObject({ name: 'TooManyRequestsException' });
    expect(seen).toHaveLength(1);
  });

  it('builds its own client from region and endpoint', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', CREDS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', CREDS.secretAccessKey);
    vi.stubEnv('AWS_SESSION_TOKEN', '');
    try {
      await new SesMailer({ from: FROM, region: REGION, endpoint }).send({ ...MESSAGE, to: ['one@example.com'] });
    } finally {
      vi.unstubAllEnvs();
    }
    expect(seen.map((s) => [s.path, s.signatureValid])).toEqual([['/v2/email/outbound-emails', true]]);
  });

  it.each([
    [{ to: [] }, 'to', 'needs at least one recipient'],
    [{ to: ['ok@example.com', 'not-an-address'] }, 'to[1]', 'is not an e-mail address'],
    [{ to: ['victim@example.com\r\nBcc: everyone@example.com'] }, 'to[0]', 'is not an e-mail address'],
    [{ to: ['Name <ok@example.com>'] }, 'to[0]', 'is not an e-mail address'],
    [{ to: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`) }, 'to', 'has more than 50 recipients'],
    [{ subject: 'Hello\r\nBcc: everyone@example.com' }, 'subject', 'contains a line break'],
    [{ subject: 'Hello\nX-Injected: 1' }, 'subject', 'contains a line break'],
    [{ subject: '  ' }, 'subject', 'is empty'],
    [{ kind: '' }, 'kind', 'is empty'],
  ])('refuses %j (400 AB01 at %s) without a request', async (change, path, message) => {
    const err = await validationError(mailer().send({ ...MESSAGE, ...change }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('AB01');
    expect(err.problems).toEqual([{ path, message }]);
    expect(seen).toEqual([]);
  });

  it('names every bad field at once', async () => {
    const err = await validationError(mailer().send({ ...MESSAGE, to: ['a@b', 'c@example.com', 'd'], subject: 'x\ny' }));
    expect(err.problems.map((p) => p.path)).toEqual(['to[0]', 'to[2]', 'subject']);
  });

  it.each(['', 'gantry', 'Gantry <alerts@example.com>', 'alerts@example.com\nBcc: x@example.com'])('refuses the sender %j when built', (from) => {
    expect(() => new SesMailer({ from, client: client() })).toThrow(TypeError);
  });
});
