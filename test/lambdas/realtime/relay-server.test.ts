/**
 * The Fargate realtime relay (`gantry:realtimeRelay=fargate`) as API Gateway's WebSocket API drives
 * it through its HTTP integrations: two relay servers on two sets of dependencies sharing the table
 * are two ECS tasks behind the load balancer, the mock realtime provider (a real `ws` server) is
 * upstream, and a real HTTP server stands in for the stage's `@connections` API (posts, deletes,
 * gets; 410 until `$connect` has answered). Routes go to either task as the load balancer would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { CONNECTION_ID_HEADER, DISCONNECT_CODE_HEADER, RELAY_PATHS } from '../../../layers/core/src/gateway/realtime/relay-service.ts';
import { observability } from '../../../layers/core/src/observability/install.ts';
import { ApiGatewayConnections } from '../../../layers/core/src/ports/aws/connections-apigw.ts';
import type { ApiKeyRecord } from '../../../layers/core/src/store/entities.ts';
import { RealtimeHolderRepository } from '../../../layers/core/src/store/realtime-connections.ts';
import { startRelayServer, type RelayServer } from '../../../lambdas/realtime/relay-server.ts';
import { createTestDeps, createTestDepsOn } from '../../support/deps.ts';
import { startMockConnections, type MockConnections } from '../../support/mock-connections.ts';
import { REALTIME_USAGE, startMockRealtime, type MockRealtime } from '../../support/mock-realtime.ts';
import { keyRecord } from '../../support/records.ts';
import { waitFor } from '../../support/observability.ts';
import { eventually, until } from '../../support/until.ts';

let deps: CoreDeps;
let otherDeps: CoreDeps;
let mock: MockRealtime;
let endpoint: MockConnections;
let taskA: RelayServer;
let taskB: RelayServer;
let key: string;
let organisationId: string;
let workspaceId: string;
let n = 0;

const model = 'gpt-4o-realtime-preview';
const upgrade = (apiKey = key) => ({
  'x-gw-api-key': apiKey,
  'x-gw-provider': 'openai',
  'x-gw-custom-host': `${mock.url}/v1`,
  authorization: 'Bearer sk-provider',
});

/** `$connect` as API Gateway's integration sends it: the client's headers, `?model=`, the connection id; the connection is established once it answers 200. */
async function connect(task: RelayServer, id: string, headers: Record<string, string> = upgrade(), query = `?model=${model}`): Promise<Response> {
  endpoint.pending.add(id);
  const res = await fetch(`${task.url}${RELAY_PATHS.connect}${query}`, { method: 'POST', headers: { ...headers, [CONNECTION_ID_HEADER]: id } });
  if (res.status === 200) endpoint.pending.delete(id);
  return res;
}
const send = (task: RelayServer, id: string, event: Record<string, unknown>) =>
  fetch(`${task.url}${RELAY_PATHS.message}`, { method: 'POST', headers: { [CONNECTION_ID_HEADER]: id }, body: JSON.stringify(event) });
const disconnect = (task: RelayServer, id: string, code = 1000) =>
  fetch(`${task.url}${RELAY_PATHS.disconnect}`, { method: 'POST', headers: { [CONNECTION_ID_HEADER]: id, [DISCONNECT_CODE_HEADER]: String(code) } });
const types = (id: string) => endpoint.events(id).map((e) => e.type);
const count = (id: string, type: string) => types(id).filter((t) => t === type).length;

