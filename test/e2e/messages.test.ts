/**
 * POST /v1/messages and /v1/messages/count_tokens end to end with the official Anthropic SDK,
 * direct and through the real Lambda handlers: against an OpenAI-wire provider (translated both
 * ways, streams included), against Bedrock (tools translated through two formats), and against
 * Anthropic itself (the request and the answer pass unchanged). Errors come in Anthropic's shape;
 * the gateway key is accepted where Anthropic's SDKs put their apiKey.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';
import { ANTHROPIC_MODEL, anthropicErrorReply, startMockAnthropic, textMessage } from '../support/mock-anthropic.ts';
import { BEDROCK_MODEL, KEYS, startMockBedrock, type MockBedrock } from '../support/mock-bedrock.ts';
import type { MockServer } from '../support/mock-http.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { TEXT_ANSWER, TOOL_ANSWER } from '../support/native-fixtures.ts';

const HI = [{ role: 'user' as const, content: 'Hi' }];

describe.each(['direct', 'lambda'] as const)('/v1/messages (%s mode)', (mode) => {
  let gw: TestGantry;
  let wsKey: string;
  let openai: MockOpenAI;
  let anthropic: MockServer;
  let bedrock: MockBedrock;
  const records: GatewayRecord[] = [];
  const hook: GatewayHook = { name: 'recorder', complete: (r) => void records.push(structuredClone({ ...r, principal: undefined })) };
  let trace = 0;

  const nextTrace = () => `messages-${mode}-${++trace}`;
  const recordOf = (traceId: string): Promise<GatewayRecord> => until(() => records.find((r) => r.traceId === traceId), `the record of ${traceId}`);

  /** An OpenAI-wire target; the provider key is the SDK's apiKey, the gateway key x-gw-api-key. */
  const viaOpenAI = (headers: Record<string, string> = {}) =>
    new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-openai-provider',
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': wsKey, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${openai.url}/v1`, ...headers },
    });
  /** Anthropic itself: the gateway key is the SDK's apiKey, the provider key comes from the config. */
  const viaAnthropic = (headers: Record<string, string> = {}) =>
    new Anthropic({
      baseURL: gw.url,
      apiKey: wsKey,
      maxRetries: 0,
      defaultHeaders: { 'x-gw-config': JSON.stringify({ provider: 'anthropic', api_key: 'sk-ant-provider', custom_host: `${anthropic.url}/v1` }), ...headers },
    });

  beforeAll(async () => {
    [gw, openai, anthropic, bedrock] = await Promise.all([startGantry(mode), startMockOpenAI(), startMockAnthropic(), startMockBedrock()]);
    wsKey = await gw.workspaceKey();
    gw.deps.gatewayHooks.push(hook);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), openai?.close(), anthropic?.close(), bedrock?.close()]);
  });
  beforeEach(() => {
    openai.received.length = 0;
    openai.queue.length = 0;
    anthropic.received.length = 0;
    anthropic.queue.length = 0;
    bedrock.received.length = 0;
  });

  describe('to an OpenAI-wire provider', () => {
    it('translates the request and answers a Message', async () => {
      const traceId = nextTrace();
      const message = await viaOpenAI({ 'x-gw-trace-id': traceId }).messages.create({
        model: 'gpt-4o-mini',
        max_tokens: 100,
        system: 'Be brief.',
        messages: HI,
        stop_sequences: ['END'],
      });
      expect(message).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: 'gpt-4o-mini',
        content: [{ type: 'text', text: 'Hello from the mock' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 9, output_tokens: 3 },
      });
      expect(message.id).toMatch(/^msg_/);
      const got = openai.received[0]!;
      expect(got.path).toBe('/v1/chat/completions');
      expect(got.headers.authorization).toBe('Bearer sk-openai-provider');
      expect(JSON.stringify(got.headers)).not.toContain(wsKey);
      expect(JSON.parse(got.body)).toEqual({
        model: 'gpt-4o-mini',
        max_tokens: 100,
        stop: ['END'],
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
        ],
      });
      const record = await recordOf(traceId);
      expect(record).toMatchObject({ endpoint: 'chatComplete', path: '/v1/messages', status: 200, provider: 'openai', stream: false, model: 'gpt-4o-mini' });
      expect(record.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 3 });
    });

    it("streams Anthropic's events, usage included", async () => {
      const traceId = nextTrace();
      const stream = viaOpenAI({ 'x-gw-trace-id': traceId }).messages.stream({ model: 'gpt-4o-mini', max_tokens: 100, messages: HI });
      const types: string[] = [];
      stream.on('streamEvent', (e) => types.push(e.type));
      const final = await stream.finalMessage();
      expect(final.content).toEqual([{ type: 'text', text: 'Hello there' }]);
      expect(final.stop_reason).toBe('end_turn');
      expect(final.usage).toMatchObject({ input_tokens: 9, output_tokens: 2 });
      expect(types[0]).toBe('message_start');
      expect(types).toContain('content_block_delta');
      expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
      expect(JSON.parse(openai.received[0]!.body)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
      const record = await recordOf(traceId);
      expect(record).toMatchObject({ stream: true, status: 200 });
      expect(record.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2 });
    });

    it("answers a provider error in Anthropic's error shape with its status", async () => {
      openai.queue.push({
        kind: 'error',
        status: 429,
        body: JSON.stringify({ error: { message: 'Rate limit reached for gpt-4o-mini', type: 'requests', param: null, code: 'rate_limit_exceeded' } }),
      });
      const err = (await viaOpenAI()
        .messages.create({ model: 'gpt-4o-mini', max_tokens: 10, messages: HI })
        .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(err).toBeInstanceOf(Anthropic.RateLimitError);
      expect(err.status).toBe(429);
      expect(err.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached for gpt-4o-mini' } });
    });

    it("refuses a bad request and a bad key in Anthropic's error shape", async () => {
      const bad = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-gw-api-key': wsKey, 'x-gw-provider': 'openai', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: HI }),
      });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'max_tokens: is required (an integer of at least 1)' },
      });
      const unauthorised = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'gw_not-a-key', 'x-gw-provider': 'openai', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 5, messages: HI }),
      });
      expect(unauthorised.status).toBe(401);
      expect(((await unauthorised.json()) as { type: string; error: { type: string } }).error.type).toBe('authentication_error');
      expect(openai.received).toHaveLength(0);
    });

    it('takes the gateway key from x-api-key, and then never passes it on', async () => {
      const client = new Anthropic({
        baseURL: gw.url,
        apiKey: 'sk-openai-provider',
        maxRetries: 0,
        defaultHeaders: { 'x-api-key': wsKey, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${openai.url}/v1`, 'x-gw-forward-headers': 'x-api-key' },
      });
      const message = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 10, messages: HI });
      expect(message.content).toEqual([{ type: 'text', text: 'Hello from the mock' }]);
      expect(openai.received[0]!.headers.authorization).toBe('Bearer sk-openai-provider');
      expect(JSON.stringify(openai.received[0]!.headers)).not.toContain(wsKey);
    });

    it('estimates count_tokens without calling the provider', async () => {
      const counted = await viaOpenAI().messages.countTokens({
        model: 'gpt-4o-mini',
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'How many tokens is this?' }],
      });
      // About four characters a token, over the system prompt and the messages (roles included).
      expect(counted.input_tokens).toBe(Math.ceil(('Be brief.'.length + 'user'.length + 'How many tokens is this?'.length) / 4));
      expect(openai.received).toHaveLength(0);
    });
  });

  it('translates tools through a native provider (Bedrock) and back', async () => {
    const client = new Anthropic({
      baseURL: gw.url,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: {
        'x-gw-api-key': wsKey,
        'x-gw-provider': 'bedrock',
        'x-gw-custom-host': bedrock.url,
        'x-gw-aws-access-key-id': 'AKIDEXAMPLE',
        'x-gw-aws-secret-access-key': KEYS.AKIDEXAMPLE!,
      },
    });
    const message = await client.messages.create({
      model: BEDROCK_MODEL,
      max_tokens: 200,
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather for a city',
          input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
      messages: [{ role: 'user', content: 'And in Rome and Milan?' }],
    });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((b) => (b.type === 'tool_use' ? [b.name, b.input] : b.type))).toEqual(
      TOOL_ANSWER.calls.map((c) => [c.name, JSON.parse(c.arguments) as unknown]),
    );
    expect(message.usage).toMatchObject({ input_tokens: TOOL_ANSWER.prompt, output_tokens: TOOL_ANSWER.completion });
    const sent = bedrock.received.at(-1)!.json as { toolConfig: { tools: { toolSpec: { name: string } }[] } };
    expect(sent.toolConfig.tools[0]?.toolSpec.name).toBe('get_weather');
  });

  describe('to Anthropic (passed through)', () => {
    it('sends the request unchanged and answers the Message as Anthropic sent it', async () => {
      const traceId = nextTrace();
      const request = {
        model: ANTHROPIC_MODEL,
        max_tokens: 64,
        system: [{ type: 'text' as const, text: 'Be brief.', cache_control: { type: 'ephemeral' as const } }],
        messages: HI,
        metadata: { user_id: 'u-1' },
      };
      const res = await viaAnthropic({ 'x-gw-trace-id': traceId, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31' })
        .messages.create(request)
        .withResponse();
      expect(res.data).toEqual(textMessage());
      expect(res.response.headers.get('x-gw-provider')).toBe('anthropic');
      const got = anthropic.received[0]!;
      expect(got.path).toBe('/v1/messages');
      expect(got.json).toEqual(request);
      expect(got.headers['x-api-key']).toBe('sk-ant-provider');
      expect(got.headers['anthropic-version']).toBe('2023-06-01');
      expect(got.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
      expect(got.headers.authorization).toBeUndefined();
      expect(JSON.stringify(got.headers)).not.toContain(wsKey);
      const record = await recordOf(traceId);
      expect(record).toMatchObject({ provider: 'anthropic', status: 200, model: ANTHROPIC_MODEL });
      expect(record.usage).toMatchObject({ prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion });
    });

    it("streams Anthropic's own events and records their usage", async () => {
      const traceId = nextTrace();
      const stream = viaAnthropic({ 'x-gw-trace-id': traceId }).messages.stream({ model: ANTHROPIC_MODEL, max_tokens: 64, messages: HI });
      const final = await stream.finalMessage();
      expect(final.content).toEqual([{ type: 'text', text: TEXT_ANSWER.text }]);
      expect(final.usage).toMatchObject({ input_tokens: TEXT_ANSWER.prompt, output_tokens: TEXT_ANSWER.completion });
      expect(anthropic.received[0]!.json).toMatchObject({ stream: true });
      const record = await recordOf(traceId);
      expect(record.stream).toBe(true);
      expect(record.usage).toMatchObject({
        prompt_tokens: TEXT_ANSWER.prompt,
        completion_tokens: TEXT_ANSWER.completion,
        total_tokens: TEXT_ANSWER.prompt + TEXT_ANSWER.completion,
      });
    });

    it('passes count_tokens on to Anthropic', async () => {
      anthropic.queue.push({ json: { input_tokens: 42 } });
      const counted = await viaAnthropic().messages.countTokens({ model: ANTHROPIC_MODEL, messages: HI });
      expect(counted).toEqual({ input_tokens: 42 });
      expect(anthropic.received[0]!.path).toBe('/v1/messages/count_tokens');
      expect(anthropic.received[0]!.json).toEqual({ model: ANTHROPIC_MODEL, messages: HI });
    });

    it('accepts what only Anthropic takes (server tools) for Anthropic, and refuses it for others', async () => {
      const body = { model: ANTHROPIC_MODEL, max_tokens: 64, messages: HI, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }] };
      const toAnthropic = await viaAnthropic().messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming);
      expect(toAnthropic.content).toEqual([{ type: 'text', text: TEXT_ANSWER.text }]);
      expect(anthropic.received[0]!.json).toEqual(body);
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-gw-api-key': wsKey, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${openai.url}/v1`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^tools\[0\]\.type: server tools/);
      expect(openai.received).toHaveLength(0);
    });

    it("relays Anthropic's own errors", async () => {
      anthropic.queue.push(anthropicErrorReply(529, 'overloaded_error', 'Overloaded'));
      const err = (await viaAnthropic()
        .messages.create({ model: ANTHROPIC_MODEL, max_tokens: 5, messages: HI })
        .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(err.status).toBe(529);
      expect(err.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    });

    it('sends x-gw-cost with a priced answer', async () => {
      const put = await gw.admin('PUT', `/v1/model-configs/pricing/anthropic/${ANTHROPIC_MODEL}`, { input_per_million: 3, output_per_million: 15 });
      expect(put.status).toBe(200);
      const res = await viaAnthropic().messages.create({ model: ANTHROPIC_MODEL, max_tokens: 64, messages: HI }).withResponse();
      expect(res.response.headers.get('x-gw-cost')).toBe('0.000180');
    });
  });
});
