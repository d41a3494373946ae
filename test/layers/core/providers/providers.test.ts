/**
 * Every OpenAI-wire provider, one row each: a chat request (and an embeddings request where the
 * provider serves them) goes through the local server's real pipeline and caller; a redirecting
 * upstream hands it to a mock that records what the provider would have received. The expected
 * URLs are written out here, independently of the declarations.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findProvider, providerIds } from '../../../../layers/core/src/providers/registry.ts';
import { startGantry, type TestGantry } from '../../../support/gantry.ts';
import { KEYS, verifySigV4 } from '../../../support/mock-bedrock.ts';
import { keyRecord } from '../../../support/records.ts';
import { startMockOpenAI, type MockOpenAI, type Received } from '../../../support/mock-openai.ts';
import { ORIGINAL_URL_HEADER, RedirectingUpstream } from '../../../support/redirect-upstream.ts';

interface Row {
  id: string;
  /** Full URL the chat request must reach; absent: the provider has no chat endpoint. */
  chat?: string;
  /** Full URL the embeddings request must reach; absent: no embeddings endpoint. */
  embed?: string;
  /** Local providers: the custom host sent with the request. */
  host?: string;
  /** Provider options sent as `x-gw-<option>` headers. */
  headers?: Record<string, string>;
}

const ROWS: Row[] = [
  { id: 'openai', chat: 'https://api.openai.com/v1/chat/completions', embed: 'https://api.openai.com/v1/embeddings' },
  { id: 'groq', chat: 'https://api.groq.com/openai/v1/chat/completions' },
  { id: 'together-ai', chat: 'https://api.together.ai/v1/chat/completions', embed: 'https://api.together.ai/v1/embeddings' },
  { id: 'fireworks-ai', chat: 'https://api.fireworks.ai/inference/v1/chat/completions', embed: 'https://api.fireworks.ai/inference/v1/embeddings' },
  { id: 'deepseek', chat: 'https://api.deepseek.com/chat/completions' },
  { id: 'mistral-ai', chat: 'https://api.mistral.ai/v1/chat/completions', embed: 'https://api.mistral.ai/v1/embeddings' },
  { id: 'perplexity-ai', chat: 'https://api.perplexity.ai/chat/completions' },
  { id: 'x-ai', chat: 'https://api.x.ai/v1/chat/completions' },
  { id: 'cerebras', chat: 'https://api.cerebras.ai/v1/chat/completions' },
  { id: 'sambanova', chat: 'https://api.sambanova.ai/v1/chat/completions', embed: 'https://api.sambanova.ai/v1/embeddings' },
  { id: 'deepinfra', chat: 'https://api.deepinfra.com/v1/openai/chat/completions', embed: 'https://api.deepinfra.com/v1/openai/embeddings' },
  { id: 'openrouter', chat: 'https://openrouter.ai/api/v1/chat/completions' },
  { id: 'novita-ai', chat: 'https://api.novita.ai/openai/v1/chat/completions', embed: 'https://api.novita.ai/openai/v1/embeddings' },
  { id: 'nebius', chat: 'https://api.tokenfactory.nebius.com/v1/chat/completions', embed: 'https://api.tokenfactory.nebius.com/v1/embeddings' },
  { id: 'hyperbolic', chat: 'https://api.hyperbolic.xyz/v1/chat/completions' },
  { id: 'lambda', chat: 'https://api.lambda.ai/v1/chat/completions' },
  { id: 'moonshot', chat: 'https://api.moonshot.ai/v1/chat/completions' },
  { id: 'zhipu', chat: 'https://open.bigmodel.cn/api/paas/v4/chat/completions', embed: 'https://open.bigmodel.cn/api/paas/v4/embeddings' },
  { id: 'z-ai', chat: 'https://api.z.ai/api/paas/v4/chat/completions' },
  {
    id: 'dashscope',
    chat: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1/chat/completions',
    embed: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1/embeddings',
  },
  { id: 'siliconflow', chat: 'https://api.siliconflow.cn/v1/chat/completions', embed: 'https://api.siliconflow.cn/v1/embeddings' },
  { id: 'github', chat: 'https://models.github.ai/inference/chat/completions', embed: 'https://models.github.ai/inference/embeddings' },
  { id: 'huggingface', chat: 'https://router.huggingface.co/v1/chat/completions' },
  { id: 'anyscale', chat: 'https://api.endpoints.anyscale.com/v1/chat/completions', embed: 'https://api.endpoints.anyscale.com/v1/embeddings' },
  { id: 'upstage', chat: 'https://api.upstage.ai/v1/chat/completions', embed: 'https://api.upstage.ai/v1/embeddings' },
  { id: 'nscale', chat: 'https://inference.api.nscale.com/v1/chat/completions' },
  { id: 'featherless-ai', chat: 'https://api.featherless.ai/v1/chat/completions' },
  { id: 'inference-net', chat: 'https://api.inference.net/v1/chat/completions' },
  { id: 'nvidia-nim', chat: 'https://integrate.api.nvidia.com/v1/chat/completions', embed: 'https://integrate.api.nvidia.com/v1/embeddings' },
  { id: 'kluster-ai', chat: 'https://api.kluster.ai/v1/chat/completions' },
  { id: 'ai21', chat: 'https://api.ai21.com/studio/v1/chat/completions' },
  {
    id: 'workers-ai',
    headers: { 'x-gw-workers-ai-account-id': 'acc-123' },
    chat: 'https://api.cloudflare.com/client/v4/accounts/acc-123/ai/v1/chat/completions',
    embed: 'https://api.cloudflare.com/client/v4/accounts/acc-123/ai/v1/embeddings',
  },
  // Passthrough only: no unified endpoint (their passthrough calls are tested below).
  { id: 'stability-ai' },
  { id: 'replicate' },
  { id: 'hf-inference' },
  { id: 'jina', embed: 'https://api.jina.ai/v1/embeddings' },
  { id: 'voyage', embed: 'https://api.voyageai.com/v1/embeddings' },
  { id: 'ollama', host: 'http://localhost:11434/v1', chat: 'http://localhost:11434/v1/chat/completions', embed: 'http://localhost:11434/v1/embeddings' },
  { id: 'lm-studio', host: 'http://localhost:1234/v1', chat: 'http://localhost:1234/v1/chat/completions', embed: 'http://localhost:1234/v1/embeddings' },
  { id: 'vllm', host: 'http://localhost:8000/v1', chat: 'http://localhost:8000/v1/chat/completions', embed: 'http://localhost:8000/v1/embeddings' },
  { id: 'llama-cpp', host: 'http://localhost:8080/v1', chat: 'http://localhost:8080/v1/chat/completions', embed: 'http://localhost:8080/v1/embeddings' },
];

