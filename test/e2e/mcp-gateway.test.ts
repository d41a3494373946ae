/**
 * The MCP gateway driven by the official SDK client against a real SDK MCP server (Streamable
 * HTTP, stateful and stateless): exactly the allowed tools listed and callable, hidden ones refused
 * without reaching the server, access rules, sealed sessions served by two separate instances,
 * the upstream OAuth refresh, the SSRF guard, and the call's log.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalServer, type LocalServer } from '../../lambdas/local/server.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { getUserConnection, McpRepository, putUserConnection, sealMcpSecrets, type McpIntegrationRecord } from '../../layers/core/src/store/mcp.ts';
import { createTestDepsOn } from '../support/deps.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { addUser } from '../support/identity.ts';
import { storedLog } from '../support/observability.ts';
import { MCP_DEFAULT_TOOLS, startMcpUpstream, type McpUpstream } from '../support/mcp-upstream.ts';

const NOW = '2026-11-24T10:00:00.000Z';
type Json = Record<string, unknown>;
const cap = (type: 'tool' | 'prompt' | 'resource', name: string, enabled: boolean) => ({ type, name, enabled, created_at: NOW, last_updated_at: NOW });

interface ServerOptions {
  url: string;
  /** Enabled tools (default echo and add); the other default tools are disabled. */
  tools?: readonly string[];
  authType?: McpIntegrationRecord['auth_type'];
  headers?: Record<string, string>;
  configurations?: Record<string, unknown>;
  workspaceId?: string;
  defaultAccess?: 'allow' | 'deny';
}

/** Registers an integration (echo and add enabled, delete_everything disabled) and a server; answers its slug. */
async function register(gw: TestGantry, o: ServerOptions): Promise<{ slug: string; serverId: string }> {
  const org = gw.boot.organisationId;
  const repo = new McpRepository(gw.deps.repos.table);
  const id = randomUUID();
  const secret = await sealMcpSecrets(gw.deps.cipher, org, id, { headers: o.headers ?? {} });
  await repo.createIntegration({
    id,
    organisation_id: org,
    workspace_id: null,
    slug: `int-${id.slice(0, 8)}`,
    name: 'Int',
    description: null,
    url: o.url,
    auth_type: o.authType ?? (o.headers ? 'headers' : 'none'),
    transport: 'http',
    configurations: o.configurations ?? {},
    masked_configurations: {},
    secret,
    global_workspace_access: true,
    workspace_ids: [],
    new_capabilities_enabled: true,
    status: 'active',
    created_at: NOW,
    last_updated_at: NOW,
    created_by: null,
    last_updated_by: null,
  });
  const enabled = new Set(o.tools ?? ['echo', 'add']);
  await repo.putCapabilities(
    org,
    id,
    [
      ...MCP_DEFAULT_TOOLS.map((t) => cap('tool', t, enabled.has(t))),
      cap('prompt', 'greeting', true),
      cap('prompt', 'review', false),
      cap('resource', 'file:///readme.md', true),
      cap('resource', 'file:///secrets.txt', false),
    ],
    NOW,
  );
  const serverId = randomUUID();
  const slug = `srv-${serverId.slice(0, 8)}`;
  await repo.createServer({
    id: serverId,
    organisation_id: org,
    workspace_id: o.workspaceId ?? gw.boot.workspaceId,
    slug,
    name: 'Srv',
    description: null,
    mcp_integration_id: id,
    capability_overrides: {},
    default_user_access: o.defaultAccess ?? 'allow',
    user_access: {},
    status: 'active',
    created_at: NOW,
    last_updated_at: NOW,
    created_by: null,
    last_updated_by: null,
  });
  return { slug, serverId };
}

