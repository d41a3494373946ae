/**
 * The gateway function as Lambda runs it: a hand-made API Gateway REST event in, the response
 * stream out (JSON prelude, eight NUL bytes, body), decoded as API Gateway decodes it.
 */
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import {
  installAwsLambdaGlobals,
  PRELUDE_CONTENT_TYPE,
  PreludeDecoder,
  ResponseStream,
  type Prelude,
  type StreamingHandler,
} from '../../../lambdas/local/awslambda.ts';
import { requestEvent } from '../../support/apigw-event.ts';
import { createTestDeps } from '../../support/deps.ts';
import { startMockOpenAI, type MockOpenAI } from '../../support/mock-openai.ts';
import { keyRecord } from '../../support/records.ts';

const context = {
  functionName: 'gantry-gateway',
  awsRequestId: 'req-1',
  getRemainingTimeInMillis: () => 900_000,
} as unknown as Context;

interface Invocation {
  contentType: string;
  prelude: Prelude;
  body: string;
  /** Body chunks in the order the handler wrote them. */
  chunks: string[];
}

let deps: CoreDeps;
let handler: StreamingHandler<APIGatewayProxyEvent, Context>;
let mock: MockOpenAI;
let key: string;

async function invoke(event: APIGatewayProxyEvent): Promise<Invocation> {
  let prelude: Prelude | undefined;
  const chunks: string[] = [];
  const decoder = new PreludeDecoder(
    (p) => (prelude = p),
    (c) => chunks.push(c.toString('utf8')),
  );
  const stream = new ResponseStream((c) => decoder.push(c));
  await handler(event, stream, context);
  if (!stream.writableFinished) await new Promise((r) => stream.once('finish', r));
  if (!prelude) throw new Error('the handler wrote no prelude');
  return { contentType: stream.contentType, prelude, body: chunks.join(''), chunks };
}

beforeAll(async () => {
  // The handler module calls awslambda.streamifyResponse when it loads.
  installAwsLambdaGlobals();
  const { createGatewayHandler } = await import('../../../lambdas/gateway/handler.ts');
  [deps, mock] = await Promise.all([createTestDeps(), startMockOpenAI()]);
  const boot = await ensureBootstrap(deps);
  const made = keyRecord({ organisation_id: boot.organisationId, workspace_id: boot.workspaceId, scopes: ['completions.write'] }, Date.now());
  await deps.repos.apiKeys.create(made.record);
  key = made.key;
  handler = createGatewayHandler(() => Promise.resolve(deps)) as unknown as StreamingHandler<APIGatewayProxyEvent, Context>;
});
afterAll(async () => {
  await mock?.close();
  deps?.upstream.close();
});

describe('gateway handler', () => {
  it('answers GET /v1/health with status ok through the streaming prelude', async () => {
    const out = await invoke(requestEvent('GET', '/v1/health'));
    expect(out.contentType).toBe(PRELUDE_CONTENT_TYPE);
    expect(out.prelude.statusCode).toBe(200);
    expect(out.prelude.headers['content-type']).toBe('application/json');
    expect(out.prelude.cookies).toEqual([]);
    expect(JSON.parse(out.body)).toEqual({ status: 'ok' });
  });

  it('answers a chat completion without a key with 401 in OpenAI shape, naming the header', async () => {
    const out = await invoke(
      requestEvent('POST', '/v1/chat/completions', { 'content-type': 'application/json', 'x-gw-trace-id': 'trace-7' }, '{"model":"m","messages":[]}'),
    );
    expect(out.prelude.statusCode).toBe(401);
    expect(out.prelude.headers['content-type']).toBe('application/json');
    expect(out.prelude.headers['x-gw-trace-id']).toBe('trace-7');
    const body = JSON.parse(out.body) as { error: { type: string; code: string; message: string; param: null } };
    expect(body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key', param: null });
    expect(body.error.message).toContain('x-gw-api-key');
  });

  it('answers a completion with a valid key from the provider', async () => {
    const out = await invoke(
      requestEvent(
        'POST',
        '/v1/chat/completions',
        {
          'content-type': 'application/json',
          'x-gw-api-key': key,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          authorization: 'Bearer sk-x',
        },
        JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
      ),
    );
    expect(out.prelude.statusCode).toBe(200);
    expect(out.prelude.headers['x-gw-provider']).toBe('openai');
    expect((JSON.parse(out.body) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('Hello from the mock');
  });

  it('streams server-sent events chunk by chunk, ending with [DONE]', async () => {
    const out = await invoke(
      requestEvent(
        'POST',
        '/v1/chat/completions',
        { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` },
        JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
      ),
    );
    expect(out.prelude.statusCode).toBe(200);
    expect(out.prelude.headers['content-type']).toContain('text/event-stream');
    expect(out.chunks.filter((c) => c.length > 0).length).toBeGreaterThan(1);
    expect(out.body.trim().endsWith('data: [DONE]')).toBe(true);
  });

  it('decodes a base64 request body', async () => {
    const out = await invoke(
      requestEvent(
        'POST',
        '/v1/chat/completions',
        { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` },
        Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], temperature: 5 })).toString('base64'),
        { isBase64Encoded: true },
      ),
    );
    expect(out.prelude.statusCode).toBe(400);
    expect((JSON.parse(out.body) as { error: { param: string } }).error.param).toBe('temperature');
  });

  it('serves no admin routes', async () => {
    const out = await invoke(requestEvent('GET', '/v1/api-keys', { 'x-gw-api-key': key }));
    expect(out.prelude.statusCode).toBe(404);
    expect(JSON.parse(out.body)).toMatchObject({ object: 'error', errorCode: 'AB02' });
  });

  it('relays a priced JSON answer byte for byte, a leading BOM and bytes that are not UTF-8 included', async () => {
    const usage = '"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}';
    const answers = [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"id":"a","object":"chat.completion","model":"gpt-4o-mini",${usage},"choices":[]}`)]),
      Buffer.concat([
        Buffer.from(`{"id":"b","object":"chat.completion","model":"gpt-4o-mini",${usage},"choices":[],"x":"`),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('"}'),
      ]),
    ];
    let next = 0;
    const provider = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(answers[next++]);
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    try {
      const host = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
      for (const expected of answers) {
        const chunks: Buffer[] = [];
        let status = 0;
        const decoder = new PreludeDecoder(
          (p) => (status = p.statusCode),
          (c) => chunks.push(c),
        );
        const stream = new ResponseStream((c) => decoder.push(c));
        const headers = {
          'content-type': 'application/json',
          'x-gw-api-key': key,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': host,
          authorization: 'Bearer sk-x',
        };
        await handler(
          requestEvent('POST', '/v1/chat/completions', headers, JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })),
          stream,
          context,
        );
        if (!stream.writableFinished) await new Promise((r) => stream.once('finish', r));
        expect(status).toBe(200);
        expect(Buffer.concat(chunks).equals(expected)).toBe(true);
      }
    } finally {
      await new Promise((r) => provider.close(r));
    }
  });
});
