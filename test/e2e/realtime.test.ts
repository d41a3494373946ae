/**
 * The realtime WebSocket proxy, driven by a `ws` client against a mock realtime provider that is a
 * real `ws` server: authentication and refusals at the upgrade, the relay (order, binary frames,
 * closes from either side), the session's log with its usage and cost, and limits.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { connected, openRealtime, RealtimeClient, type Json } from '../support/realtime-client.ts';
import { REALTIME_USAGE, startMockRealtime, type MockRealtime } from '../support/mock-realtime.ts';
import { storedLog, waitFor } from '../support/observability.ts';

describe.each(['direct', 'lambda'] as const)('realtime proxy (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockRealtime;
  let key: string;
  let n = 0;
  const trace = (label: string) => `rt-${mode}-${label}-${++n}`;
  const wsUrl = (query = '?model=gpt-4o-realtime-preview') => `${gw.url.replace('http', 'ws')}/v1/realtime${query}`;
  const viaMock = (extra: Record<string, string> = {}) => ({
    'x-gw-api-key': key,
    'x-gw-provider': 'openai',
    'x-gw-custom-host': `${mock.url}/v1`,
    authorization: 'Bearer sk-provider',
    ...extra,
  });

  const logOf = (traceId: string) => storedLog(gw, traceId);

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockRealtime()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.connections.length = 0;
  });

  it('relays a session both ways; the provider sees its key and no gateway header or key', async () => {
    const t = trace('relay');
    const ws = new WebSocket(wsUrl(), { headers: viaMock({ 'x-gw-trace-id': t }) });
    const upgrade = new Promise<Record<string, unknown>>((resolve) => ws.once('upgrade', (res) => resolve(res.headers)));
    const c = new RealtimeClient(ws);
    expect(await upgrade).toMatchObject({ 'x-gw-trace-id': t, 'x-gw-provider': 'openai', 'x-gw-log-id': expect.any(String) });
    const [created] = await c.until('session.created');
    expect(created).toMatchObject({ session: { object: 'realtime.session', model: 'gpt-4o-realtime-preview' } });
    c.send({ type: 'session.update', session: { instructions: 'Be brief.' } });
    expect((await c.until('session.updated'))[0]).toMatchObject({ session: { instructions: 'Be brief.' } });
    c.send({ type: 'response.create' });
    const [done] = await c.until('response.done');
    expect(done).toMatchObject({ response: { status: 'completed', usage: REALTIME_USAGE } });
    expect(c.events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual(['0', '1']);

    const conn = mock.connections[0]!;
    expect(conn.url).toBe('/v1/realtime?model=gpt-4o-realtime-preview');
    expect(conn.headers.authorization).toBe('Bearer sk-provider');
    expect(Object.keys(conn.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(JSON.stringify(conn.headers)).not.toContain(key);
    c.ws.close();
    await c.closed;
  });

  it('masks the provider key in what the provider sends back (an error event quoting it)', async () => {
    const secret = 'sk-config-0123456789abcdef';
    const config = { provider: 'openai', api_key: secret, custom_host: `${mock.url}/v1` };
    const c = connected(await openRealtime(wsUrl(), { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) }));
    await c.until('session.created');
    c.send({ type: 'mock.bad_key', event_id: 'evt_1' });
    const [error] = await c.until('error');
    expect(mock.connections[0]!.headers.authorization).toBe(`Bearer ${secret}`);
    expect(JSON.stringify(error)).not.toContain(secret);
    expect(error).toMatchObject({ error: { code: 'invalid_api_key', message: 'Incorrect API key provided: [REDACTED].' } });
    c.ws.close();
    await c.closed;
  });

  it('refuses a missing or wrong key with 401 before any provider is contacted', async () => {
    const missing = await openRealtime(wsUrl(), { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` });
    expect(missing).toMatchObject({ status: 401 });
    const wrong = await openRealtime(wsUrl(), viaMock({ 'x-gw-api-key': 'gw_wrong-key-000000000000000000000000000' }));
    expect(wrong).toMatchObject({ status: 401, body: { error: { type: expect.any(String) } } });
    expect(mock.connections).toHaveLength(0);
  });

  it('takes the gateway key from the browser subprotocol and never accepts or forwards it', async () => {
    const headers = { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, authorization: 'Bearer sk-provider' };
    const c = connected(await openRealtime(wsUrl(), headers, ['realtime', `openai-insecure-api-key.${key}`, 'openai-beta.realtime-v1']));
    expect(c.ws.protocol).toBe('realtime');
    await c.until('session.created');
    const conn = mock.connections[0]!;
    expect(conn.headers['openai-beta']).toBe('realtime=v1');
    expect(conn.headers['sec-websocket-protocol']).toBeUndefined();
    expect(JSON.stringify(conn.headers)).not.toContain(key);
    c.ws.close();
  });

  it('answers 426 to a plain GET, without contacting a provider', async () => {
    const res = await fetch(`${gw.url}/v1/realtime?model=gpt-4o-realtime-preview`, { headers: viaMock() });
    expect(res.status).toBe(426);
    expect(res.headers.get('upgrade')).toBe('websocket');
    expect(await res.json()).toMatchObject({ error: { code: 'upgrade_required' } });
    expect(mock.connections).toHaveLength(0);
  });

  it('names the missing model, and refuses a blocked custom host before connecting', async () => {
    expect(await openRealtime(wsUrl(''), viaMock())).toMatchObject({ status: 400, body: { error: { param: 'model' } } });
    const blocked = await openRealtime(wsUrl(), viaMock({ 'x-gw-custom-host': 'http://169.254.169.254/v1' }));
    expect(blocked).toMatchObject({ status: 400, body: { error: { param: 'x-gw-custom-host' } } });
    expect(mock.connections).toHaveLength(0);
  });

  it('answers the provider refusal, and a fallback connects to its next target', async () => {
    const refused = await openRealtime(wsUrl('?model=refuse-503'), viaMock());
    expect(refused).toMatchObject({ status: 503 });
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'openai', custom_host: `${mock.url}/v1`, api_key: 'sk-a', override_params: { model: 'refuse-503' } },
        { provider: 'openai', custom_host: `${mock.url}/v1`, api_key: 'sk-b' },
      ],
    };
    const c = connected(await openRealtime(wsUrl(), { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) }));
    await c.until('session.created');
    expect(mock.connections.at(-1)?.headers.authorization).toBe('Bearer sk-b');
    c.ws.close();
  });

  it('connects to Azure OpenAI with its deployment, api-version and api-key header', async () => {
    const c = connected(
      await openRealtime(wsUrl('?model=gpt-4o-realtime-preview'), {
        'x-gw-api-key': key,
        'x-gw-config': JSON.stringify({ provider: 'azure-openai', custom_host: `${mock.url}/openai`, api_key: 'az-key', azure_deployment_id: 'rt-deploy' }),
      }),
    );
    await c.until('session.created');
    const conn = mock.connections[0]!;
    expect(conn.url).toBe('/openai/realtime?api-version=2024-10-01-preview&deployment=rt-deploy');
    expect(conn.headers['api-key']).toBe('az-key');
    expect(conn.headers.authorization).toBeUndefined();
    c.ws.close();
  });

  it('keeps the order of 1,000 events each way, and relays binary frames unchanged', async () => {
    const c = connected(await openRealtime(wsUrl(), viaMock()));
    await c.until('session.created');
    for (let i = 0; i < 1000; i++)
      c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: String(i) }] } });
    c.send({ type: 'response.create', response: { metadata: { deltas: 1000 } } });
    await c.until('response.done');
    const sent = mock.connections[0]!.events.filter((e) => e.type === 'conversation.item.create');
    expect(sent.map((e) => (e.item as { content: Array<{ text: string }> }).content[0]!.text)).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));
    const deltas = c.events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta);
    expect(deltas).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));

    const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
    c.ws.send(bytes, { binary: true });
    while (c.binary.length === 0) await new Promise((r) => setTimeout(r, 2));
    expect(c.binary[0]!.equals(bytes)).toBe(true);
    c.ws.close();
  });

  it('closes the provider with the client’s code, and the client with the provider’s', async () => {
    const a = connected(await openRealtime(wsUrl(), viaMock()));
    await a.until('session.created');
    a.ws.close(4001, 'client done');
    await a.closed;
    await waitFor(gw.deps, async () => mock.connections[0]?.closedWith);
    expect(mock.connections[0]!.closedWith).toBe(4001);

    const b = connected(await openRealtime(wsUrl(), viaMock()));
    await b.until('session.created');
    b.send({ type: 'mock.close', code: 4002, reason: 'provider done' });
    expect(await b.closed).toEqual({ code: 4002, reason: 'provider done' });
  });

  it('logs the session with its model, provider, usage summed over responses, message counts and cost', async () => {
    const t = trace('log');
    const c = connected(await openRealtime(wsUrl(), viaMock({ 'x-gw-trace-id': t })));
    await c.until('session.created');
    c.send({ type: 'response.create' });
    await c.until('response.done');
    c.send({ type: 'response.create' });
    await c.until('response.done', 2);
    c.ws.close(1000);
    await c.closed;

    const log = await logOf(t);
    expect(log).toMatchObject({
      trace_id: t,
      provider: 'openai',
      model: 'gpt-4o-realtime-preview',
      endpoint: 'realtime',
      prompt_tokens: 2000,
      completion_tokens: 1000,
      total_tokens: 3000,
      cached_tokens: 400,
    });
    // gpt-4o-realtime-preview: $5 / $20 per million, cached input $2.50.
    expect(Number(log.cost)).toBeGreaterThan(0);
    const response = JSON.stringify(log);
    expect(response).toContain('"audio_tokens":800');
    expect(response).toContain('"from_client":2');
    expect(response).not.toContain('sk-provider');
    expect(response).not.toContain(key);
  });

  it('admits at connect (a rate limit refuses with 429) and closes a session whose budget is spent', async () => {
    const make = async (extra: Json) => {
      const res = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'rt', workspace_id: 'default', scopes: ['completions.write'], ...extra });
      return res.json.key as string;
    };
    const once = await make({ rate_limits: [{ type: 'requests', unit: 'rpd', value: 1 }] });
    const first = connected(await openRealtime(wsUrl(), viaMock({ 'x-gw-api-key': once })));
    expect(await openRealtime(wsUrl(), viaMock({ 'x-gw-api-key': once }))).toMatchObject({ status: 429 });
    first.ws.close();

    const budgeted = await make({ usage_limits: { type: 'tokens', credit_limit: 3000 } });
    const c = connected(await openRealtime(wsUrl(), viaMock({ 'x-gw-api-key': budgeted })));
    await c.until('session.created');
    c.send({ type: 'response.create' });
    await c.until('response.done');
    c.send({ type: 'response.create' });
    const [error] = await c.until('error');
    expect(error).toMatchObject({ type: 'error', error: { code: 'budget_exhausted', message: expect.stringContaining('Usage limit reached') } });
    expect((await c.closed).code).toBe(1008);
  });

  it('mints a client secret through the provider, with the session model required and the request logged', async () => {
    const t = trace('secret');
    const post = (path: string, body: Json) =>
      fetch(`${gw.url}/v1/realtime/${path}`, {
        method: 'POST',
        headers: { ...viaMock({ 'x-gw-trace-id': t }), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const res = await post('client_secrets', {
      expires_after: { anchor: 'created_at', seconds: 600 },
      session: { type: 'realtime', model: 'gpt-realtime', instructions: 'Be brief.' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ value: expect.stringMatching(/^ek_mock_/), session: { model: 'gpt-realtime' } });
    const seen = mock.secrets.at(-1)!;
    expect(seen.headers.authorization).toBe('Bearer sk-provider');
    expect(Object.keys(seen.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(await logOf(t)).toMatchObject({ endpoint: 'createRealtimeClientSecret', model: 'gpt-realtime', provider: 'openai' });

    const missing = await post('client_secrets', { session: { type: 'realtime' } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { param: 'session.model' } });
    const older = await post('sessions', { model: 'gpt-4o-realtime-preview' });
    expect(await older.json()).toMatchObject({ object: 'realtime.session', client_secret: { value: expect.any(String) } });
    expect((await post('sessions', { voice: 'alloy' })).status).toBe(400);
  });
});
