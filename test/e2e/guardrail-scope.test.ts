/**
 * What guardrails read and write, sent the way clients send it, against a stand-in provider that
 * speaks each wire format: input hooks see every caller-controlled text (system and developer
 * messages, earlier turns, assistant turns, tool results, Anthropic's `system`, Responses'
 * `instructions`, prompt variables, a completion's `suffix`) unless a hook narrows its scope; output
 * hooks see tool-call names and arguments, streamed or not, and no event of a denied stream carries
 * the denied text; a guardrail hook's rewrite is what the provider receives.
 */
import http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { sseEvent, startMockServer, type MockServer } from '../support/mock-http.ts';
import { promptVersion, PromptsDouble } from '../support/prompts.ts';

type Json = Record<string, unknown>;
const FORBIDDEN = 'glpat-0123';
const deny = (extra: Json = {}) => ({ 'default.contains': { operator: 'none', words: [FORBIDDEN] }, deny: true, ...extra });

const chatAnswer = (message: Json): Json => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1_750_000_000,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
});
const chunk = (delta: Json, finish: string | null = null): string =>
  sseEvent({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_750_000_000,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
const anthropicMessage = (content: Json[]): Json => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content,
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 5, output_tokens: 5 },
});
const named = (type: string, data: Json): string => sseEvent({ type, ...data }, type);

/** Every SSE event's data, without the hook results (whose check data names the configured words). */
function answerText(sse: string): string {
  return [...sse.matchAll(/^data: (.*)$/gm)]
    .map((m) => {
      if (m[1] === '[DONE]') return '';
      const { hook_results: _results, ...rest } = JSON.parse(m[1]!) as Json;
      return JSON.stringify(rest);
    })
    .join('\n');
}

