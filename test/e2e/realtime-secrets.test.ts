/**
 * Realtime client secrets with the workspace's policy: a managed provider's model allow-list
 * (refused naming `session.model` / `model`, before the provider is asked), a Gantry prompt
 * rendered into the session's instructions, and the cap on a secret's life. The provider is the
 * mock realtime server, which records what it was asked to mint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REALTIME_SECRET_MAX_SECONDS } from '../../layers/core/src/gateway/prompt-input.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockRealtime, type MockRealtime } from '../support/mock-realtime.ts';
import { storedLog } from '../support/observability.ts';

type Json = Record<string, unknown>;

describe.each(['direct', 'lambda'] as const)('realtime client secret policy (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockRealtime;
  let key: string;
  let n = 0;

  const ok = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const res = await gw.admin(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.json)}`).toBe(200);
    return res.json;
  };
  const post = async (path: string, body: Json, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/v1/realtime/${path}`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-provider': '@voice', 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const param = (r: { json: Json }) => (r.json.error as Json | undefined)?.param;

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockRealtime()]);
    await ok('POST', '/v1/integrations', {
      name: 'Voice',
      slug: 'voice',
      ai_provider_id: 'openai',
      key: 'sk-voice',
      configurations: { custom_host: `${mock.url}/v1` },
      allowed_models: ['gpt-realtime', 'gpt-realtime-mini'],
    });
    await ok('POST', '/v1/providers', { name: 'Voice', slug: 'voice', integration_id: 'voice', workspace_id: 'default' });
    const collection = (await ok('POST', '/v1/collections', { name: 'Voice agents', workspace_id: 'default' })).id;
    await ok('POST', '/v1/prompts', {
      name: 'Concierge',
      collection_id: collection,
      string: JSON.stringify([
        { role: 'system', content: 'You are the {{hotel}} concierge. Speak briefly.' },
        { role: 'user', content: 'Hello' },
      ]),
      parameters: {},
      model: 'gpt-realtime-mini',
    });
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('refuses a model outside the managed provider’s allow-list with 403 naming session.model or model, before the provider is asked', async () => {
    const before = mock.secrets.length;
    const secret = await post('client_secrets', { session: { type: 'realtime', model: 'gpt-4o-realtime-preview' } });
    expect([secret.status, param(secret)]).toEqual([403, 'session.model']);
    const session = await post('sessions', { model: 'gpt-4o-realtime-preview' });
    expect([session.status, param(session)]).toEqual([403, 'model']);
    expect(mock.secrets.length).toBe(before);
    expect((await post('client_secrets', { session: { type: 'realtime', model: 'gpt-realtime' } })).status).toBe(200);
  });

  it('renders a Gantry prompt into the session’s instructions, before the client’s own, and logs the prompt', async () => {
    const t = `rt-secret-${mode}-${++n}`;
    const res = await post(
      'client_secrets',
      { prompt_id: 'concierge', prompt_variables: { hotel: 'Grand' }, session: { type: 'realtime', instructions: 'Answer in French.' } },
      { 'x-gw-trace-id': t },
    );
    expect(res.status).toBe(200);
    const asked = mock.secrets.at(-1)!.body;
    // The prompt's model, since the request named none; neither prompt field reaches the provider.
    expect(asked.session).toMatchObject({ model: 'gpt-realtime-mini', instructions: 'You are the Grand concierge. Speak briefly.\n\nAnswer in French.' });
    expect(asked).not.toHaveProperty('prompt_id');
    expect(asked).not.toHaveProperty('prompt_variables');
    expect(res.json).toMatchObject({ session: { instructions: expect.stringContaining('Grand concierge') } });
    expect(await storedLog(gw, t)).toMatchObject({ prompt_id: expect.any(String), endpoint: 'createRealtimeClientSecret' });

    const older = await post('sessions', { model: 'gpt-realtime' }, { 'x-gw-prompt': 'concierge' });
    expect(older.status).toBe(422);
    const withVars = await post('sessions', { model: 'gpt-realtime', prompt_variables: { hotel: 'Ritz' } }, { 'x-gw-prompt': 'concierge' });
    expect(withVars.status).toBe(200);
    expect(mock.secrets.at(-1)!.body).toMatchObject({ model: 'gpt-realtime', instructions: 'You are the Ritz concierge. Speak briefly.' });
  });

  it('refuses an unknown prompt or bad prompt fields with 400 naming them', async () => {
    const before = mock.secrets.length;
    const unknown = await post('client_secrets', { prompt_id: 'nope', session: { model: 'gpt-realtime' } });
    expect([unknown.status, param(unknown)]).toEqual([400, 'prompt_id']);
    const notString = await post('client_secrets', { prompt_id: 7, session: { model: 'gpt-realtime' } });
    expect([notString.status, param(notString)]).toEqual([400, 'prompt_id']);
    const vars = await post('sessions', { model: 'gpt-realtime', prompt_id: 'concierge', prompt_variables: 'Grand' });
    expect([vars.status, param(vars)]).toEqual([400, 'prompt_variables']);
    expect(mock.secrets.length).toBe(before);
  });

  it('caps the secret’s life: longer is refused naming expires_after.seconds, none gets the cap', async () => {
    const long = await post('client_secrets', {
      expires_after: { anchor: 'created_at', seconds: REALTIME_SECRET_MAX_SECONDS + 1 },
      session: { model: 'gpt-realtime' },
    });
    expect([long.status, param(long)]).toEqual([400, 'expires_after.seconds']);
    expect((await post('client_secrets', { session: { model: 'gpt-realtime' } })).status).toBe(200);
    expect(mock.secrets.at(-1)!.body.expires_after).toEqual({ anchor: 'created_at', seconds: REALTIME_SECRET_MAX_SECONDS });
    expect((await post('client_secrets', { expires_after: { seconds: 60 }, session: { model: 'gpt-realtime' } })).status).toBe(200);
    expect(mock.secrets.at(-1)!.body.expires_after).toEqual({ seconds: 60 });
  });
});