const connections = () => new ApiGatewayConnections(endpoint.endpoint, { region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
const startTask = (d: CoreDeps) => startRelayServer({ deps: d, connections: connections(), port: 0, host: '127.0.0.1' });

beforeAll(async () => {
  [deps, mock, endpoint] = await Promise.all([createTestDeps(), startMockRealtime(), startMockConnections()]);
  // The second task shares the table and the credentials key, as the service's tasks do.
  otherDeps = createTestDepsOn(deps.config.tableName, {}, { cipher: deps.cipher });
  const boot = await ensureBootstrap(deps);
  organisationId = boot.organisationId;
  workspaceId = boot.workspaceId;
  key = await makeKey();
  [taskA, taskB] = await Promise.all([startTask(deps), startTask(otherDeps)]);
});
afterAll(async () => {
  await Promise.all([taskA?.stop(), taskB?.stop()]);
  await Promise.all([mock?.close(), endpoint?.close()]);
  deps?.upstream.close();
  otherDeps?.upstream.close();
});

async function makeKey(limits: Partial<ApiKeyRecord> = {}): Promise<string> {
  const made = keyRecord({ organisation_id: organisationId, workspace_id: workspaceId, scopes: ['completions.write'] }, Date.now());
  await deps.repos.apiKeys.create({ ...made.record, ...limits });
  return made.key;
}

describe('Fargate realtime relay ($connect)', () => {
  it('refuses a wrong key with 401 and a missing model with 400 naming it, before any provider is contacted', async () => {
    const before = mock.connections.length;
    const wrong = await connect(taskA, `r${++n}`, upgrade('gw_wrong-key-000000000000000000000000000'));
    expect(wrong.status).toBe(401);
    const noModel = await connect(taskA, `r${++n}`, upgrade(), '');
    expect(noModel.status).toBe(400);
    expect(await noModel.json()).toMatchObject({ error: { param: 'model' } });
    expect(mock.connections.length).toBe(before);
  });

  it('refuses a route without the connection id with 400 naming the header', async () => {
    const res = await fetch(`${taskA.url}${RELAY_PATHS.message}`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param: CONNECTION_ID_HEADER } });
  });
});

describe('Fargate realtime relay (a held session)', () => {
  it('keeps one provider socket across messages sent to either task and pushes provider events while the client is quiet, in order', async () => {
    const id = `r${++n}`;
    const before = mock.connections.length;
    const opened = await connect(taskA, id);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('x-gw-log-id')).toBeTruthy();
    // The provider's first event is posted once API Gateway has the connection, without a client message.
    await until(() => (types(id).includes('session.created') ? true : undefined), 'session.created');

    await send(taskA, id, { type: 'session.update', session: { instructions: 'Be brief.' } });
    await until(() => (types(id).includes('session.updated') ? true : undefined), 'session.updated');
    // The next message reaches the other task, which forwards it to the holder: the same socket.
    expect((await send(taskB, id, { type: 'response.create', response: { metadata: { deltas: 3 } } })).status).toBe(200);
    await until(() => (count(id, 'response.done') === 1 ? true : undefined), 'the response');
    expect(mock.connections.length - before).toBe(1);
    const conn = mock.connections[before]!;
    expect(conn.events.map((e) => e.type)).toEqual(['session.update', 'response.create']);
    expect(conn.headers.authorization).toBe('Bearer sk-provider');
    expect(Object.keys(conn.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);

    // The client is quiet: the provider speaks on its own (a server VAD turn), and every event arrives, in order.
    const pushed = Array.from({ length: 20 }, (_, i) => ({ type: 'response.output_audio_transcript.delta', delta: `w${i}` }));
    for (const event of pushed) conn.push(event);
    await until(() => (count(id, 'response.output_audio_transcript.delta') === 20 ? true : undefined), 'the pushed events');
    expect(
      endpoint
        .events(id)
        .filter((e) => e.type === 'response.output_audio_transcript.delta')
        .map((e) => e.delta),
    ).toEqual(pushed.map((e) => e.delta));
    expect(types(id).slice(0, 8)).toEqual([
      'session.created',
      'session.updated',
      'response.created',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.done',
      'response.output_audio_transcript.delta',
    ]);

    // `$disconnect` reaches the other task: forwarded, the holder closes the provider socket and logs the session once.
    await disconnect(taskB, id);
    expect(await until(() => conn.closedWith, 'the provider socket to close')).toBe(1000);
    const log = await waitFor(deps, () => observability(deps).logs.get(String(opened.headers.get('x-gw-log-id')), [workspaceId]));
    expect(log).toMatchObject({ endpoint: 'realtime', model, provider: 'openai', status_code: 101 });
    expect(log.total_tokens).toBe(REALTIME_USAGE.total_tokens);
    expect(log.cost_micros).toBeGreaterThan(0);
    expect(log.response_body).toMatchObject({
      object: 'realtime.session',
      responses: 1,
      messages: { from_client: 2, from_provider: 27 },
      close: { code: 1000, by: 'client' },
    });
    expect(await new RealtimeHolderRepository(deps.repos.table).get(id)).toBeUndefined();
    expect(taskA.service.sessions).toBe(0);
  });

  it('closes the client connection when the provider closes', async () => {
    const id = `r${++n}`;
    await connect(taskB, id);
    await send(taskA, id, { type: 'mock.close', code: 4001 });
    await until(() => (endpoint.deleted.has(id) ? true : undefined), 'the client connection to be deleted');
    await eventually(() => expect(taskB.service.sessions).toBe(0));
  });

  it('lets go of a message on a connection no task holds', async () => {
    const id = `r${++n}`;
    await send(taskB, id, { type: 'response.create' });
    expect(endpoint.deleted.has(id)).toBe(true);
    expect(endpoint.posted.get(id)).toBeUndefined();
  });
});

