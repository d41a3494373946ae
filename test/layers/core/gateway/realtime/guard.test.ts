/**
 * Guardrail hooks on API Gateway's realtime relay (apigw-relay.ts), with the guard the local relay
 * uses too (guard.ts; end to end through the local relay in test/e2e/realtime-guardrails.test.ts):
 * the mock realtime provider (a real `ws` server) upstream and a real HTTP server standing in for
 * the stage's `@connections` endpoint, which records what is posted to the client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ApiGatewayRelay } from '../../../../../layers/core/src/gateway/realtime/apigw-relay.ts';
import { observability } from '../../../../../layers/core/src/observability/install.ts';
import { ApiGatewayConnections } from '../../../../../layers/core/src/ports/aws/connections-apigw.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { startMockConnections, type MockConnections } from '../../../../support/mock-connections.ts';
import { startMockRealtime, type MockRealtime } from '../../../../support/mock-realtime.ts';
import { waitFor } from '../../../../support/observability.ts';
import { keyRecord } from '../../../../support/records.ts';

type Json = Record<string, unknown>;
const FORBIDDEN = 'glpat-0123';
const block = (words: string[]) => ({ 'default.contains': { operator: 'none', words }, deny: true });

let deps: CoreDeps;
let mock: MockRealtime;
let endpoint: MockConnections;
let relay: ApiGatewayRelay;
let connections: ApiGatewayConnections;
let key: string;
let workspaceId: string;
let n = 0;

beforeAll(async () => {
  [deps, mock, endpoint] = await Promise.all([createTestDeps(), startMockRealtime(), startMockConnections()]);
  const boot = await ensureBootstrap(deps);
  workspaceId = boot.workspaceId;
  const made = keyRecord({ organisation_id: boot.organisationId, workspace_id: boot.workspaceId, scopes: ['completions.write'] }, Date.now());
  await deps.repos.apiKeys.create(made.record);
  key = made.key;
  relay = new ApiGatewayRelay(deps, { quietMs: 100 });
  connections = new ApiGatewayConnections(endpoint.endpoint, { region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
});
afterAll(async () => {
  await Promise.all([mock?.close(), endpoint?.close()]);
  deps?.upstream.close();
});

/** A session accepted at `$connect` with these hooks on its target; its connection id and log id. */
async function connect(hooks: Json): Promise<{ id: string; logId: string }> {
  const id = `g${++n}`;
  const config = { provider: 'openai', api_key: 'sk-provider', custom_host: `${mock.url}/v1`, ...hooks };
  const res = await relay.connect(
    id,
    new Request('https://ws.example/v1/realtime?model=gpt-4o-realtime-preview', { headers: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) } }),
  );
  expect(res.status).toBe(200);
  return { id, logId: res.headers.get('x-gw-log-id')! };
}

const send = (id: string, event: Json) => relay.message(id, Buffer.from(JSON.stringify(event)), false, connections);
const say = (text: string) => ({ type: 'response.create', response: { metadata: { text, chunk: 3 } } });
const posted = (id: string) => endpoint.events(id);

describe('realtime guardrails behind API Gateway', () => {
  it('never sends the provider client text an input guardrail denies, and posts the client an error event naming it', async () => {
    const { id } = await connect({ input_guardrails: [block([FORBIDDEN])] });
    const before = mock.connections.length;
    await send(id, {
      type: 'conversation.item.create',
      event_id: 'evt_1',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: `token ${FORBIDDEN}` }] },
    });
    await send(id, { type: 'session.update', session: { instructions: 'Be brief.' } });
    const error = posted(id).find((e) => e.type === 'error');
    expect(error).toMatchObject({ error: { type: 'invalid_request_error', code: 'hooks_failed', event_id: 'evt_1' } });
    expect(posted(id).map((e) => e.type)).toContain('session.updated');
    const seen = mock.connections.slice(before).flatMap((c) => c.events);
    expect(JSON.stringify(seen)).not.toContain(FORBIDDEN);
    expect(seen.map((e) => e.type)).toEqual(['session.update']);
    await relay.disconnect(id, 1000);
  });

  it('stops a response whose deltas spell denied text: nothing of it is posted, the response is cancelled, and the log has the verdict', async () => {
    const { id, logId } = await connect({ output_guardrails: [block([FORBIDDEN])] });
    const before = mock.connections.length;
    await send(id, say(`The token is ${FORBIDDEN}.`));
    const events = posted(id);
    expect(JSON.stringify(events)).not.toContain('glpat');
    expect(events.filter((e) => e.type === 'error')).toEqual([expect.objectContaining({ error: expect.objectContaining({ code: 'hooks_failed' }) })]);
    expect(events.find((e) => e.type === 'response.done')).toMatchObject({
      response: { status: 'incomplete', status_details: { reason: 'content_filter' }, output: [] },
    });
    expect(mock.connections[before]!.events.map((e) => e.type)).toContain('response.cancel');

    // The session goes on.
    await send(id, say('Fine.'));
    expect(
      posted(id)
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Fine.');
    await relay.disconnect(id, 1000);
    const log = await waitFor(deps, () => observability(deps).logs.get(logId, [workspaceId]));
    expect(log).toMatchObject({ endpoint: 'realtime', error_code: 'hooks_failed' });
    expect(JSON.stringify(log)).toContain('"responses_stopped":1');
    expect((log.hook_results as { after_request_hooks: Json[] } | undefined)?.after_request_hooks).toContainEqual(
      expect.objectContaining({ verdict: false, deny: true }),
    );
  });

  it('posts a passing session exactly as a session without hooks', async () => {
    const run = async (hooks: Json) => {
      const { id } = await connect(hooks);
      await send(id, { type: 'session.update', session: { instructions: 'Be brief.' } });
      await send(id, say('A plain answer, long enough for several windows.'));
      await relay.disconnect(id, 1000);
      return JSON.parse(JSON.stringify(posted(id)).replace(/"(event_mock|resp_mock|item_mock|sess_mock)_\d+"/g, '"$1"')) as Json[];
    };
    const plain = await run({});
    expect(plain.map((e) => e.type)).toContain('response.output_text.delta');
    expect(await run({ input_guardrails: [block(['never-said'])], output_guardrails: [block(['never-said'])] })).toEqual(plain);
  });
});