describe('OpenAI-wire providers', () => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const upstream = new RedirectingUpstream();

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry('direct', {}, { upstream }), startMockOpenAI()]);
    upstream.target = mock.url;
    // Stored directly: these tests are about providers, not about the key routes.
    const made = keyRecord({ organisation_id: gw.boot.organisationId, workspace_id: gw.boot.workspaceId }, gw.deps.clock.now());
    await gw.deps.repos.apiKeys.create(made.record);
    key = made.key;
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  const call = (path: string, row: Row, body: unknown, extra: Record<string, string> = {}) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gw-api-key': key,
        'x-gw-provider': row.id,
        authorization: `Bearer sk-test-${row.id}`,
        ...(row.host ? { 'x-gw-custom-host': row.host } : {}),
        ...row.headers,
        ...extra,
      },
      body: JSON.stringify(body),
    });

  /** What the provider received: exactly one request, at `url`, with only its own headers. */
  function expectReceived(row: Row, url: string, body: unknown): Received {
    expect(mock.received).toHaveLength(1);
    const got = mock.received[0]!;
    expect(got.method).toBe('POST');
    expect(got.headers[ORIGINAL_URL_HEADER]).toBe(url);
    expect(got.path).toBe(new URL(url).pathname);
    expect(got.headers.authorization).toBe(`Bearer sk-test-${row.id}`);
    expect(got.headers['content-type']).toBe('application/json');
    expect(Object.keys(got.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(JSON.stringify(got.headers)).not.toContain(key);
    expect(JSON.parse(got.body)).toEqual(body);
    return got;
  }

  it('has a row for every registered provider (and no more)', () => {
    // Native-format providers have their own tests (native/ and test/e2e/native-providers.test.ts).
    expect(ROWS.map((r) => r.id).sort()).toEqual(
      providerIds()
        .filter((id) => !findProvider(id)?.native)
        .sort(),
    );
    expect(ROWS.length).toBeGreaterThanOrEqual(37);
  });

  describe.each(ROWS)('$id', (row) => {
    const chatBody = { model: `${row.id}-model`, messages: [{ role: 'user', content: 'Hi' }], temperature: 0.3, vendor_option: { keep: true } };
    const embedBody = { model: `${row.id}-embedder`, input: 'hello world', encoding_format: 'float', vendor_option: 7 };

    if (row.chat) {
      const url = row.chat;
      it(`chat goes to ${url}`, async () => {
        const res = await call('/v1/chat/completions', row, chatBody);
        expect(res.status).toBe(200);
        expect(res.headers.get('x-gw-provider')).toBe(row.id);
        expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
        expectReceived(row, url, chatBody);
      });
    } else {
      it('has no chat endpoint: 400 naming the provider and the endpoint', async () => {
        const res = await call('/v1/chat/completions', row, chatBody);
        expect(res.status).toBe(400);
        const { error } = (await res.json()) as { error: { message: string; param: string } };
        expect(error.param).toBe('x-gw-provider');
        expect(error.message).toContain(row.id);
        expect(error.message).toContain('chatComplete');
        expect(mock.received).toHaveLength(0);
      });
    }

    if (row.embed) {
      const url = row.embed;
      it(`embeddings go to ${url}`, async () => {
        const res = await call('/v1/embeddings', row, embedBody);
        expect(res.status).toBe(200);
        expect(((await res.json()) as { object: string }).object).toBe('list');
        expectReceived(row, url, embedBody);
      });
    } else {
      it('has no embeddings endpoint: 400 naming the provider and the endpoint', async () => {
        const res = await call('/v1/embeddings', row, embedBody);
        expect(res.status).toBe(400);
        const { error } = (await res.json()) as { error: { message: string } };
        expect(error.message).toContain(row.id);
        expect(error.message).toContain('embed');
        expect(mock.received).toHaveLength(0);
      });
    }
  });

  describe.each(ROWS.filter((r) => r.host))('$id without a custom host', (row) => {
    it('answers 400 naming the provider and x-gw-custom-host', async () => {
      const res = await call('/v1/chat/completions', { id: row.id }, { model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: { message: string; param: string; code: string } };
      expect(error.param).toBe('x-gw-custom-host');
      expect(error.code).toBe('invalid_value');
      expect(error.message).toContain(row.id);
      expect(mock.received).toHaveLength(0);
    });
  });

  it('workers-ai without an account id: 400 naming x-gw-workers-ai-account-id', async () => {
    const res = await call('/v1/chat/completions', { id: 'workers-ai' }, { model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; param: string } };
    expect(error.param).toBe('x-gw-workers-ai-account-id');
    expect(error.message).toContain('workers-ai');
    expect(mock.received).toHaveLength(0);
  });

  it.each(['../x', 'a/b', 'a?b', 'a b'])('workers-ai refuses the account id %j: 400 naming the header', async (id) => {
    const res = await call(
      '/v1/chat/completions',
      { id: 'workers-ai' },
      { model: 'm', messages: [{ role: 'user', content: 'Hi' }] },
      { 'x-gw-workers-ai-account-id': id },
    );
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { param: string; code: string } };
    expect(error.param).toBe('x-gw-workers-ai-account-id');
    expect(mock.received).toHaveLength(0);
  });

  it('workers-ai without an account id in a config target: 400 naming the target option', async () => {
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: 'workers-ai', api_key: 'cf-token' }] };
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { param: string } };
    expect(error.param).toMatch(/workers_ai_account_id$/);
    expect(mock.received).toHaveLength(0);
  });

  it('workers-ai takes the account id from a config target', async () => {
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: 'workers-ai', api_key: 'cf-token', workers_ai_account_id: '0123abcd' }] };
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) },
      // With the provider named, "@cf/..." is Workers AI's own model id, not a managed "@slug/model".
      body: JSON.stringify({ model: '@cf/baai/bge-large-en-v1.5', input: 'hi' }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const got = mock.received[0]!;
    expect(JSON.parse(got.body).model).toBe('@cf/baai/bge-large-en-v1.5');
    expect(got.headers[ORIGINAL_URL_HEADER]).toBe('https://api.cloudflare.com/client/v4/accounts/0123abcd/ai/v1/embeddings');
    expect(got.headers.authorization).toBe('Bearer cf-token');
  });

  it('mistral-ai text completions go to the fill-in-the-middle endpoint, unknown fields kept', async () => {
    const body = { model: 'codestral-latest', prompt: 'def f(', suffix: 'return x', max_tokens: 16, safe_prompt: true };
    const res = await call('/v1/completions', { id: 'mistral-ai' }, body);
    expect(res.status).toBe(200);
    expectReceived({ id: 'mistral-ai' }, 'https://api.mistral.ai/v1/fim/completions', body);
  });

  describe('passthrough with the provider key', () => {
    const send = (id: string, path: string, init: { headers?: Record<string, string>; body?: BodyInit; method?: string }) =>
      fetch(`${gw.url}${path}`, {
        method: init.method ?? 'POST',
        headers: { 'x-gw-api-key': key, 'x-gw-provider': id, authorization: `Bearer sk-test-${id}`, ...init.headers },
        ...(init.body !== undefined ? { body: init.body } : {}),
      });

    function onlyRequest(id: string, url: string, method = 'POST'): Received {
      expect(mock.received).toHaveLength(1);
      const got = mock.received[0]!;
      expect(got.method).toBe(method);
      expect(got.headers[ORIGINAL_URL_HEADER]).toBe(url);
      expect(got.headers.authorization).toBe(`Bearer sk-test-${id}`);
      expect(Object.keys(got.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
      expect(JSON.stringify(got.headers)).not.toContain(key);
      return got;
    }

    it('stability-ai v2 multipart reaches api.stability.ai/v2beta byte for byte', async () => {
      const form = new FormData();
      form.set('prompt', 'a lighthouse');
      form.set('output_format', 'png');
      const res = await send('stability-ai', '/v1/v2beta/stable-image/generate/core', { headers: { accept: 'application/json' }, body: form });
      expect(res.status).toBe(200);
      const got = onlyRequest('stability-ai', 'https://api.stability.ai/v2beta/stable-image/generate/core');
      expect(got.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
      expect(got.headers.accept).toBe('application/json');
      expect(got.body).toContain('a lighthouse');
      expect(got.body).toContain('name="output_format"');
    });

    it('stability-ai v1 JSON reaches api.stability.ai/v1/generation', async () => {
      const body = JSON.stringify({ text_prompts: [{ text: 'a lighthouse' }], samples: 1 });
      const res = await send('stability-ai', '/v1/v1/generation/stable-diffusion-v1-6/text-to-image', {
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(200);
      expect(onlyRequest('stability-ai', 'https://api.stability.ai/v1/generation/stable-diffusion-v1-6/text-to-image').body).toBe(body);
    });

    it('replicate predictions reach api.replicate.com/v1, query kept', async () => {
      const body = JSON.stringify({ input: { prompt: 'hi' } });
      const res = await send('replicate', '/v1/models/black-forest-labs/flux-schnell/predictions?wait=1', {
        headers: { 'content-type': 'application/json', prefer: 'wait' },
        body,
      });
      expect(res.status).toBe(200);
      const got = onlyRequest('replicate', 'https://api.replicate.com/v1/models/black-forest-labs/flux-schnell/predictions?wait=1');
      expect(got.headers.prefer).toBe('wait');
      expect(got.body).toBe(body);
    });

    it('replicate GET of a prediction', async () => {
      const res = await send('replicate', '/v1/predictions/abc123', { method: 'GET' });
      expect(res.status).toBe(200);
      onlyRequest('replicate', 'https://api.replicate.com/v1/predictions/abc123', 'GET');
    });

    it('hf-inference task endpoints reach router.huggingface.co/hf-inference', async () => {
      const body = JSON.stringify({ inputs: 'I love this' });
      const res = await send('hf-inference', '/v1/models/distilbert/distilbert-base-uncased-finetuned-sst-2-english', {
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(200);
      const got = onlyRequest('hf-inference', 'https://router.huggingface.co/hf-inference/models/distilbert/distilbert-base-uncased-finetuned-sst-2-english');
      expect(got.body).toBe(body);
    });

    it('a config key replaces the client Authorization', async () => {
      const config = { strategy: { mode: 'fallback' }, targets: [{ provider: 'replicate', api_key: 'r8_config' }] };
      const res = await fetch(`${gw.url}/v1/predictions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config), authorization: 'Bearer client-key' },
        body: '{}',
      });
      expect(res.status).toBe(200);
      expect(mock.received[0]!.headers.authorization).toBe('Bearer r8_config');
    });

    it('sagemaker invocations reach the region runtime host, SigV4-signed for the sagemaker service', async () => {
      const body = JSON.stringify({ inputs: 'Hello', parameters: { max_new_tokens: 8 } });
      const res = await fetch(`${gw.url}/v1/endpoints/my-llm/invocations`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': key,
          'x-gw-provider': 'sagemaker',
          'x-gw-aws-region': 'eu-west-1',
          'x-gw-aws-access-key-id': 'AKIDEXAMPLE',
          'x-gw-aws-secret-access-key': KEYS.AKIDEXAMPLE!,
          'content-type': 'application/json',
          'x-amzn-sagemaker-custom-attributes': 'trace=1',
        },
        body,
      });
      expect(res.status).toBe(200);
      expect(mock.received).toHaveLength(1);
      const got = mock.received[0]!;
      const host = 'runtime.sagemaker.eu-west-1.amazonaws.com';
      expect(got.headers[ORIGINAL_URL_HEADER]).toBe(`https://${host}/endpoints/my-llm/invocations`);
      expect(got.body).toBe(body);
      expect(got.headers['x-amzn-sagemaker-custom-attributes']).toBe('trace=1');
      expect(Object.keys(got.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
      expect(JSON.stringify(got.headers)).not.toContain(KEYS.AKIDEXAMPLE!);
      // The signature is over the provider's host, which the redirect replaced.
      const check = verifySigV4({ ...got, headers: { ...got.headers, host }, json: undefined });
      expect(check).toEqual({ ok: true, accessKeyId: 'AKIDEXAMPLE', region: 'eu-west-1', service: 'sagemaker' });
    });

    it('sagemaker has no unified endpoint: 400 naming the provider', async () => {
      const res = await call('/v1/chat/completions', { id: 'sagemaker' }, { model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('sagemaker');
      expect(mock.received).toHaveLength(0);
    });

    it('stability-ai has no unified image endpoint: 400 naming the provider', async () => {
      const res = await send('stability-ai', '/v1/images/generations', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'x' }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('stability-ai');
      expect(mock.received).toHaveLength(0);
    });
  });

  it('takes the provider from a config target, with the target key in the provider format', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      targets: [{ provider: 'groq', api_key: 'gsk-config-key', override_params: { model: 'llama-3.3-70b-versatile' } }],
    };
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const got = mock.received[0]!;
    expect(got.headers[ORIGINAL_URL_HEADER]).toBe('https://api.groq.com/openai/v1/chat/completions');
    expect(got.headers.authorization).toBe('Bearer gsk-config-key');
    expect(JSON.parse(got.body)).toMatchObject({ model: 'llama-3.3-70b-versatile' });
  });
});
