/**
 * The answer phase, from the routing engine's outcome to the client's response: a priced JSON
 * answer with `x-gw-cost`, a stream relayed as the provider sent it (and ended with an error event
 * when the provider cut it), provider errors in OpenAI's shape, the passthrough's bytes, the
 * gateway's own refusals, and the hooks completing only once the response has ended.
 */
import { describe, expect, it } from 'vitest';
import { answer, refuseThrown } from '../../../../layers/core/src/gateway/answer.ts';
import type { EndpointSpec } from '../../../../layers/core/src/gateway/endpoint.ts';
import { openRecord, type Flight } from '../../../../layers/core/src/gateway/flight.ts';
import type { Input } from '../../../../layers/core/src/gateway/input.ts';
import type { Outcome } from '../../../../layers/core/src/gateway/routing/execute.ts';
import { RequestTimeoutError, UpstreamError } from '../../../../layers/core/src/http/errors.ts';
import { cannedAnswer, chatChunk, chatCompletion, sseText, type CannedReply } from '../../../support/fake-upstream.ts';
import { afterResponse, CHAT, chatBody, gatewayRequest, specOf, tracingHook, unitDeps, type UnitDepsOptions } from '../../../support/unit-deps.ts';

const TRACE = 'trace-answer-1';

function flight(spec: EndpointSpec = CHAT, opts: UnitDepsOptions & { stream?: boolean } = {}): Flight {
  const f = openRecord(spec, gatewayRequest('/chat/completions', { body: chatBody(), headers: { 'x-gw-trace-id': TRACE } }), unitDeps(opts), undefined);
  f.record.stream = opts.stream === true;
  f.record.provider = 'openai';
  return f;
}

const input: Input = { body: { kind: 'none' }, params: {}, subPath: undefined, fields: {}, rawFields: undefined, dialect: undefined };

const outcomeOf = (reply: CannedReply): Outcome => ({
  ...cannedAnswer(reply),
  target: { path: 'config', provider: 'openai', override_params: {}, strict_openai_compliance: true, options: {} },
  retries: 0,
});

describe('a JSON answer', () => {
  it("is priced: the provider's bytes, its useful headers, the trace id and x-gw-cost", async () => {
    const events: string[] = [];
    const f = flight(CHAT, { hooks: [tracingHook('log', events)] });
    const completion = chatCompletion('Hello!');
    const res = await answer(
      f,
      outcomeOf({ json: completion, headers: { 'x-request-id': 'req-9', 'set-cookie': 'a=b', 'openai-processing-ms': '12' } }),
      input,
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(JSON.stringify(completion));
    expect(Object.fromEntries(res.headers)).toMatchObject({
      'content-type': 'application/json',
      'x-request-id': 'req-9',
      'openai-processing-ms': '12',
      'x-gw-trace-id': TRACE,
      'x-gw-log-id': f.record.id,
      'x-gw-cache-status': 'DISABLED',
      // 12 tokens at 2 micro-dollars each (unit-deps' pricer).
      'x-gw-cost': '0.000024',
    });
    expect(res.headers.has('set-cookie')).toBe(false);
    expect(f.record).toMatchObject({ status: 200, usage: { total_tokens: 12 }, costMicros: 24, response: completion });
    await afterResponse();
    expect(events).toEqual(['log.settle', 'log.complete']);
  });

  it('has no x-gw-cost when its model has no price, and the record says it is unpriced', async () => {
    const f = flight(CHAT, { costMicros: () => undefined });
    const res = await answer(f, outcomeOf({ json: chatCompletion('Hi') }), input);
    expect(res.headers.has('x-gw-cost')).toBe(false);
    expect(f.record.unpriced).toBe(true);
  });

  it("is rewritten by the endpoint's transform (rerank results by score)", async () => {
    const f = flight(specOf('POST', '/rerank'));
    const res = await answer(
      f,
      outcomeOf({
        json: {
          results: [
            { index: 0, relevance_score: 0.1 },
            { index: 1, relevance_score: 0.9 },
          ],
        },
      }),
      input,
    );
    expect((await res.json()).results.map((r: { index: number }) => r.index)).toEqual([1, 0]);
  });
});

describe('a stream', () => {
  const events = [chatChunk('Hel'), chatChunk('lo'), chatChunk(undefined, { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })];

  it('is relayed as the provider sent it, its usage read on the way, the hooks completed once it ended', async () => {
    const hooked: string[] = [];
    const f = flight(CHAT, { stream: true, hooks: [tracingHook('log', hooked)] });
    const res = await answer(f, outcomeOf({ sse: events }), input);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('x-gw-trace-id')).toBe(TRACE);
    // A stream's cost is not known before it is sent.
    expect(res.headers.has('x-gw-cost')).toBe(false);
    await afterResponse();
    expect(hooked).toEqual([]);
    expect(await res.text()).toBe(sseText(events));
    await afterResponse();
    expect(hooked).toEqual(['log.settle', 'log.complete']);
    expect(f.record).toMatchObject({ usage: { total_tokens: 7 }, streamText: sseText(events) });
  });

  it('the provider cut ends cleanly with an OpenAI error event, and the log says so', async () => {
    const f = flight(CHAT, { stream: true });
    const res = await answer(f, outcomeOf({ sse: [chatChunk('Hel')], cut: true }), input);
    const text = await res.text();
    expect(text.startsWith(`data: ${JSON.stringify(chatChunk('Hel'))}\n\n`)).toBe(true);
    const last = JSON.parse(
      text
        .trim()
        .split('\n\n')
        .at(-1)
        ?.replace(/^data: /, '') ?? '{}',
    );
    expect(last.error).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('closed the connection') });
    expect(f.record.errorCode).toBe('upstream_stream_interrupted');
  });
});

