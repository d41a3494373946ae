import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../../layers/core/src/http/errors.ts';
import { parseDataUrl, readChatInput, refuseUnsupported } from '../../../../../layers/core/src/providers/native/chat-input.ts';
import { ChunkWriter, embeddingList } from '../../../../../layers/core/src/providers/native/chat-output.ts';
import { findNativeProvider, nativeContext, nativeOptions, NATIVE_PROVIDERS } from '../../../../../layers/core/src/providers/native/index.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { assemble, ctxFor, runStream } from '../../../../support/native-harness.ts';

describe('reading OpenAI chat requests', () => {
  it('pairs legacy function messages with the calls they answer', () => {
    const input = readChatInput(
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{"q":1}' } },
          { role: 'function', name: 'lookup', content: 'found' },
        ],
        functions: [{ name: 'lookup', parameters: { type: 'object' } }],
      },
      { strictOpenAICompliance: true },
    );
    const call = input.turns[1]!;
    const result = input.turns[2]!;
    expect(call.role === 'assistant' && call.toolCalls[0]!.name).toBe('lookup');
    expect(result.role === 'tool' && result.toolCallId).toBe(call.role === 'assistant' ? call.toolCalls[0]!.id : '');
    expect(input.legacyFunctions).toBe(true);
    expect(input.tools).toEqual([{ name: 'lookup', parameters: { type: 'object' } }]);
  });

  it('keeps unknown fields as extras and refuses unsupported content parts by path', () => {
    expect(readChatInput({ model: 'm', messages: [], top_k: 3, safety_mode: 'OFF' }, { strictOpenAICompliance: true }).extra).toEqual({ safety_mode: 'OFF' });
    try {
      readChatInput(
        { model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] },
        { strictOpenAICompliance: true },
      );
      throw new Error('expected a 400');
    } catch (err) {
      expect((err as ValidationError).problems[0]!.path).toBe('messages[0].content[0].type');
    }
  });

  it('treats neutral values as absent and names the first unsupported parameter', () => {
    expect(() =>
      refuseUnsupported({ n: 1, logprobs: false, store: false, modalities: ['text'], service_tier: 'auto', metadata: { a: 'b' } }, 'p', new Set()),
    ).not.toThrow();
    expect(() => refuseUnsupported({ modalities: ['text', 'audio'] }, 'p', new Set())).toThrow(/modalities: is not supported by p/);
    expect(() => refuseUnsupported({ n: 3 }, 'p', new Set(['n']))).not.toThrow();
  });

  it('parses data URLs with parameters', () => {
    expect(parseDataUrl('data:image/jpeg;name=a.jpg;base64,AAAA')).toEqual({ mediaType: 'image/jpeg', base64: 'AAAA' });
    expect(parseDataUrl('https://x/y.png')).toBeUndefined();
  });
});

describe('the chunk writer', () => {
  it('keeps per-choice roles and finish reasons for several candidates', () => {
    const w = new ChunkWriter(ctxFor({ model: 'm', messages: [], stream: true }));
    let out = w.text('a', 0) + w.text('b', 1) + w.finish('stop', 1) + w.finish('length', 0);
    w.usage({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    out += w.end();
    const events = out
      .split('\n\n')
      .filter((l) => l && !l.includes('[DONE]'))
      .map((l) => JSON.parse(l.slice(6)));
    const roles = events.flatMap((e) => e.choices.filter((c: any) => c.delta.role).map((c: any) => c.index));
    expect(roles).toEqual([0, 1]);
    expect(events.flatMap((e) => e.choices.filter((c: any) => c.finish_reason).map((c: any) => [c.index, c.finish_reason]))).toEqual([
      [1, 'stop'],
      [0, 'length'],
    ]);
    expect(w.outcome()).toMatchObject({ finishReason: 'length', usage: { total_tokens: 3 } });
  });

  it('streams legacy function calls as function_call deltas', () => {
    const body = { model: 'm', messages: [], stream: true, functions: [{ name: 'f', parameters: {} }] };
    const w = new ChunkWriter(ctxFor(body));
    const text = w.toolStart(0, 'id', 'f') + w.toolArgs(0, '{"a"') + w.toolArgs(0, ':1}') + w.finish('tool_calls');
    expect(text).toContain('"function_call":{"name":"f","arguments":""}');
    expect(text).toContain('"function_call":{"arguments":":1}"}');
    expect(text).toContain('"finish_reason":"function_call"');
    expect(text).not.toContain('tool_calls');
  });

  it('never reports tool_calls without a call', () => {
    const w = new ChunkWriter(ctxFor({ model: 'm', messages: [], stream: true }));
    const run = runStream({ push: () => '', end: () => w.text('x') + w.finish('tool_calls') + w.end(), outcome: () => w.outcome() }, []);
    expect(assemble(run.events).finishReasons).toEqual(['stop']);
  });

  it('encodes base64 embeddings as little-endian float32', () => {
    const list = embeddingList([[1, -2.5]], 'm', 2, 'base64') as { data: { embedding: string }[] };
    expect(list.data[0]!.embedding).toBe(Buffer.from(new Float32Array([1, -2.5]).buffer).toString('base64'));
  });
});

describe('the native provider index', () => {
  it('finds every provider by id and reads options from x-gw-* headers when the config has none', () => {
    expect(NATIVE_PROVIDERS.map((p) => p.id)).toEqual(['anthropic', 'bedrock', 'google', 'vertex-ai', 'azure-openai', 'azure-ai', 'cohere', 'sagemaker']);
    expect(findNativeProvider('Bedrock')?.id).toBe('bedrock');
    const headers = new Headers({ 'x-gw-aws-region': 'eu-west-1', 'x-gw-vertex-project-id': 'p', 'x-gw-aws-access-key-id': 'FROMHEADER' });
    expect(nativeOptions({ aws_access_key_id: 'FROMCONFIG' }, headers)).toEqual({
      aws_access_key_id: 'FROMCONFIG',
      aws_region: 'eu-west-1',
      vertex_project_id: 'p',
    });
  });

  it('derives the context from the body', () => {
    const ctx = nativeContext({
      body: { model: 'm', stream: true, stream_options: { include_usage: true } },
      options: {},
      strictOpenAICompliance: true,
      clock: new ManualClock(),
      requestId: 'r',
    });
    expect(ctx).toMatchObject({ model: 'm', stream: true, includeUsage: true });
  });
});
