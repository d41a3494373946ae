/**
 * handleGatewayRequest end to end with the ports faked in memory (unit-deps.ts): one chat request
 * from the client's headers to the answer, what the provider received, the gateway's headers, the
 * record the hooks read, and the hooks' order (admit, admitTarget, then settle and complete once
 * the response has ended). Refusals at each phase come back in OpenAI's shape with the trace id,
 * and no provider is called. The same request through DynamoDB and a real server: test/e2e.
 */
import { describe, expect, it } from 'vitest';
import { admit, handleGatewayRequest } from '../../../../layers/core/src/gateway/pipeline.ts';
import { openRecord } from '../../../../layers/core/src/gateway/flight.ts';
import { RateLimitedError } from '../../../../layers/core/src/http/errors.ts';
import type { GatewayHook, GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';
import { chatChunk, chatCompletion, sseText, type CannedReply } from '../../../support/fake-upstream.ts';
import { afterResponse, CHAT, chatBody, gatewayRequest, tracingHook, unitDeps, UNIT_KEY, type UnitDepsOptions } from '../../../support/unit-deps.ts';

const TRACE = 'trace-pipeline-1';

function setup(opts: UnitDepsOptions & { replies?: CannedReply[] } = {}) {
  const events: string[] = [];
  const records: GatewayRecord[] = [];
  const recorder: GatewayHook = { name: 'log', complete: (r) => void records.push(structuredClone(r)) };
  const deps = unitDeps({ hooks: [tracingHook('limits', events), recorder], ...opts });
  deps.upstream.queue.push(...(opts.replies ?? []));
  const send = (body: unknown, headers: Record<string, string> = {}) =>
    handleGatewayRequest(CHAT, gatewayRequest('/chat/completions', { body, headers: { 'x-gw-trace-id': TRACE, ...headers } }), deps);
  return { deps, events, records, send };
}

describe('a chat request', () => {
  it('reaches the provider as OpenAI would receive it and answers with the gateway headers', async () => {
    const { deps, events, records, send } = setup();
    const res = await send(chatBody(), { 'x-gw-provider': 'openai', authorization: 'Bearer sk-provider', 'x-gw-metadata': '{"team":"blue"}' });

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(chatCompletion('Hello!'));
    const [sent] = deps.upstream.sent;
    expect(deps.upstream.sent).toHaveLength(1);
    expect(sent?.url.href).toBe('https://api.openai.com/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-provider');
    expect(Object.keys(sent?.headers ?? {}).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(sent?.json).toEqual(chatBody());
    expect(Object.fromEntries(res.headers)).toMatchObject({
      'x-gw-trace-id': TRACE,
      'x-gw-provider': 'openai',
      'x-gw-cache-status': 'DISABLED',
      'x-gw-last-used-option-index': 'config',
      'x-gw-retry-attempt-count': '0',
      'x-gw-cost': '0.000024',
    });

    await afterResponse();
    expect(events).toEqual(['limits.admit', 'limits.admitTarget config', 'limits.settle', 'limits.complete']);
    expect(records).toMatchObject([
      {
        traceId: TRACE,
        status: 200,
        provider: 'openai',
        model: 'gpt-4o-mini',
        configSource: 'headers',
        metadata: { team: 'blue' },
        usage: { total_tokens: 12 },
        costMicros: 24,
        retries: 0,
      },
    ]);
  });

  it("adds the hooks' admit headers to the answer", async () => {
    const limits: GatewayHook = { name: 'limits', admit: async () => ({ 'x-ratelimit-remaining-requests': '9' }) };
    const { send } = setup({ hooks: [limits] });
    const res = await send(chatBody(), { 'x-gw-provider': 'openai' });
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('9');
  });

  it('streams an SSE answer through, the hooks completing after its last byte', async () => {
    const events = [chatChunk('Hel'), chatChunk('lo'), chatChunk(undefined, { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })];
    const { events: hooked, records, send } = setup({ replies: [{ sse: events }] });
    const res = await send(chatBody({ stream: true, stream_options: { include_usage: true } }), { 'x-gw-provider': 'openai' });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    await afterResponse();
    expect(hooked).not.toContain('limits.complete');
    expect(await res.text()).toBe(sseText(events));
    await afterResponse();
    expect(hooked.slice(-2)).toEqual(['limits.settle', 'limits.complete']);
    // A stream is priced by the pricing hook's settle (price-book.ts), not by the answer.
    expect(records[0]).toMatchObject({ stream: true, usage: { total_tokens: 7 } });
  });

  it('answers from the fallback target when the first fails, and says which one answered', async () => {
    const { deps, records, send } = setup({ replies: [{ status: 500, json: { error: { message: 'down' } } }] });
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'openai', api_key: 'sk-a' },
        { provider: 'groq', api_key: 'sk-b' },
      ],
    };
    const res = await send(chatBody(), { 'x-gw-config': JSON.stringify(config) });
    expect(res.status).toBe(200);
    expect(deps.upstream.sent.map((s) => s.url.host)).toEqual(['api.openai.com', 'api.groq.com']);
    expect(res.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    expect(res.headers.get('x-gw-provider')).toBe('groq');
    await afterResponse();
    expect(records[0]).toMatchObject({ fallback: true, configSource: 'inline', targetPath: 'config.targets[1]' });
  });

  it('answers 408 when the provider does not answer within request_timeout', async () => {
    const { send } = setup({ replies: [{ hang: true }] });
    const res = await send(chatBody(), { 'x-gw-provider': 'openai', 'x-gw-request-timeout': '5' });
    expect(res.status).toBe(408);
    expect((await res.json()).error).toMatchObject({ code: 'request_timeout' });
    expect(res.headers.get('x-gw-trace-id')).toBe(TRACE);
  });

  it('retries a 429 and counts the retries in x-gw-retry-attempt-count', async () => {
    const { deps, send } = setup({ replies: [{ status: 429, json: { error: { message: 'slow down' } } }] });
    const res = await send(chatBody(), { 'x-gw-config': JSON.stringify({ provider: 'openai', retry: { attempts: 2 } }) });
    expect(res.status).toBe(200);
    expect(deps.upstream.sent).toHaveLength(2);
    expect(res.headers.get('x-gw-retry-attempt-count')).toBe('1');
    expect(deps.clock.sleeps).toHaveLength(1);
  });
});

