/** From a request's record to its log event: fields, special metadata keys, secrets, large bodies. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import type { GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';
import { answeredByFallback } from '../../../../layers/core/src/observability/routing-facts.ts';
import { fromRecord, INLINE_BODY_BYTES } from '../../../../layers/core/src/observability/log-event.ts';
import { isLimitRefusal, publishMetrics, statusClass } from '../../../../layers/core/src/observability/metrics-hook.ts';
import { REDACTED, redact } from '../../../../layers/core/src/security/redact.ts';
import { FsBlobStore } from '../../../../layers/core/src/ports/local/blob-fs.ts';
import { workspacePrincipal } from '../../../support/identity.ts';

const blobs = () => new FsBlobStore(mkdtempSync(path.join(os.tmpdir(), 'gantry-log-event-')));
const T = Date.UTC(2026, 0, 5, 10, 0, 0);

function record(patch: Partial<GatewayRecord> = {}): GatewayRecord {
  return {
    id: 'log-1',
    traceId: 'trace-1',
    spanId: 'span-1',
    parentSpanId: 'parent-1',
    spanName: 'llm',
    endpoint: 'chatComplete',
    method: 'POST',
    path: '/v1/chat/completions',
    startedAt: T,
    metadata: { _user: 'u-7', _prompt: 'welcome', _organisation: 'acme', _environment: 'prod', team: 'search' },
    request: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
    model: 'gpt-4o',
    stream: true,
    configSource: 'saved',
    configId: 'pc-main',
    provider: 'openai',
    targetPath: 'config.targets[1]',
    retries: 2,
    fallback: true,
    cacheStatus: 'MISS',
    status: 200,
    upstreamHeadersAt: T + 40,
    firstByteAt: T + 55,
    endedAt: T + 300,
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 2, reasoning_tokens: 1 },
    costMicros: 1234,
    responseBytes: 999,
    principal: workspacePrincipal({ keyId: 'key-1', organisationId: 'org-1', workspaceId: 'ws-1', userId: 'user-1' }),
    ...patch,
  };
}

describe('fromRecord', () => {
  it('fills every field of the log event', async () => {
    const e = await fromRecord(record(), { blobs: blobs(), now: T + 400 });
    expect(e).toMatchObject({
      id: 'log-1',
      source: 'gateway',
      organisation_id: 'org-1',
      workspace_id: 'ws-1',
      created_at: new Date(T).toISOString(),
      trace_id: 'trace-1',
      span_id: 'span-1',
      parent_span_id: 'parent-1',
      span_name: 'llm',
      api_key_id: 'key-1',
      key_user_id: 'user-1',
      config_id: 'pc-main',
      config_source: 'saved',
      provider: 'openai',
      ai_service: 'openai',
      model: 'gpt-4o',
      endpoint: 'chatComplete',
      stream: true,
      status_code: 200,
      is_success: true,
      total_ms: 300,
      upstream_ms: 40,
      ttft_ms: 55,
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      cached_tokens: 2,
      reasoning_tokens: 1,
      cost_micros: 1234,
      cache_status: 'MISS',
      retries: 2,
      last_used_option_index: 'config.targets[1]',
      fallback: true,
      cancelled: false,
      user: 'u-7',
      prompt_slug: 'welcome',
      organisation: 'acme',
      environment: 'prod',
      metadata: { team: 'search', _user: 'u-7' },
      response_bytes: 999,
    });
    expect(e.request_body).toEqual({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  });

  it('takes the user from the body when `_user` is absent, and a refusal answer from the error', async () => {
    const e = await fromRecord(
      record({
        metadata: {},
        request: { user: 'body-user' },
        status: 400,
        errorCode: 'invalid_value',
        errorMessage: 'temperature: bad',
        endedAt: undefined,
        upstreamHeadersAt: undefined,
        usage: undefined,
      }),
      { blobs: blobs(), now: T + 7 },
    );
    expect(e).toMatchObject({ user: 'body-user', status_code: 400, is_success: false, total_ms: 7, error_code: 'invalid_value', prompt_tokens: 0 });
    expect(e.response_body).toEqual({ error: { message: 'temperature: bad', code: 'invalid_value' } });
  });

  it('keeps bodies above the inline limit in blob storage, by reference', async () => {
    const store = blobs();
    const big = 'x'.repeat(INLINE_BODY_BYTES + 10);
    const e = await fromRecord(record({ request: { model: 'm', messages: [{ role: 'user', content: big }] } }), { blobs: store, now: T });
    expect(e.request_body).toBeUndefined();
    expect(e.request_body_ref).toBe(`logs/ws-1/2026-01-05/log-1/request.json`);
    const stored = JSON.parse(Buffer.from((await store.get(e.request_body_ref!))!).toString('utf8')) as { messages: { content: string }[] };
    expect(stored.messages[0]?.content).toBe(big);
    expect(e.request_bytes).toBeGreaterThan(INLINE_BODY_BYTES);
  });

  it('redacts every name of the one list and every secret format: token, secret, client_secret, authorization, provider keys, error messages', async () => {
    const secrets = ['tok-1', 'sec-2', 'cs-3', 'at-4', 'auth-5', 'sk-ant-api03-abcdefghijklmnop', 'gw_abcdefghijklmnopqrstuvwxyz'];
    const e = await fromRecord(
      record({
        request: {
          model: 'm',
          token: 'tok-1',
          secret: 'sec-2',
          client_secret: 'cs-3',
          access_token: 'at-4',
          authorization: 'auth-5',
          note: 'key sk-ant-api03-abcdefghijklmnop',
        },
        metadata: { caller: 'gw_abcdefghijklmnopqrstuvwxyz' },
        errorMessage: 'Incorrect API key provided: sk-ant-api03-abcdefghijklmnop',
      }),
      { blobs: blobs(), now: T },
    );
    const text = JSON.stringify(e);
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it('never keeps secrets: keys, tokens and bearer credentials in bodies and metadata', async () => {
    const e = await fromRecord(
      record({
        request: { model: 'm', api_key: 'sk-body', nested: { aws_secret_access_key: 'AWSSECRET', Authorization: 'Bearer sk-h' }, note: 'Bearer sk-inline' },
        metadata: { apiKey: 'sk-meta', ok: 'fine' },
      }),
      { blobs: blobs(), now: T },
    );
    const text = JSON.stringify(e);
    for (const secret of ['sk-body', 'AWSSECRET', 'sk-h', 'sk-inline', 'sk-meta']) expect(text).not.toContain(secret);
    expect(e.metadata).toEqual({ apiKey: REDACTED, ok: 'fine' });
  });
});

describe('redact', () => {
  it('replaces secret-named values at any depth and leaves the rest', () => {
    expect(redact({ a: 1, password: 'p', list: [{ 'x-gw-api-key': 'gw_1', keep: 'k' }], empty: { api_key: '' } })).toEqual({
      a: 1,
      password: REDACTED,
      list: [{ 'x-gw-api-key': REDACTED, keep: 'k' }],
      empty: { api_key: '' },
    });
  });
});

describe('answeredByFallback', () => {
  const config = { strategy: { mode: 'fallback' as const }, targets: [{ strategy: { mode: 'loadbalance' as const }, targets: [{}, {}] }, {}] };
  it('is true only past the first target of a fallback node', () => {
    expect(answeredByFallback(config, 'config.targets[1]')).toBe(true);
    expect(answeredByFallback(config, 'config.targets[0].targets[1]')).toBe(false);
    expect(answeredByFallback(config, 'config')).toBe(false);
    expect(answeredByFallback(undefined, 'config.targets[1]')).toBe(false);
  });
});

describe('metrics', () => {
  it('writes EMF documents per service, provider, status class and model', () => {
    const lines: string[] = [];
    const original = console.log;
    const m = new Metrics({ namespace: 'Gantry', serviceName: 'gantry-gateway' });
    (m as unknown as { console: { log: (s: string) => void } }).console = { log: (s: string) => lines.push(s) } as never;
    try {
      publishMetrics(m, record({ status: 429, errorCode: 'rate_limit_exceeded', cacheStatus: 'HIT' }), T + 400);
    } finally {
      console.log = original;
    }
    const docs = lines.map((l) => JSON.parse(l) as Record<string, unknown> & { _aws: { CloudWatchMetrics: { Dimensions: string[][]; Namespace: string }[] } });
    expect(docs).toHaveLength(2);
    expect(docs[0]!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service'], ['service', 'provider'], ['service', 'statusClass']]);
    expect(docs[1]!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service', 'provider', 'model']]);
    expect(docs[0]).toMatchObject({
      service: 'gantry-gateway',
      provider: 'openai',
      statusClass: '4xx',
      Requests: 1,
      Errors: 1,
      Latency: 300,
      TimeToFirstToken: 55,
      InputTokens: 10,
      CostUSD: 0.001234,
      CacheHits: 1,
      LimitRefusals: 1,
    });
    expect(statusClass(503)).toBe('5xx');
    expect(isLimitRefusal({ status: 429, errorCode: 'invalid_value' })).toBe(false);
  });
});
