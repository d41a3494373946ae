/**
 * One call to one target, as the provider receives it (an in-memory Upstream records it): the URL,
 * the headers built from scratch (no gateway header or key leaves), the body byte for byte unless
 * override_params change it, the per-attempt timeout, native providers' translation, and the 400
 * naming the field for a target that cannot be called.
 */
import { describe, expect, it } from 'vitest';
import { createTargetCaller, withRequestOptions, type CallInput } from '../../../../layers/core/src/gateway/call-target.ts';
import type { Attempt } from '../../../../layers/core/src/gateway/routing/execute.ts';
import { GantryError, ValidationError } from '../../../../layers/core/src/http/errors.ts';
import type { ResolvedTarget } from '../../../../layers/core/src/kernel/routing.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { TrustedHosts } from '../../../../layers/core/src/security/ssrf.ts';
import { FakeUpstream, type CannedReply } from '../../../support/fake-upstream.ts';
import { refusal as gantryRefusal } from '../../../support/unit-deps.ts';

/** The client's text, spaced as it wrote it: sent as it is unless something changes the body. */
const CLIENT_TEXT = '{ "model": "gpt-4o-mini",  "messages": [{"role": "user", "content": "Hi"}] }';
const VALUE = JSON.parse(CLIENT_TEXT) as Record<string, unknown>;

function chatInput(over: Partial<CallInput> = {}, headers: Record<string, string> = {}): CallInput {
  return {
    endpoint: 'chatComplete',
    method: 'POST',
    body: { kind: 'json', text: CLIENT_TEXT, value: VALUE },
    params: {},
    search: '',
    clientHeaders: new Headers(headers),
    forwardHeaders: [],
    fromHeaders: false,
    ...over,
  };
}

const target = (over: Partial<ResolvedTarget> = {}): ResolvedTarget => ({
  path: 'config',
  provider: 'openai',
  override_params: {},
  strict_openai_compliance: true,
  options: {},
  ...over,
});

function caller(input: CallInput, reply?: (url: URL) => CannedReply, trusted = '') {
  const upstream = new FakeUpstream(reply ? (r) => reply(r.url) : undefined);
  const call = createTargetCaller({ upstream, trustedHosts: TrustedHosts.parse(trusted), clock: new ManualClock() }, input);
  return { upstream, call };
}

async function read(a: Attempt): Promise<string> {
  let out = '';
  for await (const chunk of a.body ?? []) out += chunk.toString();
  return out;
}

async function refusal(p: Promise<unknown>): Promise<ValidationError> {
  const err = await gantryRefusal(p);
  expect(err).toBeInstanceOf(ValidationError);
  return err as ValidationError;
}

describe('the request a provider receives', () => {
  it("goes to the provider's endpoint with the client's query, its bytes as the client wrote them", async () => {
    const { upstream, call } = caller(chatInput({ search: '?api-version=1' }, { authorization: 'Bearer sk-client' }));
    const attempt = await call(target());
    expect(attempt.status).toBe(200);
    const [sent] = upstream.sent;
    expect(sent?.method).toBe('POST');
    expect(sent?.url.href).toBe('https://api.openai.com/v1/chat/completions?api-version=1');
    expect(sent?.body).toBe(CLIENT_TEXT);
    expect(sent?.headers).toEqual({ 'user-agent': 'gantry', 'content-type': 'application/json', authorization: 'Bearer sk-client' });
  });

  it("sends the target's own key over the client's, and override_params over the body", async () => {
    const { upstream, call } = caller(chatInput({}, { authorization: 'Bearer sk-client' }));
    await call(target({ api_key: 'sk-config', override_params: { model: 'gpt-4o', temperature: 0 } }));
    expect(upstream.sent[0]?.headers.authorization).toBe('Bearer sk-config');
    expect(upstream.sent[0]?.json).toEqual({ ...VALUE, model: 'gpt-4o', temperature: 0 });
  });

  it('copies only the headers listed for forwarding, never an x-gw-* one', async () => {
    const headers = { 'x-gw-api-key': 'gw_secret', 'x-gw-trace-id': 't', 'x-team': 'blue', 'x-other': 'no', cookie: 'c=1' };
    const { upstream, call } = caller(chatInput({ forwardHeaders: ['x-team', 'x-gw-api-key'] }, headers));
    await call(target({ forward_headers: ['cookie', 'x-gw-trace-id'] }));
    const sent = upstream.sent[0]?.headers ?? {};
    expect(sent['x-team']).toBe('blue');
    expect(sent.cookie).toBe('c=1');
    expect(Object.keys(sent).filter((h) => h.startsWith('x-gw-') || h === 'x-other')).toEqual([]);
  });

  it('fills path parameters URL-encoded into the provider template', async () => {
    const { upstream, call } = caller(chatInput({ endpoint: 'retrieveFile', method: 'GET', body: { kind: 'none' }, params: { file_id: 'file a+b' } }));
    await call(target());
    expect(upstream.sent[0]?.url.href).toBe('https://api.openai.com/v1/files/file%20a%2Bb');
    expect(upstream.sent[0]?.body).toBeUndefined();
  });

  it("sends a provider option (OpenAI's project) as the provider's header; request headers fill only unmanaged targets", async () => {
    const { upstream, call } = caller(chatInput());
    const withOptions = withRequestOptions(call, { openai_project: 'proj-header' });
    await withOptions(target());
    await withOptions(target({ options: { openai_project: 'proj-config' } }));
    await withOptions(target({ managed: true }));
    expect(upstream.sent.map((s) => s.headers['openai-project'])).toEqual(['proj-header', 'proj-config', undefined]);
  });

  it('sends to a trusted custom host instead of the provider base URL', async () => {
    const { upstream, call } = caller(chatInput(), undefined, '127.0.0.1');
    await call(target({ custom_host: 'http://127.0.0.1:8080/v1/' }));
    expect(upstream.sent[0]?.url.href).toBe('http://127.0.0.1:8080/v1/chat/completions');
  });
});

