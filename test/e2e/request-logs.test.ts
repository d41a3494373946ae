/**
 * Every gateway request leaves one log, with every field, whatever happened: a JSON answer, a
 * provider error, a refusal by validation, by authentication or by a rate limit, a cache hit, a
 * fallback, a stream, a stream the client left. Secrets never reach the table or blob storage.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../layers/core/src/ports/local/blob-fs.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;

describe.each(['direct', 'lambda'] as const)('request logs (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  let n = 0;
  const trace = (label: string) => `${mode}-${label}-${++n}`;

  const chat = (body: Json, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  const ask = (content = 'Hi', extra: Json = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });

  /** The stored log of the request with this trace id (in full). */
  async function logOf(traceId: string, workspace = 'default'): Promise<Json> {
    const row = await waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', `/v1/logs?workspace_id=${workspace}&trace_id=${traceId}`);
      return (res.json.data as Json[] | undefined)?.[0];
    });
    const full = await gw.admin('GET', `/v1/logs/${String(row.id)}`);
    expect(full.status).toBe(200);
    return full.json;
  }

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.queue.length = 0;
  });

  it('logs a JSON answer with every field, the special metadata keys promoted', async () => {
    const t = trace('ok');
    const res = await chat(ask('Hello there'), {
      'x-gw-trace-id': t,
      'x-gw-span-id': 'span-9',
      'x-gw-parent-span-id': 'span-1',
      'x-gw-span-name': 'answer',
      'x-gw-metadata': JSON.stringify({ _user: 'ann', _prompt: 'greeting', _organisation: 'acme', _environment: 'prod', team: 'search' }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const log = await logOf(t);
    expect(log).toMatchObject({
      object: 'log',
      source: 'gateway',
      trace_id: t,
      span_id: 'span-9',
      parent_span_id: 'span-1',
      span_name: 'answer',
      workspace_id: gw.boot.workspaceId,
      organisation_id: gw.boot.organisationId,
      provider: 'openai',
      ai_service: 'openai',
      model: 'gpt-4o-mini',
      endpoint: 'chatComplete',
      method: 'POST',
      path: '/v1/chat/completions',
      stream: false,
      status_code: 200,
      is_success: true,
      error_code: null,
      ttft_ms: null,
      prompt_tokens: 9,
      completion_tokens: 3,
      total_tokens: 12,
      retries: 0,
      last_used_option_index: 'config',
      fallback: false,
      cancelled: false,
      user: 'ann',
      prompt_slug: 'greeting',
      organisation: 'acme',
      environment: 'prod',
      metadata: { team: 'search', _user: 'ann' },
      request_body: ask('Hello there'),
      response_body: { object: 'chat.completion', usage: { total_tokens: 12 } },
      cost_currency: 'USD',
    });
    expect(log.api_key_id).toEqual(expect.any(String));
    expect(log.total_ms).toBeGreaterThanOrEqual(log.upstream_ms as number);
    expect(log.response_bytes).toBeGreaterThan(0);
    // gpt-4o-mini is priced: 9 input and 3 output tokens.
    expect(log.cost_micros).toBeGreaterThan(0);
    expect(log.cost).toBeCloseTo((log.cost_micros as number) / 10_000, 6);
  });

  it('logs a provider error with the provider status', async () => {
    const t = trace('provider-error');
    mock.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"overloaded"}}' });
    const res = await chat(ask(), { 'x-gw-trace-id': t });
    expect(res.status).toBe(503);
    await res.text();
    const log = await logOf(t);
    expect(log).toMatchObject({ status_code: 503, is_success: false, provider: 'openai', model: 'gpt-4o-mini', prompt_tokens: 0, cost_micros: 0 });
    // The provider's error body, as the client received it.
    expect(log.response_body).toEqual({ error: { message: 'overloaded' } });
    expect(log.upstream_ms).toEqual(expect.any(Number));
  });

  it('logs a refusal by validation with its error and the request', async () => {
    const t = trace('invalid');
    const res = await chat({ model: 'gpt-4o-mini', messages: [], temperature: 7 }, { 'x-gw-trace-id': t });
    expect(res.status).toBe(400);
    const log = await logOf(t);
    expect(log).toMatchObject({ status_code: 400, is_success: false, error_code: 'invalid_value', provider: null, request_body: { temperature: 7 } });
    expect(log.error_message).toContain('temperature');
    expect(log.response_body).toMatchObject({ error: { code: 'invalid_value' } });
  });

  it('logs a refusal by authentication without a workspace; the owner key reads it', async () => {
    const t = trace('auth');
    const res = await chat(ask(), { 'x-gw-trace-id': t, 'x-gw-api-key': 'gw_not-a-key' });
    expect(res.status).toBe(401);
    const log = await logOf(t, '-');
    expect(log).toMatchObject({ status_code: 401, workspace_id: null, organisation_id: null, api_key_id: null, error_code: 'invalid_api_key' });
  });

  it('logs a refusal by a rate limit', async () => {
    const created = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'limited',
      workspace_id: 'default',
      scopes: ['completions.write'],
      rate_limits: [{ type: 'requests', unit: 'rpd', value: 1 }],
    });
    expect(created.status).toBe(200);
    const limited = created.json.key as string;
    await (await chat(ask(), { 'x-gw-api-key': limited })).text();
    const t = trace('limit');
    const res = await chat(ask(), { 'x-gw-api-key': limited, 'x-gw-trace-id': t });
    expect(res.status).toBe(429);
    const log = await logOf(t);
    expect(log).toMatchObject({ status_code: 429, error_code: 'rate_limit_exceeded', api_key_id: created.json.id, provider: null });
  });

  it('logs a cache hit at no cost, with what it saved', async () => {
    const config = { provider: 'openai', api_key: 'sk-x', custom_host: `${mock.url}/v1`, cache: { mode: 'simple', max_age: 60 } };
    const body = ask(`cache me ${mode}`);
    const t1 = trace('miss');
    await (await chat(body, { 'x-gw-config': JSON.stringify(config), 'x-gw-trace-id': t1 })).text();
    const miss = await logOf(t1);
    const t2 = trace('hit');
    const res = await chat(body, { 'x-gw-config': JSON.stringify(config), 'x-gw-trace-id': t2 });
    expect(res.headers.get('x-gw-cache-status')).toBe('HIT');
    await res.text();
    const hit = await logOf(t2);
    expect(miss).toMatchObject({ cache_status: 'MISS', config_source: 'inline' });
    expect(hit).toMatchObject({ cache_status: 'HIT', cost_micros: 0, status_code: 200, prompt_tokens: 9 });
    expect(hit.cache_savings_micros).toBe(miss.cost_micros);
  });

  it('logs which fallback target answered', async () => {
    const t = trace('fallback');
    mock.queue.push({ kind: 'error', status: 500, body: '{"error":{"message":"down"}}' });
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'openai', api_key: 'sk-a', custom_host: `${mock.url}/v1` },
        { provider: 'openai', api_key: 'sk-b', custom_host: `${mock.url}/v1` },
      ],
    };
    const res = await chat(ask(), { 'x-gw-config': JSON.stringify(config), 'x-gw-trace-id': t });
    expect(res.status).toBe(200);
    await res.text();
    expect(await logOf(t)).toMatchObject({ fallback: true, last_used_option_index: 'config.targets[1]', status_code: 200 });
  });

  it('logs a stream with its usage and time to first token', async () => {
    const t = trace('stream');
    const res = await chat(ask('stream', { stream: true, stream_options: { include_usage: true } }), { 'x-gw-trace-id': t });
    await res.text();
    const log = await logOf(t);
    expect(log).toMatchObject({ stream: true, status_code: 200, prompt_tokens: 9, completion_tokens: 2, cancelled: false });
    // The log keeps what the stream amounted to: the assembled message, its finish reason and usage.
    expect(log.response_body).toMatchObject({
      object: 'chat.completion',
      stream: true,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 9, completion_tokens: 2 },
    });
    expect(log.ttft_ms).toEqual(expect.any(Number));
    expect(log.ttft_ms as number).toBeLessThanOrEqual(log.total_ms as number);
  });

  it('logs a stream the client left', async () => {
    const t = trace('cancelled');
    let release!: () => void;
    mock.queue.push({ kind: 'stream', chunks: ['a', 'b', 'c'], holdAfterFirst: new Promise<void>((r) => (release = r)) });
    const aborter = new AbortController();
    const res = await chat(ask('leave', { stream: true }), { 'x-gw-trace-id': t }, aborter.signal);
    await res.body!.getReader().read();
    aborter.abort();
    // Lambda cannot see the client go (API Gateway keeps reading): there the stream runs to its end.
    if (mode === 'lambda') release();
    try {
      const log = await logOf(t);
      expect(log).toMatchObject({ stream: true, status_code: 200, cancelled: mode === 'direct' });
    } finally {
      release();
    }
  });

  it('keeps large bodies in blob storage and shows them whole', async () => {
    const t = trace('large');
    const content = 'word '.repeat(5000);
    await (await chat(ask(content), { 'x-gw-trace-id': t })).text();
    const log = await logOf(t);
    expect(log.request_body_ref).toMatch(/^logs\/.+\/request\.json$/);
    expect(log.request_body).toEqual(ask(content));
  });

  it('never stores provider keys, the gateway key or secret options', async () => {
    const t = trace('secrets');
    const config = {
      provider: 'openai',
      api_key: 'sk-CONFIG-SECRET',
      custom_host: `${mock.url}/v1`,
      aws_secret_access_key: 'AWS-CONFIG-SECRET',
    };
    const res = await chat(ask('secret', { api_key: 'sk-BODY-SECRET' }), {
      'x-gw-trace-id': t,
      authorization: 'Bearer sk-HEADER-SECRET',
      'x-gw-config': JSON.stringify(config),
      'x-gw-metadata': JSON.stringify({ password: 'META-SECRET' }),
    });
    await res.text();
    await logOf(t);
    const items = await gw.deps.repos.table.doc.send(new ScanCommand({ TableName: gw.deps.repos.table.tableName }));
    const stored = [JSON.stringify(items.Items)];
    const root = (gw.deps.blobs as FsBlobStore).root;
    for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) stored.push(await readFile(path.join(entry.parentPath, entry.name), 'utf8'));
    }
    const all = stored.join('\n');
    for (const secret of ['sk-CONFIG-SECRET', 'AWS-CONFIG-SECRET', 'sk-BODY-SECRET', 'sk-HEADER-SECRET', 'META-SECRET', key]) expect(all).not.toContain(secret);
  });
});