async function connect(base: string, slug: string, key: string, sessionId?: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/${slug}`), {
    requestInit: { headers: { 'x-gw-api-key': key } },
    ...(sessionId ? { sessionId } : {}),
  });
  const client = new Client({ name: 'gantry-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

const rpc = (base: string, slug: string, key: string, body: unknown, extra: Record<string, string> = {}) =>
  fetch(`${base}/mcp/${slug}`, {
    method: 'POST',
    headers: {
      'x-gw-api-key': key,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...extra,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe.each(['direct', 'lambda'] as const)('MCP gateway (%s mode)', (mode) => {
  let gw: TestGantry;
  let stateful: McpUpstream;
  let stateless: McpUpstream;
  let key: string;
  let sessions: { slug: string; serverId: string };
  let plain: { slug: string; serverId: string };

  beforeAll(async () => {
    const keyFile = path.join(os.tmpdir(), `gantry-mcp-${randomUUID()}.key`);
    [gw, stateful, stateless] = await Promise.all([
      startGantry(mode, { GW_CIPHER_KEY_FILE: keyFile }),
      startMcpUpstream({ stateful: true, requiredHeader: { name: 'x-api-key', value: 'upstream-secret' } }),
      startMcpUpstream({ stateful: false, json: true }),
    ]);
    key = await gw.workspaceKey();
    sessions = await register(gw, { url: stateful.url, headers: { 'x-api-key': 'upstream-secret' } });
    plain = await register(gw, { url: stateless.url });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), stateful?.close(), stateless?.close()]);
  });

  it('an SDK client lists and calls exactly the allowed tools, prompts and resources', async () => {
    for (const srv of [sessions, plain]) {
      const { client } = await connect(gw.url, srv.slug, key);
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
      expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['greeting']);
      expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(['file:///readme.md']);
      expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).toMatchObject({ content: [{ type: 'text', text: '5' }] });
      expect(await client.readResource({ uri: 'file:///readme.md' })).toMatchObject({ contents: [{ text: '# Readme' }] });
      await client.close();
    }
  });

  it('for any enabled subset of tools, the SDK client sees and calls exactly that subset (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.subarray([...MCP_DEFAULT_TOOLS]), async (tools) => {
        const srv = await register(gw, { url: stateless.url, tools });
        const { client } = await connect(gw.url, srv.slug, key);
        try {
          expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([...tools].sort());
          for (const name of MCP_DEFAULT_TOOLS) {
            const before = stateless.calls.length;
            const call = client.callTool({ name, arguments: { text: 'x' } });
            if (tools.includes(name)) {
              expect(await call).toMatchObject({ content: [{ type: 'text' }] });
              expect(stateless.calls.slice(before)).toEqual([name]);
            } else {
              await expect(call).rejects.toThrow(`Tool ${name} not found`);
              expect(stateless.calls.length).toBe(before);
            }
          }
        } finally {
          await client.close();
        }
      }),
      { numRuns: 6 },
    );
  });

  it('refuses a hidden tool, prompt or resource with a JSON-RPC error that never reaches the server', async () => {
    const { client } = await connect(gw.url, sessions.slug, key);
    const before = stateful.requests.length;
    await expect(client.callTool({ name: 'delete_everything', arguments: {} })).rejects.toThrow(/Tool delete_everything not found/);
    await expect(client.getPrompt({ name: 'review' })).rejects.toThrow(/Prompt review not found/);
    await expect(client.readResource({ uri: 'file:///secrets.txt' })).rejects.toThrow(/not found/);
    // Nothing was posted upstream (the SDK's own GET stream may open meanwhile).
    expect(stateful.requests.slice(before).filter((r) => r.method === 'POST')).toEqual([]);
    expect(stateful.calls).not.toContain('delete_everything');
    await client.close();
  });

  it('handles a batch element by element: the hidden call refused, the allowed one relayed', async () => {
    const before = stateless.requests.length;
    const res = await rpc(gw.url, plain.slug, key, [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_everything', arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]);
    expect(res.status).toBe(200);
    const text = await res.text();
    const messages = (
      text.trim().startsWith('[')
        ? JSON.parse(text)
        : text
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => JSON.parse(l.slice(5)))
    ) as Json[];
    expect(messages.find((m) => m.id === 1)).toMatchObject({ error: { code: -32602, message: 'Tool delete_everything not found' } });
    const list = messages.find((m) => m.id === 2) as { result?: { tools: Array<{ name: string }> } } | undefined;
    if (list?.result) expect(list.result.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    expect(stateless.requests.slice(before).flatMap((r) => r.targets)).not.toContain('delete_everything');
  });

  it('refuses a message with a key twice (a second tool name, at any depth) as an invalid request that never reaches the server', async () => {
    const before = { requests: stateless.requests.length, calls: stateless.calls.length };
    const bodies = [
      // The allow-list would read the last name, a server keeping the first would run the hidden tool.
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_everything","name":"echo","arguments":{"text":"x"}}}',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","na\\u006de":"delete_everything","arguments":{}}}',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","text":"b"}}}',
      '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"id":3,"method":"tools/call","params":{"name":"echo"}}]',
    ];
    for (const body of bodies) {
      const res = await rpc(gw.url, plain.slug, key, body);
      expect(res.status, body).toBe(400);
      expect(await res.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringMatching(/^Invalid request: the key "(name|text|id)" appears more than once in one object$/) },
      });
    }
    expect(stateless.requests.length).toBe(before.requests);
    expect(stateless.calls.length).toBe(before.calls);
  });

  it('sends on the message it checked, serialised again, never the bytes the client wrote', async () => {
    const sent = '{ "jsonrpc" : "2.0", "id": 9, "method": "tools/call",\n "params": { "na\\u006de": "echo", "arguments": { "text": "re\\u0073ent" } } }';
    const res = await rpc(gw.url, plain.slug, key, sent);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 9, result: { content: [{ type: 'text', text: 'resent' }] } });
    expect(stateless.requests.at(-1)?.raw).toBe(JSON.stringify(JSON.parse(sent)));
    expect(stateless.requests.at(-1)?.raw).toBe('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"resent"}}}');
  });

  it('answers 401 for a bad key, 404 for an unknown slug, 403 for a denied user or another workspace, before any upstream contact', async () => {
    const before = stateful.requests.length + stateless.requests.length;
    const init = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    expect((await rpc(gw.url, sessions.slug, 'gw_wrong-key-000000000000000000000000000', init)).status).toBe(401);
    expect((await rpc(gw.url, 'no-such-server', key, init)).status).toBe(404);
    const denied = await register(gw, { url: stateless.url, defaultAccess: 'deny' });
    expect((await rpc(gw.url, denied.slug, key, init)).status).toBe(403);
    const elsewhere = await register(gw, { url: stateless.url, workspaceId: 'another-workspace' });
    expect((await rpc(gw.url, elsewhere.slug, key, init)).status).toBe(403);
    expect(stateful.requests.length + stateless.requests.length).toBe(before);
  });

  it('refuses an integration URL on a private address (SSRF) without connecting', async () => {
    const internal = await register(gw, { url: 'http://10.20.30.40/mcp' });
    const res = await rpc(gw.url, internal.slug, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/not allowed.*private or reserved/);
  });

  it('also serves /v1/mcp/{slug} (the AWS form) and the Portkey shape /{slug}/mcp, with a Bearer gateway key', async () => {
    for (const url of [`${gw.url}/v1/mcp/${plain.slug}`, `${gw.url}/${plain.slug}/mcp`]) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
      });
      expect(res.status, url).toBe(200);
      expect(((await res.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
    }
    expect((await fetch(`${gw.url}/v1/mcp`, { method: 'POST', headers: { authorization: `Bearer ${key}` } })).status).not.toBe(200);
  });

  it('hands out a sealed session that a second, separate instance serves; a forged or foreign one is 404', async () => {
    const { client, transport } = await connect(gw.url, sessions.slug, key);
    const sealed = transport.sessionId!;
    const upstreamIds = stateful.requests.map((r) => r.headers['mcp-session-id']).filter(Boolean);
    expect(sealed).toBeDefined();
    expect(upstreamIds).not.toContain(sealed);
    // Another instance: its own caches and HTTP clients, the same table and key.
    const other = createTestDepsOn(gw.deps.config.tableName, { GW_CIPHER_KEY_FILE: gw.deps.config.cipherKeyFile! });
    const second: LocalServer = await startLocalServer({ deps: other, mode });
    try {
      const again = await connect(second.url, sessions.slug, key, sealed);
      expect((await again.client.listTools()).tools.map((t) => t.name).sort()).toEqual(['add', 'echo']);
      expect(await again.client.callTool({ name: 'echo', arguments: { text: 'hi' } })).toMatchObject({ content: [{ text: 'hi' }] });
      expect((await client.callTool({ name: 'echo', arguments: { text: 'back' } })).content).toEqual([{ type: 'text', text: 'back' }]);
    } finally {
      await second.close();
      other.upstream.close();
    }
    const forged = await rpc(gw.url, sessions.slug, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': `${sealed.slice(0, -4)}AAAA` });
    expect(forged.status).toBe(404);
    const otherKey = await gw.workspaceKey();
    const foreign = await rpc(gw.url, sessions.slug, otherKey, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': sealed });
    expect(foreign.status).toBe(404);
    expect((await rpc(gw.url, sessions.slug, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': 'bad id with spaces' })).status).toBe(
      400,
    );
    await client.close();
  });

  it('relays GET (the server stream) and DELETE (the session end) with the upstream session id', async () => {
    // By hand: the SDK client would hold the one GET stream a session may have.
    const init = await rpc(gw.url, sessions.slug, key, {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    expect(init.status).toBe(200);
    await init.text();
    const sealed = init.headers.get('mcp-session-id')!;
    expect((await rpc(gw.url, sessions.slug, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sealed })).status).toBe(202);
    const headers = { 'x-gw-api-key': key, 'mcp-session-id': sealed, 'mcp-protocol-version': '2025-11-25' };
    const stream = new AbortController();
    const get = await fetch(`${gw.url}/mcp/${sessions.slug}`, { headers: { ...headers, accept: 'text/event-stream' }, signal: stream.signal });
    expect(get.status).toBe(200);
    expect(get.headers.get('content-type')).toMatch(/text\/event-stream/);
    stream.abort();
    const open = stateful.sessionCount();
    const del = await fetch(`${gw.url}/mcp/${sessions.slug}`, { method: 'DELETE', headers });
    expect(del.status).toBe(200);
    expect(stateful.sessionCount()).toBe(open - 1);
    const upstreamIds = stateful.requests.filter((r) => r.method === 'DELETE').map((r) => r.headers['mcp-session-id']);
    expect(upstreamIds.at(-1)).toMatch(/^[0-9a-f-]{36}$/);
    // The upstream forgot the session: the client is told to start a new one.
    expect((await rpc(gw.url, sessions.slug, key, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': sealed })).status).toBe(404);
  });

  it('admits each call through rate-limit policies that match endpoint_type mcp', async () => {
    const made = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'limited', workspace_id: 'default', scopes: ['completions.write'] });
    const [limited, limitedId] = [made.json.key as string, made.json.id as string];
    const policy = await gw.admin('POST', '/v1/policies/rate-limits', {
      conditions: [
        { key: 'api_key', value: limitedId },
        { key: 'endpoint_type', value: 'mcp' },
      ],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rph',
      value: 2,
    });
    expect(policy.status).toBe(200);
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    for (let i = 0; i < 2; i++) expect((await rpc(gw.url, plain.slug, limited, list)).status).toBe(200);
    const before = stateless.requests.length;
    const refused = await rpc(gw.url, plain.slug, limited, list);
    expect(refused.status).toBe(429);
    expect(stateless.requests.length).toBe(before);
  });

  it('logs each call with the server, method, tool, status and caller', async () => {
    const trace = `mcp-${mode}-${randomUUID()}`;
    const res = await rpc(
      gw.url,
      plain.slug,
      key,
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'logged' } } },
      { 'x-gw-trace-id': trace },
    );
    expect(res.status).toBe(200);
    await res.text();
    const log = await storedLog(gw, trace);
    expect(log).toMatchObject({
      endpoint: 'mcp',
      mcp_server: plain.slug,
      mcp_method: 'tools/call',
      mcp_name: 'echo',
      status_code: 200,
      workspace_id: gw.boot.workspaceId,
      api_key_id: expect.any(String),
    });
  });
});

describe('MCP gateway upstream OAuth', () => {
  let gw: TestGantry;
  let upstream: McpUpstream;
  let tokenServer: http.Server;
  let tokenUrl: string;
  const grants: URLSearchParams[] = [];
  let issue: () => { status: number; body: Json };

  beforeAll(async () => {
    [gw, upstream] = await Promise.all([startGantry('direct'), startMcpUpstream({ stateful: false, json: true, bearer: { token: 'tok-0' } })]);
    tokenServer = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        grants.push(new URLSearchParams(text));
        const { status, body } = issue();
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((r) => tokenServer.listen(0, '127.0.0.1', r));
    tokenUrl = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}/token`;
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), upstream?.close(), new Promise((r) => tokenServer?.close(r))]);
  });

  async function connectedUser(deps: CoreDeps, serverId: string, userId: string, access: string): Promise<void> {
    await putUserConnection({ table: deps.repos.table, cipher: deps.cipher }, gw.boot.organisationId, {
      serverId,
      userId,
      workspaceId: gw.boot.workspaceId,
      tokens: { access_token: access, refresh_token: 'refresh-1' },
      expiresAt: null,
      now: NOW,
    });
  }

  it('refreshes an expired user token once on the upstream 401, stores it, and passes the challenge through when the refresh fails', async () => {
    const { slug, serverId } = await register(gw, {
      url: upstream.url,
      authType: 'oauth',
      configurations: { token_url: tokenUrl, client_id: 'gantry-client' },
    });
    const user = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: gw.boot.workspaceId, role: 'member' }] });
    const made = await gw.admin('POST', '/v1/api-keys/workspace/user', { name: 'u', workspace_id: 'default', user_id: user.id, scopes: ['completions.write'] });
    expect(made.status).toBe(200);
    const userKey = made.json.key as string;
    const userId = user.id;
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'after refresh' } } };
    // No connection yet: the user must connect first.
    expect((await rpc(gw.url, slug, userKey, call)).status).toBe(401);
    await connectedUser(gw.deps, serverId, userId, 'tok-0');
    const fresh = upstream.expireToken();
    issue = () => ({ status: 200, body: { access_token: fresh, refresh_token: 'refresh-2', expires_in: 3600, token_type: 'Bearer' } });
    const ok = await rpc(gw.url, slug, userKey, call);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { result: { content: Json[] } }).result.content).toEqual([{ type: 'text', text: 'after refresh' }]);
    expect(grants.at(-1)?.get('grant_type')).toBe('refresh_token');
    expect(grants.at(-1)?.get('refresh_token')).toBe('refresh-1');
    expect(grants.at(-1)?.get('client_id')).toBe('gantry-client');
    const stored = await getUserConnection({ table: gw.deps.repos.table, cipher: gw.deps.cipher }, gw.boot.organisationId, serverId, userId);
    expect(stored?.tokens).toMatchObject({ access_token: fresh, refresh_token: 'refresh-2' });

    upstream.expireToken();
    issue = () => ({ status: 400, body: { error: 'invalid_grant' } });
    const refused = await rpc(gw.url, slug, userKey, call);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/invalid_token/);
  });
});
