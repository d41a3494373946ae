/**
 * The realtime function as API Gateway's WebSocket API drives it: `$connect`, `$default` and
 * `$disconnect` events, the mock realtime provider (a real `ws` server) upstream, and a real HTTP
 * server standing in for the stage's `@connections` endpoint, which records what is posted to the
 * client. Two handlers on two sets of dependencies sharing the table are two Lambda instances.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { observability } from '../../../layers/core/src/observability/install.ts';
import { ApiGatewayConnections } from '../../../layers/core/src/ports/aws/connections-apigw.ts';
import { RealtimeConnectionRepository } from '../../../layers/core/src/store/realtime-connections.ts';
import { createRealtimeHandler } from '../../../lambdas/realtime/handler.ts';
import { websocketEvent } from '../../support/apigw-event.ts';
import { createTestDeps, createTestDepsOn } from '../../support/deps.ts';
import { startMockConnections, type MockConnections } from '../../support/mock-connections.ts';
import { REALTIME_USAGE, startMockRealtime, type MockRealtime } from '../../support/mock-realtime.ts';
import { keyRecord } from '../../support/records.ts';
import { waitFor } from '../../support/observability.ts';
import { until } from '../../support/until.ts';

type Handler = ReturnType<typeof createRealtimeHandler>;

let deps: CoreDeps;
let other: CoreDeps;
let mock: MockRealtime;
let endpoint: MockConnections;
let key: string;
let workspaceId: string;
let first: Handler;
let second: Handler;
let n = 0;

const model = 'gpt-4o-realtime-preview';
const upgrade = (extra: Record<string, string> = {}) => ({
  'x-gw-api-key': key,
  'x-gw-provider': 'openai',
  'x-gw-custom-host': `${mock.url}/v1`,
  authorization: 'Bearer sk-provider',
  ...extra,
});
const connectEvent = (id: string, headers: Record<string, string>, query: Record<string, string> = { model }) =>
  websocketEvent('$connect', id, {
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: query,
  });
const send = (h: Handler, id: string, event: Record<string, unknown>) => h(websocketEvent('$default', id, { body: JSON.stringify(event) }));
const disconnect = (h: Handler, id: string, code = 1000) =>
  h(websocketEvent('$disconnect', id, { requestContext: { ...websocketEvent('$disconnect', id).requestContext, disconnectStatusCode: code } }));
const types = (id: string) => endpoint.events(id).map((e) => e.type);

beforeAll(async () => {
  [deps, mock, endpoint] = await Promise.all([createTestDeps(), startMockRealtime(), startMockConnections()]);
  // The second instance shares the table and the credentials key, as Lambda instances do.
  other = createTestDepsOn(deps.config.tableName, {}, { cipher: deps.cipher });
  const boot = await ensureBootstrap(deps);
  workspaceId = boot.workspaceId;
  const made = keyRecord({ organisation_id: boot.organisationId, workspace_id: boot.workspaceId, scopes: ['completions.write'] }, Date.now());
  await deps.repos.apiKeys.create(made.record);
  key = made.key;
  const connections = () =>
    new ApiGatewayConnections(endpoint.endpoint, { region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  const options = { GW_REALTIME_QUIET_MS: '100' };
  Object.assign(process.env, options);
  first = createRealtimeHandler(() => Promise.resolve(deps), connections);
  second = createRealtimeHandler(() => Promise.resolve(other), connections);
});
afterAll(async () => {
  delete process.env.GW_REALTIME_QUIET_MS;
  await Promise.all([mock?.close(), endpoint?.close()]);
  deps?.upstream.close();
  other?.upstream.close();
});

describe('realtime function ($connect)', () => {
  it('refuses a missing or wrong key with 401, and a missing model with 400 naming it, before any provider is contacted', async () => {
    const missing = await first(connectEvent(`c${++n}`, { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` }));
    expect(missing.statusCode).toBe(401);
    const wrong = await first(connectEvent(`c${++n}`, upgrade({ 'x-gw-api-key': 'gw_wrong-key-000000000000000000000000000' })));
    expect(wrong.statusCode).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ error: { type: expect.any(String) } });
    const noModel = await first(connectEvent(`c${++n}`, upgrade(), {}));
    expect(noModel.statusCode).toBe(400);
    expect(JSON.parse(noModel.body)).toMatchObject({ error: { param: 'model' } });
    expect(mock.connections).toHaveLength(0);
  });

  it('accepts the gateway key as a browser subprotocol and answers only the plain subprotocol back', async () => {
    const id = `c${++n}`;
    const headers = {
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mock.url}/v1`,
      authorization: 'Bearer sk-provider',
      'Sec-WebSocket-Protocol': `realtime, openai-insecure-api-key.${key}`,
    };
    const res = await first(connectEvent(id, headers));
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({ 'sec-websocket-protocol': 'realtime', 'x-gw-trace-id': expect.any(String), 'x-gw-log-id': expect.any(String) });
    expect(JSON.stringify(res.headers)).not.toContain(key);
    await disconnect(first, id);
  });
});

describe('realtime function (relay)', () => {
  it('relays events both ways in order through @connections and logs the session with summed usage and cost', async () => {
    const id = `c${++n}`;
    const opened = await first(connectEvent(id, upgrade()));
    expect(opened.statusCode).toBe(200);
    const before = mock.connections.length;
    await send(first, id, { type: 'session.update', session: { instructions: 'Be brief.' } });
    expect(types(id)).toEqual(['session.created', 'session.updated']);
    await send(first, id, { type: 'response.create', response: { metadata: { deltas: 3 } } });
    expect(types(id).slice(2)).toEqual([
      'response.created',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.done',
    ]);
    expect(
      endpoint
        .events(id)
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta),
    ).toEqual(['0', '1', '2']);

    // Another instance takes the next message: it reopens the provider socket from the session's item.
    await send(second, id, { type: 'response.create' });
    expect(types(id).filter((t) => t === 'response.done')).toHaveLength(2);
    expect(mock.connections.length - before).toBe(2);
    const conn = mock.connections[before]!;
    expect(conn.headers.authorization).toBe('Bearer sk-provider');
    expect(Object.keys(conn.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(JSON.stringify(conn.headers)).not.toContain(key);

    await disconnect(first, id);
    const log = await waitFor(deps, () => observability(deps).logs.get(String(opened.headers!['x-gw-log-id']), [workspaceId]));
    expect(log).toMatchObject({ endpoint: 'realtime', model, provider: 'openai', status_code: 101 });
    expect(log.prompt_tokens).toBe(2 * REALTIME_USAGE.input_tokens);
    expect(log.completion_tokens).toBe(2 * REALTIME_USAGE.output_tokens);
    expect(log.total_tokens).toBe(2 * REALTIME_USAGE.total_tokens);
    expect(log.cost_micros).toBeGreaterThan(0);
    const summary = (log.response_body ?? {}) as Record<string, unknown>;
    expect(summary).toMatchObject({ object: 'realtime.session', responses: 2, messages: { from_client: 3 }, close: { code: 1000, by: 'client' } });
    expect(await new RealtimeConnectionRepository(deps.repos.table).get(id)).toBeUndefined();
  });

  it('closes the client connection when the provider closes', async () => {
    const id = `c${++n}`;
    await first(connectEvent(id, upgrade()));
    await send(first, id, { type: 'mock.close', code: 4001 });
    expect(endpoint.deleted.has(id)).toBe(true);
    await disconnect(first, id, 1005);
  });

  it("ends the session with an error event when a provider event is above API Gateway's 128 KB message limit", async () => {
    const id = `c${++n}`;
    await first(connectEvent(id, upgrade()));
    await send(first, id, { type: 'mock.echo', pad: 'x'.repeat(140 * 1024) });
    const error = endpoint.events(id).find((e) => e.type === 'error');
    expect(error).toMatchObject({ error: { message: expect.stringContaining('128 KB') } });
    expect(endpoint.deleted.has(id)).toBe(true);
    await disconnect(first, id, 1005);
  });

  it('lets go of a message on a connection the table does not know (ended or expired)', async () => {
    const id = `c${++n}`;
    await send(second, id, { type: 'response.create' });
    expect(endpoint.deleted.has(id)).toBe(true);
    expect(endpoint.posted.get(id)).toBeUndefined();
  });

  it('keeps going when the @connections endpoint refuses: the invocation ends, nothing is left unhandled, the provider socket closes', async () => {
    // A port nothing listens on any more: every post is refused (ECONNREFUSED).
    const gone = createServer();
    await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
    const port = (gone.address() as AddressInfo).port;
    await new Promise((r) => gone.close(r));
    const refusing = createRealtimeHandler(
      () => Promise.resolve(deps),
      () => new ApiGatewayConnections(`http://127.0.0.1:${port}`, { region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }),
    );
    const unhandled: unknown[] = [];
    const note = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', note);
    try {
      const id = `c${++n}`;
      const before = mock.connections.length;
      await refusing(connectEvent(id, upgrade()));
      await send(refusing, id, { type: 'response.create' });
      const closedWith = await until(() => mock.connections[before]?.closedWith, 'the provider socket to close');
      expect(closedWith).toBe(1011);
      await disconnect(refusing, id, 1006);
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', note);
    }
  });
});
