/**
 * Cross-provider conformance: the same OpenAI conversation, with tools and streaming, sent with the
 * official openai SDK through every native provider (each behind its mock speaking its own wire
 * format) must give the same OpenAI-shaped answers: content, tool call names and arguments,
 * finish reasons, usage, and stream shape.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropic } from '../../../../../layers/core/src/providers/native/anthropic.ts';
import { azureOpenAI } from '../../../../../layers/core/src/providers/native/azure-openai.ts';
import { bedrock } from '../../../../../layers/core/src/providers/native/bedrock.ts';
import { callNative, type NativeOutcome } from '../../../../../layers/core/src/providers/native/call.ts';
import { cohere } from '../../../../../layers/core/src/providers/native/cohere.ts';
import { google, vertexAI } from '../../../../../layers/core/src/providers/native/google.ts';
import type { NativeProvider } from '../../../../../layers/core/src/providers/transform.ts';
import { ANTHROPIC_MODEL, startMockAnthropic } from '../../../../support/mock-anthropic.ts';
import { AZURE_KEY, startMockAzure } from '../../../../support/mock-azure.ts';
import { BEDROCK_MODEL, startMockBedrock } from '../../../../support/mock-bedrock.ts';
import { COHERE_KEY, COHERE_MODEL, startMockCohere } from '../../../../support/mock-cohere.ts';
import { GEMINI_MODEL, startMockGoogle, STUDIO_KEY, testServiceAccount } from '../../../../support/mock-google.ts';
import type { MockServer } from '../../../../support/mock-http.ts';
import { ctxFor, localUpstream } from '../../../../support/native-harness.ts';
import { conversation, TEXT_ANSWER, TOOL_ANSWER } from '../../../../support/native-fixtures.ts';

interface Target {
  name: string;
  provider: NativeProvider;
  model: string;
  apiKey: string;
  options: Record<string, unknown>;
  baseUrl: () => string;
}

const mocks: MockServer[] = [];
const up = localUpstream();
const outcomes: NativeOutcome[] = [];
let gateway: http.Server;
let gatewayUrl = '';
const targets: Target[] = [];

/** A minimal gateway: OpenAI request in, the named target's provider called through callNative, its answer out. */
function startGateway(): Promise<void> {
  gateway = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
    const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
    const target = targets.find((t) => t.name === req.headers['x-test-target'])!;
    const answer = await callNative({
      provider: target.provider,
      endpoint: 'chatComplete',
      ctx: ctxFor({ ...body, model: target.model }, { apiKey: target.apiKey, options: target.options }),
      send: up.send,
      baseUrl: target.baseUrl(),
      onOutcome: (o) => outcomes.push(o),
    });
    res.writeHead(answer.status, answer.headers);
    answer.body.pipe(res);
  });
  return new Promise((r) => gateway.listen(0, '127.0.0.1', () => r()));
}

