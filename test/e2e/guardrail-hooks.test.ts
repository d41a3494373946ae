/**
 * Guardrail hooks end to end, through the official openai and Anthropic SDKs against the local
 * server (direct and through the real Lambda handlers) in front of real mock provider servers:
 * 446 without a provider call, 246 with the answer and its hook results, fallbacks on 446, and
 * output hooks on streams that never let a forbidden phrase reach the client.
 */
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;
const FORBIDDEN = 'glpat-0123';
const block = (words: string[]) => ({ 'default.contains': { operator: 'none', words }, deny: true });
const flag = (words: string[]) => ({ 'default.contains': { operator: 'none', words } });

describe.each(['direct', 'lambda'] as const)('guardrail hooks (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let api: MockOpenAIApi;
  let key: string;

  const target = (extra: Json = {}) => ({ provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1`, ...extra });
  const client = (config: Json, headers: Record<string, string> = {}) =>
    new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'sk-x',
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config), ...headers },
    });
  const ask = (content: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content }] });

  async function refusal(p: Promise<unknown>): Promise<APIError> {
    try {
      await p;
    } catch (err) {
      if (err instanceof APIError) return err;
      throw err;
    }
    throw new Error('expected the request to be refused');
  }

  /** The raw answer (the SDKs keep only `error` of an error body; `hook_results` is beside it). */
  async function raw(config: Json, content: string): Promise<{ status: number; json: Json }> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config), 'content-type': 'application/json' },
      body: JSON.stringify(ask(content)),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  async function logOf(traceId: string): Promise<Json> {
    const row = await waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${traceId}`);
      return (res.json.data as Json[] | undefined)?.[0];
    });
    return (await gw.admin('GET', `/v1/logs/${String(row.id)}`)).json;
  }

  beforeAll(async () => {
    [gw, mock, api] = await Promise.all([startGantry(mode), startMockOpenAI(), startMockOpenAIApi()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close(), api?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  it('answers 446 with the hook results and calls no provider when an input guardrail denies', async () => {
    const err = await refusal(
      client(target({ input_guardrails: [block(['password'])] }), { 'x-gw-trace-id': `${mode}-deny` }).chat.completions.create(ask('my password is hunter2')),
    );
    expect(err.status).toBe(446);
    expect(err.type).toBe('hooks_failed');
    expect(mock.received).toHaveLength(0);
    const { status, json } = await raw(target({ input_guardrails: [block(['password'])] }), 'my password');
    expect(status).toBe(446);
    const body = json as Json & { hook_results: { before_request_hooks: Json[] } };
    expect(body.error).toMatchObject({ type: 'hooks_failed' });
    expect(body.hook_results.before_request_hooks[0]).toMatchObject({ verdict: false, deny: true, type: 'guardrail' });
    expect((body.hook_results.before_request_hooks[0]!.checks as Json[])[0]).toMatchObject({ id: 'default.contains', verdict: false, error: null });
    expect(mock.received).toHaveLength(0);

    const log = await logOf(`${mode}-deny`);
    expect(log.status_code).toBe(446);
    expect((log.hook_results as { before_request_hooks: Json[] }).before_request_hooks[0]).toMatchObject({ verdict: false, deny: true });
  });

  it('answers 246 with the normal body plus hook_results when a guardrail without deny fails', async () => {
    const res = await client(
      target({
        before_request_hooks: [
          { type: 'guardrail', id: 'no-secrets', checks: [{ id: 'default.contains', parameters: { operator: 'none', words: ['password'] } }] },
        ],
      }),
    )
      .chat.completions.create(ask('my password'))
      .withResponse();
    expect(res.response.status).toBe(246);
    expect(res.data.choices[0]?.message.content).toBe('Hello from the mock');
    expect((res.data as unknown as { hook_results: { before_request_hooks: Json[] } }).hook_results.before_request_hooks[0]).toMatchObject({
      id: 'no-secrets',
      verdict: false,
      deny: false,
    });
    expect(mock.received).toHaveLength(1);
  });

  it('denies an answer its output guardrail rejects with 446, and passes one it accepts untouched', async () => {
    const denied = await refusal(client(target({ output_guardrails: [block(['mock'])] })).chat.completions.create(ask('Hi')));
    expect(denied.status).toBe(446);
    expect(mock.received).toHaveLength(1);
    const { json } = await raw(target({ output_guardrails: [block(['mock'])] }), 'Hi');
    expect((json as { hook_results: { after_request_hooks: Json[] } }).hook_results.after_request_hooks[0]).toMatchObject({ verdict: false, deny: true });

    const ok = await client(target({ output_guardrails: [block(['nothing-like-this'])] }))
      .chat.completions.create(ask('Hi'))
      .withResponse();
    expect(ok.response.status).toBe(200);
    expect(ok.data).not.toHaveProperty('hook_results');
  });

  it('falls back to the next target on 446 when the strategy names it', async () => {
    const config = { strategy: { mode: 'fallback', on_status_codes: [446] }, targets: [target({ input_guardrails: [block(['Hi'])] }), target()] };
    const res = await client(config).chat.completions.create(ask('Hi')).withResponse();
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    expect(mock.received).toHaveLength(1);
  });

  it('falls back on 246 when named, but not without it', async () => {
    const first = target({ input_guardrails: [flag(['Hi'])] });
    const named = await client({ strategy: { mode: 'fallback', on_status_codes: [246] }, targets: [first, target()] })
      .chat.completions.create(ask('Hi'))
      .withResponse();
    expect(named.response.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    const unnamed = await client({ strategy: { mode: 'fallback' }, targets: [first, target()] })
      .chat.completions.create(ask('Hi'))
      .withResponse();
    expect(unnamed.response.status).toBe(246);
    expect(unnamed.response.headers.get('x-gw-last-used-option-index')).toBe('config.targets[0]');
  });

  it('stops a stream mid-way before a forbidden phrase: content_filter, hook_results, [DONE], and the log says so', async () => {
    const safe = Array.from({ length: 12 }, (_, i) => `word${i} `);
    mock.queue.push({ kind: 'stream', chunks: [...safe, 'and the token is glp', 'at-0123 ok', ' more text after'] });
    const stream = await client(target({ output_guardrails: [{ ...block([FORBIDDEN]), window: { size: 20, context: 20 } }] }), {
      'x-gw-trace-id': `${mode}-mid`,
    }).chat.completions.create({
      ...ask('tell me'),
      stream: true,
    });
    const chunks: Json[] = [];
    for await (const c of stream) chunks.push(c as unknown as Json);
    const text = chunks.map((c) => (c.choices as Array<{ delta?: { content?: string } }>)[0]?.delta?.content ?? '').join('');
    expect(text).not.toContain(FORBIDDEN);
    expect(text.startsWith(safe.join('').slice(0, 40))).toBe(true);
    const finish = chunks.find((c) => (c.choices as Array<{ finish_reason?: string }>)[0]?.finish_reason);
    expect((finish?.choices as Array<{ finish_reason: string }>)[0]?.finish_reason).toBe('content_filter');
    const results = chunks.at(-1)?.hook_results as { after_request_hooks: Json[] };
    expect(results.after_request_hooks[0]).toMatchObject({ verdict: false, deny: true });

    const log = await logOf(`${mode}-mid`);
    expect(log.error_code).toBe('hooks_failed');
    expect((log.hook_results as { after_request_hooks: Json[] }).after_request_hooks[0]).toMatchObject({ verdict: false, deny: true });
  });

  it('answers a real 446 when the first window of a stream is denied', async () => {
    mock.queue.push({ kind: 'stream', chunks: ['glpat', '-0123 right away'] });
    const err = await refusal(client(target({ output_guardrails: [block([FORBIDDEN])] })).chat.completions.create({ ...ask('x'), stream: true }));
    expect(err.status).toBe(446);
    expect(err.type).toBe('hooks_failed');
  });

  it('never lets a forbidden phrase split at random chunk boundaries reach a streaming client', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(60), { maxLength: 8 }), fc.integer({ min: 1, max: 40 }), async (cuts, size) => {
        const text = `Some harmless lead-in, then ${FORBIDDEN} and then more words.`;
        const points = [...new Set(cuts.map((c) => c % text.length))].sort((a, b) => a - b);
        const chunks = [...points, text.length].map((p, i, all) => text.slice(i === 0 ? 0 : all[i - 1], p)).filter((c) => c !== '');
        mock.queue.push({ kind: 'stream', chunks });
        let received = '';
        try {
          const stream = await client(target({ output_guardrails: [{ ...block([FORBIDDEN]), window: { size, context: 20 } }] })).chat.completions.create({
            ...ask('x'),
            stream: true,
          });
          for await (const c of stream) received += c.choices[0]?.delta?.content ?? '';
        } catch (err) {
          if (!(err instanceof APIError) || err.status !== 446) throw err;
        }
        expect(received).not.toContain(FORBIDDEN);
      }),
      { numRuns: 12 },
    );
  });

  it('ends a Responses stream with response.incomplete (content_filter) before the phrase', async () => {
    const openai = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'sk-x',
      maxRetries: 0,
      defaultHeaders: {
        'x-gw-api-key': key,
        'x-gw-config': JSON.stringify({
          provider: 'openai',
          api_key: 'sk-x',
          custom_host: `${api.url}/v1`,
          output_guardrails: [{ ...block([FORBIDDEN]), window: { size: 10, context: 20 } }],
        }),
      },
    });
    const stream = await openai.responses.create({ model: 'gpt-4o-mini', input: `one two three four five six ${FORBIDDEN} seven`, stream: true });
    const events: Json[] = [];
    for await (const e of stream) events.push(e as unknown as Json);
    const text = events
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    expect(text).not.toContain(FORBIDDEN);
    expect(text).toContain('one two');
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'content_filter' } } });
  });

  it('ends a /v1/messages stream with stop_reason refusal before the phrase (Anthropic SDK)', async () => {
    mock.queue.push({ kind: 'stream', chunks: ['one two three four five six ', 'seven eight nine ten ', `${FORBIDDEN} eleven`] });
    const anthropic = new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-x',
      maxRetries: 0,
      defaultHeaders: {
        'x-gw-api-key': key,
        'x-gw-config': JSON.stringify(target({ output_guardrails: [{ ...block([FORBIDDEN]), window: { size: 10, context: 20 } }] })),
      },
    });
    const stream = anthropic.messages.stream({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'count' }] });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(text).not.toContain(FORBIDDEN);
    expect(text).toContain('one two');
    expect(final.stop_reason).toBe('refusal');
  });
});