describe('timeouts', () => {
  it("sends the target's request_timeout as the attempt's timeout, and x-gw-request-timeout over it", async () => {
    const config = caller(chatInput());
    await config.call(target({ request_timeout: 1234 }));
    expect(config.upstream.sent[0]?.timeoutMs).toBe(1234);
    const header = caller(chatInput({ headerTimeoutMs: 50 }));
    await header.call(target({ request_timeout: 1234 }));
    expect(header.upstream.sent[0]?.timeoutMs).toBe(50);
  });

  it('ends a call the provider never answers with a 408 once its timeout passed', async () => {
    const { call } = caller(chatInput(), () => ({ hang: true }));
    const err = await call(target({ request_timeout: 5 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GantryError);
    expect(err).toMatchObject({ status: 408, openaiCode: 'request_timeout' });
  });
});

describe('targets that cannot be called: 400 naming the field', () => {
  it('names x-gw-provider for a missing or unknown provider made from headers, the config path otherwise', async () => {
    const fromHeaders = caller(chatInput({ fromHeaders: true }));
    expect((await refusal(fromHeaders.call(target({ provider: undefined })))).problems[0]?.path).toBe('x-gw-provider');
    const unknown = await refusal(fromHeaders.call(target({ provider: 'nope' })));
    expect(unknown.problems[0]).toMatchObject({ path: 'x-gw-provider', message: expect.stringContaining('unknown provider "nope"') });
    const fromConfig = caller(chatInput());
    expect((await refusal(fromConfig.call(target({ path: 'config.targets[1]', provider: 'nope' })))).problems[0]?.path).toBe('config.targets[1].provider');
    expect(fromHeaders.upstream.sent).toHaveLength(0);
  });

  it('names the provider field when the provider lacks the endpoint', async () => {
    const { call, upstream } = caller(chatInput({ endpoint: 'imageGenerate' }));
    const err = await refusal(call(target({ provider: 'deepseek' })));
    expect(err.problems[0]).toMatchObject({ path: 'config.provider', message: 'provider deepseek does not support the imageGenerate endpoint' });
    expect(upstream.sent).toHaveLength(0);
  });

  it('asks for custom_host for a provider that runs on your own machine', async () => {
    const err = await refusal(caller(chatInput()).call(target({ provider: 'ollama' })));
    expect(err.problems[0]?.path).toBe('config.custom_host');
  });

  it('refuses a custom host that is not trusted (a private address)', async () => {
    const { call, upstream } = caller(chatInput({ fromHeaders: true }));
    const err = await refusal(call(target({ custom_host: 'http://10.0.0.5/v1' })));
    expect(err.problems[0]?.path).toBe('x-gw-custom-host');
    expect(upstream.sent).toHaveLength(0);
  });

  it('names the config key a header could not be sent with (a line break in api_key), never the header', async () => {
    const err = await refusal(caller(chatInput()).call(target({ path: 'config.targets[0]', api_key: 'sk-a\nb' })));
    expect(err.problems[0]?.path).toBe('config.targets[0].api_key');
  });
});

describe('batch output', () => {
  const input = chatInput({ endpoint: 'getBatchOutput', method: 'GET', body: { kind: 'none' }, params: { batch_id: 'batch_1' } });

  it("reads the batch, then streams its output file's content", async () => {
    const { call, upstream } = caller(input, (url) =>
      url.pathname.endsWith('/batches/batch_1') ? { json: { id: 'batch_1', status: 'completed', output_file_id: 'file-9' } } : { text: '{"line":1}\n' },
    );
    const attempt = await call(target());
    expect(upstream.sent.map((s) => `${s.method} ${s.url.pathname}`)).toEqual(['GET /v1/batches/batch_1', 'GET /v1/files/file-9/content']);
    expect(await read(attempt)).toBe('{"line":1}\n');
  });

  it('answers 404 batch_output_not_ready naming batch_id while the batch has no output file', async () => {
    const { call } = caller(input, () => ({ json: { id: 'batch_1', status: 'in_progress', output_file_id: null } }));
    const err = await call(target()).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, param: 'batch_id', openaiCode: 'batch_output_not_ready' });
  });
});

describe('native providers', () => {
  it("sends Anthropic its own format with its key header, and answers in OpenAI's with the usage reported", async () => {
    const usage: unknown[] = [];
    const input = chatInput({ onUsage: (u) => void usage.push(u) }, { authorization: 'Bearer sk-ant-client' });
    const anthropicAnswer = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4',
      content: [{ type: 'text', text: 'Bonjour' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 4 },
    };
    const { call, upstream } = caller(input, () => ({ json: anthropicAnswer }));
    const attempt = await call(target({ provider: 'anthropic', override_params: { model: 'claude-sonnet-4' } }));
    const [sent] = upstream.sent;
    expect(sent?.url.href).toBe('https://api.anthropic.com/v1/messages');
    expect(sent?.headers['x-api-key']).toBe('sk-ant-client');
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.json).toMatchObject({ model: 'claude-sonnet-4', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
    expect(sent?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const answer = JSON.parse(await read(attempt));
    expect(answer.choices[0].message).toMatchObject({ role: 'assistant', content: 'Bonjour' });
    expect(answer.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(usage).toEqual([{ usage: expect.objectContaining({ prompt_tokens: 3, completion_tokens: 4 }), model: 'claude-sonnet-4' }]);
  });
});
