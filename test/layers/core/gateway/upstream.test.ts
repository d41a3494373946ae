/**
 * The outbound client masks the credentials of each request in its answer: against a real local
 * server that echoes what it received, compressed or not.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { UpstreamClient, type UpstreamResponse } from '../../../../layers/core/src/gateway/upstream.ts';
import { TrustedHosts } from '../../../../layers/core/src/security/ssrf.ts';
import { startMockServer, type MockServer, type Recorded, type Reply } from '../../../support/mock-http.ts';

const KEY = 'upstream-test-key-0123456789';

async function read(res: UpstreamResponse): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of res.body as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
  return Buffer.concat(parts).toString('utf8');
}

describe('UpstreamClient', () => {
  let server: MockServer;
  let client: UpstreamClient;
  let reply: (req: Recorded) => Reply;

  beforeAll(async () => {
    server = await startMockServer((req) => reply(req));
    client = new UpstreamClient(new TrustedHosts(['127.0.0.1']));
  });
  afterAll(async () => {
    client.close();
    await server.close();
  });

  const send = (headers: Record<string, string>, secrets?: string[]) =>
    client.send({ url: new URL(`${server.url}/v1/x`), method: 'GET', headers, ...(secrets ? { secrets } : {}) });

  it('masks the credential headers it sent, in the headers and body of the answer, and asks for no content coding', async () => {
    reply = (req) => ({ status: 401, headers: { 'x-echo': String(req.headers.authorization) }, text: `bad key ${String(req.headers.authorization)}` });
    const res = await send({ authorization: `Bearer ${KEY}`, 'accept-encoding': 'gzip, br' });
    expect(server.received.at(-1)?.headers['accept-encoding']).toBe('identity');
    expect(res.headers['x-echo']).toBe('Bearer [REDACTED]');
    expect(res.headers['content-length']).toBeUndefined();
    expect(await read(res)).toBe('bad key Bearer [REDACTED]');
  });

  it('masks the secrets the caller names although they were never sent', async () => {
    reply = () => ({ json: { error: { message: `signed with ${KEY}` } } });
    expect(await read(await send({}, [KEY]))).toBe('{"error":{"message":"signed with [REDACTED]"}}');
  });

  it.each([
    ['a line break', { authorization: 'Bearer sk-a\r\nx-injected: 1' }, 'authorization'],
    ['a character past Latin-1', { 'x-api-key': 'sk-\u2028' }, 'x-api-key'],
    ['a control character', { 'openai-organization': 'org\u0001' }, 'openai-organization'],
    ['a bad header name', { 'bad name': 'v' }, 'bad name'],
  ])('refuses a header it cannot send (%s) with a 400 naming it, sending nothing', async (_what, headers, name) => {
    const before = server.received.length;
    const err = await send(headers).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).status).toBe(400);
    expect((err as ValidationError).param).toBe(name);
    expect((err as ValidationError).message).not.toContain('sk-');
    expect(server.received.length).toBe(before);
  });

  it('leaves an answer untouched when the request carried no credential', async () => {
    reply = (req) => ({ headers: { 'content-encoding': 'gzip' }, text: String(req.headers['accept-encoding'] ?? 'none') });
    const res = await send({ 'accept-encoding': 'gzip' });
    expect(res.headers['content-encoding']).toBe('gzip');
    // The client's own Accept-Encoding went as it was, and the body comes as the server sent it.
    expect(await read(res)).toBe('gzip');
  });

  it('decodes an answer compressed although it was asked for none, to mask it', async () => {
    reply = () => ({ headers: { 'content-encoding': 'gzip' }, chunks: [gzipSync(`key ${KEY}`)] });
    const res = await send({ 'x-api-key': KEY });
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(await read(res)).toBe('key [REDACTED]');
  });

  it('refuses an answer in a coding it cannot read with a 502', async () => {
    reply = () => ({ headers: { 'content-encoding': 'compress' }, text: 'opaque' });
    await expect(send({ 'x-api-key': KEY })).rejects.toMatchObject({
      status: 502,
      message: expect.stringContaining('content coding Gantry cannot check (compress)'),
    });
  });
});
