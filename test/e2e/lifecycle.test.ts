/**
 * The request record and hooks every later feature builds on (limits, logs, metrics): what the
 * record holds when `complete` runs, that `admit` can refuse before any provider call, and that a
 * stream the client abandons still completes, marked cancelled.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../layers/core/src/http/errors.ts';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';

describe.each(['direct', 'lambda'] as const)('request lifecycle (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const completed: GatewayRecord[] = [];
  let refuseNext = false;
  const hook: GatewayHook = {
    name: 'recorder',
    async admit() {
      if (refuseNext) {
        refuseNext = false;
        throw new RateLimitedError('Too many requests', { headers: { 'retry-after': '3' } });
      }
    },
    complete: (r) => {
      completed.push(structuredClone({ ...r, principal: undefined }));
    },
  };

  const waitForRecords = (n: number) => until(() => (completed.length >= n ? completed : undefined), `${n} completed record(s)`);
  const post = (body: Record<string, unknown>, headers: Record<string, string> = {}, signal?: AbortSignal) =>
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

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey();
    gw.deps.gatewayHooks.push(hook);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    completed.length = 0;
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  it('records a JSON answer with its usage, timings and target', async () => {
    const res = await post(
      { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
      { 'x-gw-trace-id': 't-1', 'x-gw-span-id': 's-1', 'x-gw-metadata': '{"_user":"u1"}' },
    );
    await res.text();
    const [r] = await waitForRecords(1);
    expect(r).toMatchObject({
      traceId: 't-1',
      spanId: 's-1',
      endpoint: 'chatComplete',
      status: 200,
      provider: 'openai',
      targetPath: 'config',
      retries: 0,
      model: 'gpt-4o-mini',
      stream: false,
      metadata: { _user: 'u1' },
      usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
    });
    expect(r!.responseBytes).toBeGreaterThan(0);
    expect(r!.endedAt).toBeGreaterThanOrEqual(r!.firstByteAt!);
    expect(r!.cancelled).toBeUndefined();
  });

  it('reads the usage of a stream from its final chunk', async () => {
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true, stream_options: { include_usage: true } });
    await res.text();
    const [r] = await waitForRecords(1);
    expect(r).toMatchObject({ stream: true, status: 200, usage: { prompt_tokens: 9, completion_tokens: 2 } });
  });

  it('records refusals with their status and code', async () => {
    await (await post({ model: 'm', messages: [] })).text();
    await (await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { 'x-gw-api-key': 'gw_nope' })).text();
    const rs = await waitForRecords(2);
    expect(rs.map((r) => r.status).sort()).toEqual([400, 401]);
    expect(rs.find((r) => r.status === 400)?.errorCode).toBe('invalid_value');
  });

  it('lets admit refuse before any provider call', async () => {
    refuseNext = true;
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(mock.received).toHaveLength(0);
  });

  it('completes a stream the client abandons, marked cancelled', async () => {
    let release!: () => void;
    mock.queue.push({ kind: 'stream', chunks: ['a', 'b', 'c'], holdAfterFirst: new Promise<void>((r) => (release = r)) });
    const aborter = new AbortController();
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }, {}, aborter.signal);
    const reader = res.body!.getReader();
    await reader.read();
    aborter.abort();
    // Lambda cannot see the client go (API Gateway keeps reading): there the stream runs to its end.
    if (mode === 'lambda') release();
    try {
      const [r] = await waitForRecords(1);
      expect(r!.status).toBe(200);
      if (mode === 'direct') {
        expect(r!.cancelled).toBe(true);
        expect(r!.responseBytes).toBeGreaterThan(0);
      }
    } finally {
      release();
    }
  });
});