beforeAll(async () => {
  const [a, b, g, az, co] = await Promise.all([
    startMockAnthropic(),
    startMockBedrock(),
    startMockGoogle(testServiceAccount()),
    startMockAzure(),
    startMockCohere(),
  ]);
  mocks.push(a, b, g, az, co);
  targets.push(
    { name: 'anthropic', provider: anthropic, model: ANTHROPIC_MODEL, apiKey: 'sk-ant', options: {}, baseUrl: () => `${a.url}/v1` },
    {
      name: 'bedrock',
      provider: bedrock,
      model: BEDROCK_MODEL,
      apiKey: '',
      options: { aws_access_key_id: 'AKIDEXAMPLE', aws_secret_access_key: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', aws_region: 'us-east-1' },
      baseUrl: () => b.url,
    },
    { name: 'google', provider: google, model: GEMINI_MODEL, apiKey: STUDIO_KEY, options: {}, baseUrl: () => `${g.url}/v1beta` },
    {
      name: 'vertex-gemini',
      provider: vertexAI,
      model: GEMINI_MODEL,
      apiKey: 'ya29.user-supplied',
      options: {},
      baseUrl: () => `${g.url}/v1/projects/p/locations/us-central1`,
    },
    {
      name: 'vertex-claude',
      provider: vertexAI,
      model: 'claude-sonnet-4@20250514',
      apiKey: 'ya29.user-supplied',
      options: {},
      baseUrl: () => `${g.url}/v1/projects/p/locations/us-east5`,
    },
    {
      name: 'azure-openai',
      provider: azureOpenAI,
      model: 'gpt-4o',
      apiKey: AZURE_KEY,
      options: { azure_resource_name: 'r', azure_deployment_id: 'd' },
      baseUrl: () => `${az.url}/openai`,
    },
    { name: 'cohere', provider: cohere, model: COHERE_MODEL, apiKey: COHERE_KEY, options: {}, baseUrl: () => co.url },
  );
  await startGateway();
  gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  up.close();
  await new Promise<void>((r) => {
    gateway.close(() => r());
    gateway.closeAllConnections();
  });
  await Promise.all(mocks.map((m) => m.close()));
});

const client = (target: string) => new OpenAI({ apiKey: 'gw-key', baseURL: gatewayUrl, defaultHeaders: { 'x-test-target': target }, maxRetries: 0 });
const NAMES = ['anthropic', 'bedrock', 'google', 'vertex-gemini', 'vertex-claude', 'azure-openai', 'cohere'];
const textTurn = {
  model: 'x',
  messages: [
    { role: 'system' as const, content: 'You are a weather bot.' },
    { role: 'user' as const, content: 'How warm is Paris?' },
  ],
};

describe.each(NAMES)('%s through the openai SDK', (name) => {
  it('answers the tool-calling conversation with the same parallel calls, finish reason and usage', async () => {
    const completion = await client(name).chat.completions.create(conversation('x') as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const choice = completion.choices[0]!;
    expect(completion.object).toBe('chat.completion');
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.role).toBe('assistant');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls!.map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : []))).toEqual(
      TOOL_ANSWER.calls.map((c) => [c.name, JSON.parse(c.arguments)]),
    );
    expect(new Set(choice.message.tool_calls!.map((c) => c.id)).size).toBe(2);
    expect(completion.usage).toMatchObject({
      prompt_tokens: TOOL_ANSWER.prompt,
      completion_tokens: TOOL_ANSWER.completion,
      total_tokens: TOOL_ANSWER.prompt + TOOL_ANSWER.completion,
    });
  });

  it('answers text with the same content and usage', async () => {
    const completion = await client(name).chat.completions.create(textTurn);
    expect(completion.choices[0]!.message.content).toBe(TEXT_ANSWER.text);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
  });

  it('streams text with the role first, finish_reason last and the usage chunk when asked', async () => {
    const stream = await client(name).chat.completions.create({ ...textTurn, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    expect(withChoices[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(withChoices.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(withChoices.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe(TEXT_ANSWER.text);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
  });

  it('streams tool calls; without include_usage no usage chunk reaches the client but the usage is reported', async () => {
    const before = outcomes.length;
    const stream = await client(name).chat.completions.create({
      ...(conversation('x') as unknown as OpenAI.ChatCompletionCreateParamsStreaming),
      stream: true,
    });
    const calls: { name: string; args: string }[] = [];
    const finishes: string[] = [];
    let sawUsage = false;
    for await (const c of stream) {
      if (c.usage) sawUsage = true;
      for (const ch of c.choices) {
        for (const tc of ch.delta.tool_calls ?? []) {
          const slot = (calls[tc.index] ??= { name: '', args: '' });
          slot.name += tc.function?.name ?? '';
          slot.args += tc.function?.arguments ?? '';
        }
        if (ch.finish_reason) finishes.push(ch.finish_reason);
      }
    }
    expect(calls.map((c) => [c.name, JSON.parse(c.args)])).toEqual(TOOL_ANSWER.calls.map((c) => [c.name, JSON.parse(c.arguments)]));
    expect(finishes).toEqual(['tool_calls']);
    expect(sawUsage).toBe(false);
    const reported = outcomes.slice(before);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({
      status: 200,
      finishReason: 'tool_calls',
      usage: { prompt_tokens: TOOL_ANSWER.prompt, completion_tokens: TOOL_ANSWER.completion },
    });
  });
});