describe('Fargate realtime relay (a task stops)', () => {
  it('ends its sessions with an error event and a close, settles each once, and the other task lets the client go', async () => {
    // 1,500 tokens a response; 5,000 allowed. Settled once, the stopped session leaves 3,500 for the next.
    const budgeted = await makeKey({ usage_limits: { type: 'tokens', credit_limit: 5000, next_usage_reset_at: null } });
    const stopping = await startTask(otherDeps);
    const id = `r${++n}`;
    const before = mock.connections.length;
    const opened = await connect(stopping, id, upgrade(budgeted));
    expect(opened.status).toBe(200);
    await send(taskA, id, { type: 'response.create' });
    await until(() => (count(id, 'response.done') === 1 ? true : undefined), 'the response');

    await stopping.stop();
    const error = endpoint.events(id).at(-1);
    expect(error).toMatchObject({ type: 'error', error: { code: 'service_unavailable', message: expect.stringContaining('reconnect') } });
    expect(endpoint.deleted.has(id)).toBe(true);
    expect(mock.connections[before]!.closedWith).toBe(1012);
    // API Gateway's `$disconnect` then goes to a task still running: nothing is logged or settled again.
    expect((await disconnect(taskA, id, 1005)).status).toBe(200);
    const log = await waitFor(deps, () => observability(deps).logs.get(String(opened.headers.get('x-gw-log-id')), [workspaceId]));
    expect(log).toMatchObject({ endpoint: 'realtime', total_tokens: REALTIME_USAGE.total_tokens, error_code: 'service_unavailable' });

    // The client reconnects (to another task). 1,500 used: two more responses fit, the third reaches the budget.
    const again = `r${++n}`;
    expect((await connect(taskB, again, upgrade(budgeted))).status).toBe(200);
    for (let i = 1; i <= 2; i++) {
      await send(taskB, again, { type: 'response.create' });
      await until(() => (count(again, 'response.done') === i ? true : undefined), `response ${i}`);
    }
    expect(count(again, 'error')).toBe(0);
    await send(taskB, again, { type: 'response.create' });
    await until(() => (count(again, 'error') === 1 ? true : undefined), 'the budget stop');
    expect(endpoint.events(again).at(-1)).toMatchObject({ type: 'error', error: { code: 'budget_exhausted' } });
    await until(() => (endpoint.deleted.has(again) ? true : undefined), 'the close');
  });

  it('tells the client and closes it when a message comes for a session whose task is gone', async () => {
    const gone = await startTask(otherDeps);
    const id = `r${++n}`;
    await connect(gone, id);
    await until(() => (types(id).includes('session.created') ? true : undefined), 'session.created');
    // Killed without SIGTERM: its pin remains, its address answers nothing.
    await new RealtimeHolderRepository(deps.repos.table).put({ connection_id: id, holder: '127.0.0.1:1', expires_at: Math.floor(Date.now() / 1000) + 60 });
    await send(taskA, id, { type: 'response.create' });
    expect(endpoint.events(id).at(-1)).toMatchObject({ type: 'error', error: { message: expect.stringContaining('stopped') } });
    expect(endpoint.deleted.has(id)).toBe(true);
    expect(await new RealtimeHolderRepository(deps.repos.table).get(id)).toBeUndefined();
    await gone.stop();
  });

  it('treats a holder that answers but no longer holds the session (restarted at the same address) as gone', async () => {
    const id = `r${++n}`;
    const address = new URL(taskA.url).host;
    await new RealtimeHolderRepository(deps.repos.table).put({ connection_id: id, holder: address, expires_at: Math.floor(Date.now() / 1000) + 60 });
    await send(taskB, id, { type: 'response.create' });
    expect(endpoint.events(id)).toEqual([expect.objectContaining({ type: 'error', error: expect.objectContaining({ code: 'upstream_error' }) })]);
    expect(endpoint.deleted.has(id)).toBe(true);
  });
});