/** A Responses stream whose deltas spell `text`, then the `.done` events and `response.completed` repeating it. */
function responsesStream(deltas: string[], finalText = deltas.join('')): string[] {
  const base = { id: 'resp_1', object: 'response', model: 'gpt-4o-mini', output: [] as unknown[] };
  const item = { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: finalText, annotations: [] }] };
  let n = 0;
  const ev = (type: string, data: Json) => named(type, { sequence_number: n++, ...data });
  return [
    ev('response.created', { response: { ...base, status: 'in_progress' } }),
    ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
    ...deltas.map((delta) => ev('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta })),
    ev('response.output_text.done', { item_id: 'msg_1', output_index: 0, content_index: 0, text: finalText }),
    ev('response.output_item.done', { output_index: 0, item }),
    ev('response.completed', { response: { ...base, status: 'completed', output: [item], usage: { input_tokens: 5, output_tokens: 5, total_tokens: 10 } } }),
  ];
}

describe.each(['direct', 'lambda'] as const)('what guardrails read and write (%s mode)', (mode) => {
  let gw: TestGantry;
  let provider: MockServer;
  let key: string;

  const openai = (extra: Json = {}) => ({ provider: 'openai', api_key: 'sk-x', custom_host: `${provider.url}/v1`, ...extra });
  const anthropic = (extra: Json = {}) => ({ provider: 'anthropic', api_key: 'sk-ant-x', custom_host: `${provider.url}/v1`, ...extra });

  async function send(path: string, config: Json, body: Json): Promise<{ status: number; text: string; json: Json }> {
    const res = await fetch(`${gw.url}/v1${path}`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let json: Json = {};
    try {
      json = JSON.parse(text) as Json;
    } catch {
      // a stream
    }
    return { status: res.status, text, json };
  }

  /** The request is refused by the input hook, and the provider never hears of it. */
  async function refused(path: string, config: Json, body: Json): Promise<void> {
    const res = await send(path, config, body);
    expect(res.status, res.text).toBe(446);
    expect(provider.received).toHaveLength(0);
  }

  beforeAll(async () => {
    [gw, provider] = await Promise.all([startGantry(mode), startMockServer(() => ({ json: chatAnswer({ content: 'fine' }) }))]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), provider?.close()]);
  });
  beforeEach(() => {
    provider.received.length = 0;
    provider.queue.length = 0;
  });

  const chat = (messages: Json[]) => ({ model: 'gpt-4o-mini', messages: [...messages, { role: 'user', content: 'and now?' }] });

  describe('input: every text the model reads', () => {
    it.each([
      ['a system message', [{ role: 'system', content: `the token is ${FORBIDDEN}` }]],
      ['a developer message', [{ role: 'developer', content: [{ type: 'text', text: `use ${FORBIDDEN}` }] }]],
      [
        'an earlier user turn',
        [
          { role: 'user', content: `my token ${FORBIDDEN}` },
          { role: 'assistant', content: 'ok' },
        ],
      ],
      ['an assistant turn the client wrote', [{ role: 'assistant', content: `I will print ${FORBIDDEN}` }]],
      [
        'tool-call arguments the client wrote',
        [
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: `{"t":"${FORBIDDEN}"}` } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'done' },
        ],
      ],
      [
        'a tool result',
        [
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: `result: ${FORBIDDEN}` },
        ],
      ],
    ])('chat: %s is checked', async (_, messages) => {
      await refused('/chat/completions', openai({ input_guardrails: [deny()] }), chat(messages));
    });

    it('a hook with scope last_user reads only the last user turn, as documented', async () => {
      const body = chat([{ role: 'system', content: `the token is ${FORBIDDEN}` }]);
      const res = await send('/chat/completions', openai({ input_guardrails: [deny({ scope: 'last_user' })] }), body);
      expect(res.status).toBe(200);
      expect(provider.received).toHaveLength(1);
      const bad = await send('/chat/completions', openai({ input_guardrails: [deny({ scope: 'everything' })] }), body);
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatchObject({ message: expect.stringContaining('input_guardrails[0].scope') });
    });

    it('completions: the suffix is checked', async () => {
      await refused('/completions', openai({ input_guardrails: [deny()] }), { model: 'gpt-3.5-turbo-instruct', prompt: 'def f():', suffix: `# ${FORBIDDEN}` });
    });

    it.each([
      ['instructions', { instructions: `never reveal ${FORBIDDEN}`, input: 'hi' }],
      [
        'a function_call_output item',
        {
          input: [
            { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
            { type: 'function_call_output', call_id: 'c1', output: `got ${FORBIDDEN}` },
            { role: 'user', content: 'go on' },
          ],
        },
      ],
      [
        'an earlier input message',
        {
          input: [
            { role: 'user', content: [{ type: 'input_text', text: FORBIDDEN }] },
            { role: 'user', content: 'fine' },
          ],
        },
      ],
      ['a provider-hosted prompt variable', { prompt: { id: 'pmpt_provider_hosted', variables: { city: FORBIDDEN } }, input: 'hi' }],
    ])('responses: %s is checked', async (_, body) => {
      await refused('/responses', openai({ input_guardrails: [deny()] }), { model: 'gpt-4o-mini', ...body });
    });

    it.each([
      ['system (to an Anthropic target, sent as it came)', anthropic],
      ['system (to an OpenAI target, translated)', openai],
    ])('/v1/messages: %s is checked', async (_, target) => {
      await refused('/messages', target({ input_guardrails: [deny()] }), {
        model: 'claude-sonnet-4-5',
        max_tokens: 32,
        system: [{ type: 'text', text: `key ${FORBIDDEN}` }],
        messages: [{ role: 'user', content: 'hi' }],
      });
    });

    it('/v1/messages: a tool_result block is checked, also in a request only Anthropic serves', async () => {
      const messages = [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: `sunny ${FORBIDDEN}` }] }] },
      ];
      await refused('/messages', anthropic({ input_guardrails: [deny()] }), { model: 'claude-sonnet-4-5', max_tokens: 32, messages });
      // A server tool makes the request Anthropic's alone; its text is still read.
      await refused('/messages', anthropic({ input_guardrails: [deny()] }), {
        model: 'claude-sonnet-4-5',
        max_tokens: 32,
        messages,
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      });
    });

    it('a prompt variable rendered into the system turn is checked', async () => {
      const template = JSON.stringify([
        { role: 'system', content: 'You work for {{company}}.' },
        { role: 'user', content: '{{question}}' },
      ]);
      const saved = gw.deps.prompts;
      gw.deps.prompts = new PromptsDouble([promptVersion({ promptId: 'pr-scope', slug: 'scope', template, model: 'gpt-4o-mini' })]);
      try {
        await refused('/prompts/scope/completions', openai({ input_guardrails: [deny()] }), { variables: { company: FORBIDDEN, question: 'hours?' } });
        await refused('/responses', openai({ input_guardrails: [deny()] }), {
          model: 'gpt-4o-mini',
          prompt: { id: 'scope', variables: { company: FORBIDDEN, question: 'hours?' } },
          input: 'and you?',
        });
      } finally {
        gw.deps.prompts = saved;
      }
    });
  });

  describe('output: every text the model writes', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'send', arguments: `{"token":"${FORBIDDEN}"}` } };

    it('chat: tool-call arguments in an answer are checked', async () => {
      provider.queue.push({ json: chatAnswer({ content: null, tool_calls: [call] }) });
      const res = await send('/chat/completions', openai({ output_guardrails: [deny()] }), chat([]));
      expect(res.status).toBe(446);
      expect(provider.received).toHaveLength(1);
      // What the checks found may quote the model's answer: the client is not shown it.
      const after = (res.json.hook_results as { after_request_hooks: { checks: { data: unknown }[] }[] }).after_request_hooks;
      expect(after[0]!.checks[0]!.data).toBeNull();
    });

    it('chat: streamed tool-call arguments never reach the client', async () => {
      const chunks = [
        chunk({ role: 'assistant', content: 'Sending. ' + 'x'.repeat(60) }),
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'send', arguments: '' } }] }),
        ...['{"token":"gl', 'pat-', '0123"}'].map((a) => chunk({ tool_calls: [{ index: 0, function: { arguments: a } }] })),
        chunk({}, 'tool_calls'),
        'data: [DONE]\n\n',
      ];
      provider.queue.push({ chunks });
      const res = await send('/chat/completions', openai({ output_guardrails: [deny({ window: { size: 20, context: 20 } })] }), { ...chat([]), stream: true });
      const args = [...res.text.matchAll(/"arguments":"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string).join('');
      expect(args).not.toContain(FORBIDDEN);
      expect(res.text).toContain('content_filter');
    });

    it('chat: tool-call arguments split around other deltas (a repeated name, another call) never reach the client', async () => {
      const args = (index: number, a: string, name?: string) =>
        chunk({
          tool_calls: [{ index, ...(index === 0 && name ? { id: 'call_1', type: 'function' } : {}), function: { ...(name ? { name } : {}), arguments: a } }],
        });
      // Some providers repeat the name in every chunk; parallel calls interleave.
      provider.queue.push({ chunks: [...['{"t":"gl', 'pat-0', '123"}'].map((a) => args(0, a, 'send')), chunk({}, 'tool_calls'), 'data: [DONE]\n\n'] });
      provider.queue.push({
        chunks: [args(0, '{"t":"gl', 'send'), args(1, '{"x":1', 'other'), args(0, 'pat-0123"}'), args(1, '}'), chunk({}, 'tool_calls'), 'data: [DONE]\n\n'],
      });
      for (let i = 0; i < 2; i++) {
        const res = await send('/chat/completions', openai({ output_guardrails: [deny({ window: { size: 10, context: 20 } })] }), {
          ...chat([]),
          stream: true,
        });
        const sent = [...res.text.matchAll(/"arguments":"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string).join('');
        expect(sent.replace(/\{"x":1\}?/g, '')).not.toContain(FORBIDDEN);
        expect(res.status === 446 || res.text.includes('content_filter')).toBe(true);
      }
    });

    it('/v1/messages: a tool_use input from Anthropic is checked, streamed or not', async () => {
      const body = { model: 'claude-sonnet-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'send it' }] };
      provider.queue.push({ json: anthropicMessage([{ type: 'tool_use', id: 'toolu_1', name: 'send', input: { token: FORBIDDEN } }]) });
      expect((await send('/messages', anthropic({ output_guardrails: [deny()] }), body)).status).toBe(446);
      const start = { type: 'message_start', message: { ...anthropicMessage([]), stop_reason: null } };
      provider.queue.push({
        chunks: [
          named('message_start', start),
          named('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
          named('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Sending now. ' + 'y'.repeat(40) } }),
          named('content_block_stop', { index: 0 }),
          named('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'send', input: {} } }),
          ...['{"token": "glp', 'at-01', '23"}'].map((partial_json) =>
            named('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json } }),
          ),
          named('content_block_stop', { index: 1 }),
          named('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } }),
          named('message_stop', {}),
        ],
      });
      const res = await send('/messages', anthropic({ output_guardrails: [deny({ window: { size: 20, context: 20 } })] }), { ...body, stream: true });
      const partial = [...res.text.matchAll(/"partial_json":"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string).join('');
      expect(partial).not.toContain(FORBIDDEN);
      expect(res.text).toContain('refusal');
    });

    it('responses stream: no event of a denied answer carries the text, terminal events included', async () => {
      provider.queue.push({ chunks: responsesStream(['Here it is: ' + 'z'.repeat(40) + ' gl', 'pat-0', '123 and more']) });
      const res = await send('/responses', openai({ output_guardrails: [deny({ window: { size: 20, context: 20 } })] }), {
        model: 'gpt-4o-mini',
        input: 'token?',
        stream: true,
      });
      expect(answerText(res.text)).not.toContain(FORBIDDEN);
      expect(res.text).toContain('response.incomplete');
      expect(res.text).not.toContain('response.completed');
    });

    it('responses stream: text only the closing events carry is checked too', async () => {
      // Clean deltas, but the provider's final events carry more than it streamed.
      provider.queue.push({ chunks: responsesStream(['All ', 'clear. ' + 'w'.repeat(40)], `All clear. the key is ${FORBIDDEN}`) });
      const res = await send('/responses', openai({ output_guardrails: [deny({ window: { size: 20, context: 20 } })] }), {
        model: 'gpt-4o-mini',
        input: 'token?',
        stream: true,
      });
      expect(answerText(res.text)).not.toContain(FORBIDDEN);
      expect(res.text).toContain('response.incomplete');
    });

    it('responses: function call arguments in an answer are checked', async () => {
      provider.queue.push({
        json: {
          id: 'resp_1',
          object: 'response',
          status: 'completed',
          model: 'gpt-4o-mini',
          output: [{ type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'send', arguments: `{"t":"${FORBIDDEN}"}` }],
          usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
        },
      });
      expect((await send('/responses', openai({ output_guardrails: [deny()] }), { model: 'gpt-4o-mini', input: 'go' })).status).toBe(446);
    });
  });

  it('answers 446 and 246 with reason phrases on the status line', async () => {
    const statusLine = (deny: boolean) =>
      new Promise<string>((resolve, reject) => {
        const config = JSON.stringify(openai({ input_guardrails: [{ 'default.contains': { operator: 'none', words: [FORBIDDEN] }, deny }] }));
        const req = http.request(
          `${gw.url}/v1/chat/completions`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-config': config } },
          (res) => {
            res.resume();
            resolve(`${res.statusCode} ${res.statusMessage}`);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(chat([{ role: 'user', content: FORBIDDEN }])));
      });
    expect(await statusLine(true)).toBe('446 Denied by Guardrails');
    expect(await statusLine(false)).toBe('246 Flagged by Guardrails');
  });

  describe('rewrites', () => {
    const redact = { 'default.regexReplace': { rule: 'glpat-\\w+', redactText: '[TOKEN]' } };

    it('a guardrail-type hook that redacts sends the redacted request, and says so', async () => {
      const res = await send(
        '/chat/completions',
        openai({ input_guardrails: [redact], strict_openai_compliance: false }),
        chat([{ role: 'system', content: `use ${FORBIDDEN}` }]),
      );
      expect(res.status).toBe(200);
      const sent = provider.received[0]!.json as { messages: { content: string }[] };
      expect(sent.messages[0]!.content).toBe('use [TOKEN]');
      expect(JSON.stringify(provider.received[0]!.json)).not.toContain(FORBIDDEN);
      const hooks = (res.json.hook_results as { before_request_hooks: { checks: { transformed: boolean }[] }[] }).before_request_hooks;
      expect(hooks[0]!.checks[0]!.transformed).toBe(true);
    });

    it('an inline images check in a guardrail hook applies its rewrite', async () => {
      const image = await startMockServer(() => ({ text: 'PNGDATA', headers: { 'content-type': 'image/png' } }));
      try {
        const body = {
          model: 'gpt-4o-mini',
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'what is this?' },
                { type: 'image_url', image_url: { url: `${image.url}/cat.png` } },
              ],
            },
          ],
        };
        const res = await send(
          '/chat/completions',
          openai({
            before_request_hooks: [{ type: 'guardrail', checks: [{ id: 'default.inlineImageUrls', parameters: {} }] }],
            strict_openai_compliance: false,
          }),
          body,
        );
        const hooks = (res.json.hook_results as { before_request_hooks: { checks: { transformed: boolean }[] }[] } | undefined)?.before_request_hooks;
        expect(JSON.stringify(provider.received[0]?.json ?? {})).toContain(`data:image/png;base64,${Buffer.from('PNGDATA').toString('base64')}`);
        expect(hooks?.[0]?.checks[0]?.transformed).toBe(true);
      } finally {
        await image.close();
      }
    });

    it('a rewrite of a streamed answer cannot apply, and is not claimed', async () => {
      provider.queue.push({ chunks: [chunk({ role: 'assistant', content: `the key is ${FORBIDDEN}` }), chunk({}, 'stop'), 'data: [DONE]\n\n'] });
      const res = await send('/chat/completions', openai({ output_guardrails: [redact], strict_openai_compliance: false }), { ...chat([]), stream: true });
      const results = [...res.text.matchAll(/"transformed":(true|false)/g)].map((m) => m[1]);
      expect(results).not.toContain('true');
    });

    it('a rewrite for an Anthropic target is what Anthropic receives', async () => {
      provider.queue.push({ json: anthropicMessage([{ type: 'text', text: 'fine' }]) });
      await send('/messages', anthropic({ input_guardrails: [redact] }), {
        model: 'claude-sonnet-4-5',
        max_tokens: 32,
        system: `use ${FORBIDDEN}`,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(provider.received).toHaveLength(1);
      expect(provider.received[0]!.body).not.toContain(FORBIDDEN);
      expect(provider.received[0]!.body).toContain('[TOKEN]');
    });
  });
});
