/**
 * Paths no route serves, end to end in both modes: an unknown path under an admin prefix, or a
 * slip of an admin prefix (`/v1/config`), answers 404 AB02 naming what it most likely meant, and a
 * path outside /v1 OpenAI's 404, whatever key comes with it (owner, workspace, none) and before
 * any provider is called. Provider paths keep reaching the passthrough, look-alikes of admin
 * prefixes that are providers' own APIs (`/v1/organization/...`) included.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';

describe.each(['direct', 'lambda'] as const)('unknown paths (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAIApi;
  let workspaceKey: string;

  const keys = (): [string, Record<string, string>][] => [
    ['owner key', { 'x-gw-api-key': ADMIN_KEY }],
    ['workspace key', { 'x-gw-api-key': workspaceKey }],
    ['no key', {}],
  ];
  const send = (method: string, path: string, headers: Record<string, string>) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, 'content-type': 'application/json', ...headers },
      ...(method === 'GET' ? {} : { body: '{}' }),
    });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAIApi()]);
    workspaceKey = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => mock.reset());

  it.each([
    ['GET', '/v1/config', '/v1/configs'],
    ['GET', '/v1/config/prod-routing', '/v1/configs/prod-routing'],
    ['GET', '/v1/Configs', '/v1/configs'],
    ['GET', '/v1/audit_logs', '/v1/audit-logs'],
    ['POST', '/v1/api_keys/workspace/service', '/v1/api-keys/workspace/service'],
    ['GET', '/v1/policy/rate-limits', '/v1/policies/rate-limits'],
    ['GET', '/v1/gaurdrails', '/v1/guardrails'],
    ['POST', '/v1/prompt/p1/completions', '/v1/prompts/p1/completions'],
    ['GET', '/v1/openapi.yaml', '/v1/openapi.json'],
    ['GET', '/v2/mcp-server/abc/connections', '/v2/mcp-servers/abc/connections'],
  ])('%s %s: 404 AB02 suggesting %s, for every key type, no provider called', async (method, path, meant) => {
    for (const [who, headers] of keys()) {
      const res = await send(method, path, headers);
      expect(res.status, who).toBe(404);
      expect(await res.json(), who).toEqual({
        object: 'error',
        errorCode: 'AB02',
        message: `No route for ${method} ${path}; did you mean ${meant}?`,
        errors: [],
      });
    }
    expect(mock.received).toEqual([]);
  });

  it('an unknown path under an admin prefix is 404 AB02 for every key type', async () => {
    for (const [who, headers] of keys()) {
      const res = await send('GET', '/v1/configs/a/b/c', headers);
      expect(res.status, who).toBe(404);
      expect(await res.json(), who).toMatchObject({ object: 'error', errorCode: 'AB02', message: 'No route for GET /v1/configs/a/b/c' });
    }
  });

  it.each(['/nowhere', '/v1', '/v2/chat/completions', '/v2/models'])('%s: OpenAI’s 404 for every key type', async (path) => {
    for (const [who, headers] of keys()) {
      const res = await send('GET', path, headers);
      expect(res.status, who).toBe(404);
      expect(await res.json(), who).toEqual({ error: { message: `No route for GET ${path}`, type: 'not_found_error', param: null, code: 'route_not_found' } });
    }
    expect(mock.received).toEqual([]);
  });

  it('provider paths, admin look-alikes that are providers’ own APIs included, still reach the passthrough', async () => {
    for (const path of ['/v1/organization/projects', '/v1/organizations/workspaces', '/v1/vector_stores/vs_1', '/v1/evals']) {
      const res = await send('GET', path, { 'x-gw-api-key': workspaceKey, authorization: 'Bearer sk-provider' });
      expect(res.status, path).toBe(200);
      expect(mock.received.at(-1)?.path, path).toBe(path);
    }
  });

  it('a variant of a gateway endpoint stays a 400 naming the canonical path, under an admin prefix too', async () => {
    for (const [path, canonical] of [
      ['/v1/Chat/Completions/', '/v1/chat/completions'],
      ['/v1/Prompts/p1/completions', '/v1/prompts/p1/completions'],
    ]) {
      const res = await send('POST', path as string, { 'x-gw-api-key': workspaceKey });
      expect(res.status, path).toBe(400);
      expect(await res.json(), path).toMatchObject({
        error: { code: 'non_canonical_path', param: 'path', message: expect.stringContaining(canonical as string) },
      });
    }
    expect(mock.received).toEqual([]);
  });
});
