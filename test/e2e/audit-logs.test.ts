/**
 * Audit logs: every mutating admin route (generated from ADMIN_ROUTES at run time, so routes added
 * by anyone are in it) leaves exactly one completed entry naming who, what, which resource, the
 * request and its outcome; secrets in request bodies are masked; `GET /v1/audit-logs` filters by the
 * reference spec's fields within a required time range, and pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../layers/core/src/admin/routes.ts';
import type { AdminRoute } from '../../layers/core/src/admin/route.ts';
import { hashApiKey } from '../../layers/core/src/policy/api-key-secret.ts';
import { SCOPES } from '../../layers/core/src/policy/scopes.ts';
import { jwtEnv, startJwks, type JwksServer } from '../support/jwks.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';

type Json = Record<string, unknown>;

interface Entry {
  id: string;
  timestamp: string;
  method: string;
  uri: string;
  request_id: string;
  request_body: string | null;
  user_id: string | null;
  user_type: string;
  api_key_id: string | null;
  workspace_id: string | null;
  resource_type: string;
  resource_id: string | null;
  action: string;
  response_status_code: number | null;
  outcome: string;
  client_ip: string | null;
}

const concrete = (route: AdminRoute) => route.path.replace(/:([A-Za-z]+)(\{[^}]*\})?/g, (_m, name: string) => `audit-${name.toLowerCase()}`);

describe.each(['direct', 'lambda'] as const)('audit logs (%s mode)', (mode) => {
  let gw: TestGantry;
  let jwks: JwksServer;
  let ownerKeyId: string;
  const start = new Date(Date.now() - 60_000).toISOString();

  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-gw-api-key': ADMIN_KEY }) => {
    const res = await fetch(gw.url + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json, requestId: res.headers.get('x-gw-request-id') ?? '' };
  };
  const entries = async (query: string): Promise<{ total: number; data: Entry[] }> => {
    const end = new Date(Date.now() + 60_000).toISOString();
    const reply = await send('GET', `/v1/audit-logs?start_time=${start}&end_time=${end}&page_size=100${query ? `&${query}` : ''}`);
    expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    return reply.json as unknown as { total: number; data: Entry[] };
  };

  beforeAll(async () => {
    jwks = await startJwks();
    gw = await startGantry(mode, jwtEnv(jwks));
    ownerKeyId = (await gw.deps.repos.apiKeys.getByHash(hashApiKey(ADMIN_KEY)))?.id ?? '';
  });
  afterAll(async () => {
    await gw?.close();
    await jwks?.close();
  });

  it('every mutating route writes exactly one completed entry: identity, action, resource, request, status, IP', async () => {
    const mutating = ADMIN_ROUTES.filter((r) => r.method !== 'GET');
    expect(mutating.length).toBeGreaterThan(30);
    const problems: string[] = [];
    for (const route of mutating) {
      const reply = await send(route.method, concrete(route), {});
      expect(reply.requestId, `${route.method} ${route.path}`).toMatch(/^[0-9a-f-]{36}$/);
      const found = (await entries(`request_id=${reply.requestId}`)).data;
      const label = `${route.method} ${route.path} (${reply.status})`;
      if (found.length !== 1) {
        problems.push(`${label}: ${found.length} entries`);
        continue;
      }
      const e = found[0] as Entry;
      const scopeResource = route.scope.slice(0, route.scope.lastIndexOf('.'));
      const scopeAction = route.scope.slice(route.scope.lastIndexOf('.') + 1);
      const expected = {
        method: route.method,
        uri: concrete(route),
        response_status_code: reply.status,
        outcome: reply.status < 400 ? 'success' : 'failure',
        user_type: 'api_key',
        api_key_id: ownerKeyId,
        resource_type: route.audit?.resourceType ?? scopeResource,
        action: route.audit?.action ?? scopeAction,
        client_ip: '127.0.0.1',
        request_body: '{}',
      };
      for (const [k, v] of Object.entries(expected)) {
        if (e[k as keyof Entry] !== v) problems.push(`${label}: ${k} is ${JSON.stringify(e[k as keyof Entry])}, expected ${JSON.stringify(v)}`);
      }
      if (route.path.includes(':') && !String(e.resource_id).startsWith('audit-')) problems.push(`${label}: resource_id ${e.resource_id}`);
    }
    expect(problems).toEqual([]);
  });

  it('reads are not audited; requests without credentials are not either', async () => {
    const read = await send('GET', '/v1/workspaces');
    expect((await entries(`request_id=${read.requestId}`)).total).toBe(0);
    const anonymous = await send('POST', '/v1/workspaces', { name: 'x' }, {});
    expect(anonymous.status).toBe(401);
    expect((await entries(`request_id=${anonymous.requestId}`)).total).toBe(0);
  });

  it('a change and its entry: the created resource is named, and a refused attempt is recorded as a failure', async () => {
    const created = await send('POST', '/v1/workspaces', { name: 'Audited', slug: `audited-${mode}` });
    expect(created.status).toBe(200);
    const [entry] = (await entries(`request_id=${created.requestId}`)).data;
    expect(entry).toMatchObject({ resource_type: 'workspaces', action: 'create', resource_id: created.json.id, response_status_code: 200, outcome: 'success' });
    const dup = await send('POST', '/v1/workspaces', { name: 'Audited', slug: `audited-${mode}` });
    expect(dup.status).toBe(409);
    expect((await entries(`request_id=${dup.requestId}`)).data[0]).toMatchObject({ response_status_code: 409, outcome: 'failure' });
    const member = await send('POST', '/v1/api-keys/workspace/service', { name: 'm', workspace_id: 'default', scopes: ['configs.list'] });
    const denied = await send('POST', '/v1/configs', { name: 'c', config: {} }, { 'x-gw-api-key': member.json.key as string });
    expect(denied.status).toBe(403);
    expect((await entries(`request_id=${denied.requestId}`)).data[0]).toMatchObject({
      response_status_code: 403,
      api_key_id: member.json.id,
      workspace_id: gw.boot.workspaceId,
    });
  });

  it('masks secrets in request bodies: provider keys, gateway keys, tokens, passwords', async () => {
    const reply = await send('POST', '/v1/configs', {
      name: 'with secrets',
      workspace_id: 'default',
      config: { provider: 'openai', api_key: 'sk-live-abcdefghijklmnop', override_params: { note: `key ${ADMIN_KEY}` } },
      password: 'hunter2',
    });
    const [entry] = (await entries(`request_id=${reply.requestId}`)).data;
    const body = String(entry?.request_body);
    expect(body).not.toContain('sk-live-abcdefghijklmnop');
    expect(body).not.toContain(ADMIN_KEY);
    expect(body).not.toContain('hunter2');
    expect(body).toContain('"api_key":"****"');
    expect(body).toContain('with secrets');
  });

  it('masks secrets in query strings and every secret-named body field; policy conditions read as written', async () => {
    const created = await send('POST', '/v1/admin/users/invites', { email: `audited-${mode}@example.com`, role: 'member', workspaces: [] });
    const invite = new URL(String(created.json.invite_link)).searchParams.get('token') as string;
    const accept = await send('POST', `/v1/admin/users/invites/accept?token=${invite}`, { first_name: 'A' }, {});
    expect(accept.status, JSON.stringify(accept.json)).toBe(200);
    const [acceptEntry] = (await entries(`request_id=${accept.requestId}`)).data;
    expect(JSON.stringify(acceptEntry)).not.toContain(invite);
    expect((acceptEntry as unknown as Json).query_params).toBe('{"token":"****"}');

    const secrets = {
      token: 'tok-plain-1',
      client_secret: 'cs-plain-2',
      access_token: 'at-plain-3',
      secret: 'se-plain-4',
      note: `sk-ant-api03-${'x'.repeat(24)}`,
    };
    // Refused or not, the attempt is audited with its body.
    const policy = await send('POST', '/v1/policies/rate-limits', {
      conditions: [{ key: 'workspace_id', value: 'default' }],
      group_by: [{ key: 'api_key' }],
      ...secrets,
    });
    const body = String((await entries(`request_id=${policy.requestId}`)).data[0]?.request_body);
    for (const v of Object.values(secrets)) expect(body).not.toContain(v);
    expect(body).toContain('"conditions":[{"key":"workspace_id","value":"default"}]');
    expect(body).toContain('"group_by":[{"key":"api_key"}]');
  });

  it('a JWT user is recorded as a user with its subject and e-mail', async () => {
    const token = await jwks.sign({ sub: 'auditor', email: 'auditor@example.com', role: 'admin', scope: SCOPES.join(' ') });
    const reply = await send('POST', '/v1/workspaces', { name: 'By a person' }, { authorization: `Bearer ${token}` });
    expect(reply.status).toBe(200);
    expect((await entries(`request_id=${reply.requestId}`)).data[0]).toMatchObject({
      user_type: 'user',
      user_id: 'auditor',
      api_key_id: null,
      email: 'auditor@example.com',
      role: 'admin',
    });
  });

  it('filters by method, uri, user, key, workspace, status, resource type and action; pages', async () => {
    const rename = await send('PUT', '/v1/workspaces/default', { description: 'filtered' });
    const all = await entries('');
    expect(all.total).toBeGreaterThan(10);
    const check = async (query: string, pred: (e: Entry) => boolean) => {
      const got = await entries(query);
      expect(got.total, query).toBeGreaterThan(0);
      expect(got.data.every(pred), query).toBe(true);
      expect(got.total, query).toBe(all.data.filter(pred).length);
    };
    await check('method=PUT', (e) => e.method === 'PUT');
    await check('uri=/v1/workspaces/default', (e) => e.uri === '/v1/workspaces/default');
    await check(`api_key_id=${ownerKeyId}`, (e) => e.api_key_id === ownerKeyId);
    await check('user_id=auditor', (e) => e.user_id === 'auditor');
    await check('user_type=user', (e) => e.user_type === 'user');
    await check('response_status_code=404', (e) => e.response_status_code === 404);
    await check('resource_type=workspaces&action=update', (e) => e.resource_type === 'workspaces' && e.action === 'update');
    await check(`workspace_id=${gw.boot.workspaceId}`, (e) => e.workspace_id === gw.boot.workspaceId || e.workspace_id === 'default');
    expect((await entries(`request_id=${rename.requestId}`)).data.map((e) => e.resource_id)).toEqual([gw.boot.workspaceId]);
    const first = (await send('GET', `/v1/audit-logs?start_time=${start}&end_time=${new Date(Date.now() + 60_000).toISOString()}&page_size=2&current_page=1`))
      .json;
    expect(first).toMatchObject({ object: 'list', total: all.total });
    expect((first.data as Entry[]).map((e) => e.id)).toEqual(all.data.slice(2, 4).map((e) => e.id));
  });

  it('reads the last 24 hours without a time range', async () => {
    const reply = await send('GET', '/v1/audit-logs?page_size=100');
    expect(reply.status).toBe(200);
    const entries = reply.json.data as Entry[];
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e) => Date.parse(e.timestamp) >= Date.now() - 86_400_000 - 60_000)).toBe(true);
  });

  it('400 AB01 with an inverted or too long time range, or with a bad filter', async () => {
    const bad = async (query: string, paths: string[]) => {
      const reply = await send('GET', `/v1/audit-logs?${query}`);
      expect(reply.status, query).toBe(400);
      expect(
        (reply.json.errors as { path: string }[]).map((e) => e.path),
        query,
      ).toEqual(paths);
    };
    await bad('start_time=2026-01-02T00:00:00Z&end_time=2026-01-01T00:00:00Z', ['end_time']);
    await bad('start_time=2024-01-01T00:00:00Z&end_time=2026-01-01T00:00:00Z', ['end_time']);
    await bad('start_time=2026-01-01T00:00:00Z&end_time=2026-01-02T00:00:00Z&method=GET', ['method']);
    await bad('start_time=2026-01-01T00:00:00Z&end_time=2026-01-02T00:00:00Z&response_status_code=abc', ['response_status_code']);
  });

  it('only owners and admins read the audit log', async () => {
    const manager = await send('POST', '/v1/api-keys/workspace/service', { name: 'm', workspace_id: 'default', scopes: ['completions.write'] });
    const reply = await send('GET', `/v1/audit-logs?start_time=${start}&end_time=${new Date().toISOString()}`, undefined, {
      'x-gw-api-key': manager.json.key as string,
    });
    expect([reply.status, reply.json.errorCode]).toEqual([403, 'AB03']);
  });
});