describe('a provider error', () => {
  it('keeps its status, body and Retry-After when it is in OpenAI shape', async () => {
    const f = flight();
    const error = { error: { message: 'Rate limit reached', type: 'rate_limit_error', code: 'rate_limit_exceeded' } };
    const res = await answer(f, outcomeOf({ status: 429, json: error, headers: { 'retry-after': '3' } }), input);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(await res.json()).toEqual(error);
    expect(f.record).toMatchObject({ status: 429, response: error });
  });

  it("is wrapped in OpenAI's shape when it is not (an HTML page from a proxy)", async () => {
    const res = await answer(
      flight(),
      outcomeOf({ status: 502, headers: { 'content-type': 'text/html' }, text: '<html><body><h1>Bad gateway</h1></body></html>' }),
      input,
    );
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect((await res.json()).error).toMatchObject({ message: 'The provider answered 502: Bad gateway', code: 'upstream_error' });
  });
});

describe('the passthrough', () => {
  it("relays every answer's bytes and headers as they are, errors included, but no x-gw-* claim", async () => {
    // The passthrough's spec for a POST (passthrough.ts).
    const f = flight({ endpoint: 'proxy', method: 'POST', body: 'raw', stream: true });
    const html = '<html>upstream down</html>';
    const res = await answer(f, outcomeOf({ status: 500, text: html, headers: { 'content-type': 'text/html', 'x-gw-cost': '0', 'x-vendor': 'v' } }), input);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe(html);
    expect(res.headers.get('x-vendor')).toBe('v');
    expect(res.headers.get('x-gw-cost')).toBeNull();
    expect(res.headers.get('x-gw-trace-id')).toBe(TRACE);
  });
});

describe('refusals', () => {
  it("answers an outcome without a body with the gateway's error, its status and the trace id", async () => {
    const f = flight();
    const res = await answer(f, { status: 408, headers: {}, error: new RequestTimeoutError(5), target: outcomeOf({}).target, retries: 0 }, input);
    expect(res.status).toBe(408);
    expect(res.headers.get('x-gw-trace-id')).toBe(TRACE);
    expect((await res.json()).error).toMatchObject({ code: 'request_timeout', type: 'timeout_error', message: 'Request exceeded the timeout of 5 ms' });
    expect(f.record).toMatchObject({ status: 408, errorCode: 'request_timeout' });
  });

  it('logs an unexpected failure as a 500 with the trace id, but not a provider being unreachable', async () => {
    const broken = flight();
    const res = refuseThrown(broken, new TypeError('boom'));
    expect(res.status).toBe(500);
    expect((await res.json()).error.message).not.toContain('boom');
    const logs = (broken.deps as ReturnType<typeof unitDeps>).logger.lines;
    expect(logs).toMatchObject([{ level: 'error', message: 'gateway request failed', attributes: [{ traceId: TRACE }] }]);

    const unreachable = flight();
    expect(refuseThrown(unreachable, new UpstreamError(502, 'Could not reach the provider')).status).toBe(502);
    expect((unreachable.deps as ReturnType<typeof unitDeps>).logger.lines).toEqual([]);
  });
});
