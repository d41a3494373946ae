/**
 * Headers for the provider, end to end in both modes: `x-gw-forward-headers` (JSON array or list,
 * merged with a config's forward_headers, never x-gw-*), and the cloud-specific headers, which
 * become provider options (here: OpenAI's organisation and project headers, the only options an
 * OpenAI-wire provider sends) and never reach the provider or the record as headers or values.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';

const CLOUD = {
  'x-gw-azure-resource-name': 'my-resource',
  'x-gw-azure-deployment-id': 'gpt4o-deploy',
  'x-gw-azure-api-version': '2024-10-21',
  'x-gw-azure-model-name': 'gpt-4o',
  'x-gw-vertex-project-id': 'proj-123',
  'x-gw-vertex-region': 'europe-west4',
  'x-gw-aws-access-key-id': 'AKIAEXAMPLEKEY0001',
  'x-gw-aws-secret-access-key': 'secret-access-key-value-0001',
  'x-gw-aws-region': 'eu-west-1',
  'x-gw-aws-session-token': 'session-token-value-0001',
};

describe.each(['direct', 'lambda'] as const)('provider headers (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const records: GatewayRecord[] = [];
  const hook: GatewayHook = { name: 'recorder', complete: (r) => void records.push(r) };

  const chat = (headers: Record<string, string>) =>
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
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
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
    mock.received.length = 0;
    records.length = 0;
  });

  it('forwards the headers x-gw-forward-headers names (JSON array), untouched', async () => {
    const res = await chat({
      'x-gw-forward-headers': '["X-Team", "x-trace-context", "x-gw-api-key"]',
      'x-team': 'Search',
      'x-trace-context': 'a=1;b=2',
      'x-other': 'no',
    });
    expect(res.status).toBe(200);
    const got = mock.received[0]!.headers;
    expect(got['x-team']).toBe('Search');
    expect(got['x-trace-context']).toBe('a=1;b=2');
    expect(got['x-other']).toBeUndefined();
    expect(Object.keys(got).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
  });

  it("takes a comma-separated list too, merged with the config's forward_headers", async () => {
    const config = { provider: 'openai', custom_host: `${mock.url}/v1`, forward_headers: ['x-from-config'] };
    const res = await chat({ 'x-gw-config': JSON.stringify(config), 'x-gw-forward-headers': 'x-a, x-b', 'x-a': '1', 'x-b': '2', 'x-from-config': '3' });
    expect(res.status).toBe(200);
    expect(mock.received[0]!.headers).toMatchObject({ 'x-a': '1', 'x-b': '2', 'x-from-config': '3' });
  });

  it('refuses a malformed list, naming the header', async () => {
    for (const bad of ['["x-a", 3]', '[not json', 'x-a, bad header']) {
      const res = await chat({ 'x-gw-forward-headers': bad });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { param: 'x-gw-forward-headers', type: 'invalid_request_error' } });
    }
    expect(mock.received).toHaveLength(0);
  });

  it('never sends cloud headers or their values to the provider, nor keeps secrets in the record', async () => {
    const res = await chat({ ...CLOUD, 'x-gw-openai-organization': 'org-42', 'x-gw-openai-project': 'proj-7' });
    expect(res.status).toBe(200);
    const got = mock.received[0]!.headers;
    // Provider options an OpenAI-wire provider does send, as its own headers.
    expect(got['openai-organization']).toBe('org-42');
    expect(got['openai-project']).toBe('proj-7');
    const sent = JSON.stringify(got);
    for (const value of Object.values(CLOUD)) expect(sent).not.toContain(value);
    await until(() => records[0], 'the request record');
    const record = JSON.stringify({ ...records[0], principal: undefined });
    for (const secret of [CLOUD['x-gw-aws-secret-access-key'], CLOUD['x-gw-aws-session-token'], CLOUD['x-gw-aws-access-key-id']])
      expect(record).not.toContain(secret);
  });

  it("lets a config target's own option win over the header", async () => {
    const config = { provider: 'openai', custom_host: `${mock.url}/v1`, openai_organization: 'org-config' };
    await chat({ 'x-gw-config': JSON.stringify(config), 'x-gw-openai-organization': 'org-header', 'x-gw-openai-project': 'proj-header' });
    expect(mock.received[0]!.headers).toMatchObject({ 'openai-organization': 'org-config', 'openai-project': 'proj-header' });
  });
});