describe('refusals', () => {
  const expectRefused = async (res: Response, status: number, param: string | null) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('x-gw-trace-id')).toBe(TRACE);
    const body = await res.json();
    expect(body.error).toMatchObject({ param });
    return body;
  };

  it('a missing or wrong gateway key: 401, no provider called, the hooks still complete the record', async () => {
    const { deps, events, records, send } = setup();
    await expectRefused(await send(chatBody(), { 'x-gw-api-key': 'gw_wrong', 'x-gw-provider': 'openai' }), 401, null);
    expect(deps.upstream.sent).toHaveLength(0);
    await afterResponse();
    expect(events).toEqual(['limits.settle', 'limits.complete']);
    expect(records).toMatchObject([{ status: 401, errorCode: 'invalid_api_key', traceId: TRACE }]);
  });

  it('a bad body: 400 naming the field, before any hook admits it', async () => {
    const { deps, events, send } = setup();
    await expectRefused(await send(chatBody({ messages: 'hi' }), { 'x-gw-provider': 'openai' }), 400, 'messages');
    expect(deps.upstream.sent).toHaveLength(0);
    expect(events).not.toContain('limits.admit');
  });

  it('a bad routing header: 400 naming it', async () => {
    const { deps, send } = setup();
    await expectRefused(await send(chatBody(), { 'x-gw-config': '{"targets": [' }), 400, 'x-gw-config');
    await expectRefused(await send(chatBody(), {}), 400, 'x-gw-provider');
    expect(deps.upstream.sent).toHaveLength(0);
  });

  it("a hook's admit refusal: its status and error, no provider called", async () => {
    const limit: GatewayHook = {
      name: 'limits',
      admit: () => Promise.reject(new RateLimitedError('Rate limit of 10 requests per minute reached', { headers: { 'retry-after': '6' } })),
    };
    const { deps, send } = setup({ hooks: [limit] });
    const res = await send(chatBody(), { 'x-gw-provider': 'openai' });
    const body = await expectRefused(res, 429, null);
    expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', message: 'Rate limit of 10 requests per minute reached' });
    expect(res.headers.get('retry-after')).toBe('6');
    expect(deps.upstream.sent).toHaveLength(0);
  });
});

describe('admit', () => {
  it("sets the hooks' headers only once every hook admitted, a later hook's winning", async () => {
    const deps = unitDeps({
      hooks: [
        { name: 'a', admit: async () => ({ 'x-ratelimit-limit-requests': '10', 'x-a': '1' }) },
        { name: 'b', admit: async () => ({ 'x-ratelimit-limit-requests': '5' }) },
      ],
    });
    const f = openRecord(CHAT, gatewayRequest('/chat/completions', { body: chatBody(), headers: { 'x-gw-api-key': UNIT_KEY } }), deps, undefined);
    await admit(f);
    expect(f.out).toMatchObject({ 'x-ratelimit-limit-requests': '5', 'x-a': '1' });

    const refusing = unitDeps({
      hooks: [
        { name: 'a', admit: async () => ({ 'x-a': '1' }) },
        { name: 'b', admit: () => Promise.reject(new RateLimitedError('no')) },
      ],
    });
    const g = openRecord(CHAT, gatewayRequest('/chat/completions', { body: chatBody() }), refusing, undefined);
    await expect(admit(g)).rejects.toThrow('no');
    expect(g.out['x-a']).toBeUndefined();
  });
});
