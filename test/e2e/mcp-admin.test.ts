/**
 * The MCP administration over HTTP against a real MCP server (the SDK's, test/support/mcp-upstream.ts):
 * integrations and servers with validation naming fields, secrets never shown, metadata sync and
 * capability discovery, bulk capability choices as the gateway will read them, user access, the
 * connection revoke rules for each role, and the two security settings with workspace overrides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import { MCP_SYNC_QUEUE } from '../../layers/core/src/mcp/messages.ts';
import type { Logger } from '../../layers/core/src/ports/logger.ts';
import { SCOPES, WORKSPACE_SCOPES } from '../../layers/core/src/policy/scopes.ts';
import type { ApiKeyType } from '../../layers/core/src/store/entities.ts';
import { loadMcpRoute, putUserConnection } from '../../layers/core/src/store/mcp.ts';
import { addUser } from '../support/identity.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { startMcpUpstream, type McpUpstream } from '../support/mcp-upstream.ts';

type Json = Record<string, unknown>;
const SECRET = 'hdr-secret-value-0123456789';

describe.each(['direct', 'lambda'] as const)('MCP administration (%s mode)', (mode) => {
  let gw: TestGantry;
  let upstream: McpUpstream;
  const logged: string[] = [];
  const capture: Logger = {
    debug: (m, ...a) => void logged.push(m + JSON.stringify(a)),
    info: (m, ...a) => void logged.push(m + JSON.stringify(a)),
    warn: (m, ...a) => void logged.push(m + JSON.stringify(a)),
    error: (m, ...a) => void logged.push(m + JSON.stringify(a)),
  };
  const users = {} as Record<'manager' | 'member' | 'other', string>;
  const keys = {} as Record<'admin' | 'manager' | 'member' | 'other' | 'service' | 'foreignManager', string>;

  const call = (method: string, path: string, body?: unknown, key = ADMIN_KEY) => gw.admin(method, path, body, key);
  async function ok(method: string, path: string, body?: unknown, key = ADMIN_KEY): Promise<Json> {
    const res = await call(method, path, body, key);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json;
  }
  async function refused(method: string, path: string, body: unknown, status: number, code: string, key = ADMIN_KEY): Promise<Json> {
    const res = await call(method, path, body, key);
    expect(res.status, JSON.stringify(res.json)).toBe(status);
    expect(res.json.errorCode).toBe(code);
    return res.json;
  }
  /** The field the first problem of an AB01 answer names. */
  const field = (json: Json): unknown => (json.errors as Array<{ path: string }> | undefined)?.[0]?.path;
  const store = async (type: ApiKeyType, scopes: readonly string[], userId: string | null, workspaceId: string | null) => {
    const made = newKeyRecord(
      {
        organisation_id: gw.boot.organisationId,
        workspace_id: workspaceId,
        user_id: userId,
        type,
        name: `mcp ${type}`,
        description: null,
        scopes: [...scopes],
        expires_at: null,
        owner: false,
        created_by: null,
      },
      Date.now(),
    );
    await gw.deps.repos.apiKeys.create(made.record);
    return made.key;
  };
  const syncs = () => gw.deps.queues.get(MCP_SYNC_QUEUE).drain?.();
  const route = (slug: string) => loadMcpRoute({ table: gw.deps.repos.table, cipher: gw.deps.cipher }, gw.boot.organisationId, slug);
  let n = 0;
  const headersIntegration = (over: Json = {}) => ({
    name: `Files ${(n += 1)}`,
    url: upstream.url,
    auth_type: 'headers',
    transport: 'http',
    configurations: { custom_headers: { 'x-api-key': SECRET } },
    ...over,
  });

  beforeAll(async () => {
    upstream = await startMcpUpstream({ stateful: true, requiredHeader: { name: 'x-api-key', value: SECRET }, name: 'files-server', version: '2.0.1' });
    gw = await startGantry(mode, {}, { logger: capture });
    const ws = gw.boot.workspaceId;
    const other = await ok('POST', '/v1/workspaces', { name: 'Other', slug: 'other-ws' });
    users.manager = (await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: ws, role: 'manager' }] })).id;
    users.member = (await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: ws, role: 'member' }] })).id;
    users.other = (await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: ws, role: 'member' }] })).id;
    const foreign = (await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: other.id as string, role: 'manager' }] })).id;
    keys.admin = await store('organisation-service', SCOPES, null, null);
    keys.service = await store('workspace-service', WORKSPACE_SCOPES, null, ws);
    keys.manager = await store('workspace-user', WORKSPACE_SCOPES, users.manager, ws);
    keys.member = await store('workspace-user', WORKSPACE_SCOPES, users.member, ws);
    keys.other = await store('workspace-user', WORKSPACE_SCOPES, users.other, ws);
    keys.foreignManager = await store('workspace-user', WORKSPACE_SCOPES, foreign, other.id as string);
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  /** An organisation integration granted to the default workspace, synced, and a server on it. */
  async function integrationAndServer(over: Json = {}): Promise<{ integration: string; server: string; slug: string }> {
    const { id } = await ok('POST', '/v1/mcp-integrations', headersIntegration(over));
    await ok('PUT', `/v1/mcp-integrations/${id}/workspaces`, { workspaces: [{ id: 'default', enabled: true }] });
    await syncs();
    const srv = await ok('POST', '/v1/mcp-servers', { name: `Server ${(n += 1)}`, mcp_integration_id: id, workspace_id: 'default' });
    return { integration: id as string, server: srv.id as string, slug: srv.slug as string };
  }

  it('creates an integration, syncs its metadata and capabilities after create, never shows the headers', async () => {
    // A header whose name says nothing of a secret is secret all the same.
    const plainNamed = 'plain-named-header-value-42';
    const created = await ok(
      'POST',
      '/v1/mcp-integrations',
      headersIntegration({ slug: `files-${mode}`, configurations: { custom_headers: { 'x-api-key': SECRET, 'x-tenant': plainNamed } } }),
    );
    expect(Object.keys(created).sort()).toEqual(['id', 'slug']);
    expect(created.slug).toBe(`files-${mode}`);
    expect((await ok('GET', `/v1/mcp-integrations/files-${mode}/metadata`)).sync_status).toMatch(/pending|synced/);
    await syncs();
    expect(await ok('GET', `/v1/mcp-integrations/${created.id}/metadata`)).toMatchObject({
      server_name: 'files-server',
      server_version: '2.0.1',
      protocol_version: '2025-11-25',
      capability_flags: { tools: expect.any(Object), prompts: expect.any(Object), resources: expect.any(Object) },
      sync_status: 'synced',
      last_synced_at: expect.any(String),
      sync_error: null,
    });
    const caps = await ok('GET', `/v1/mcp-integrations/${created.id}/capabilities`);
    expect(caps.counts).toEqual({ tool: 3, prompt: 2, resource: 2 });
    expect((caps.data as Json[]).every((c) => c.enabled === true && c.available === true)).toBe(true);
    expect((await ok('GET', `/v1/mcp-integrations/${created.id}/capabilities?type=prompt`)).data).toEqual([
      expect.objectContaining({ name: 'greeting', type: 'prompt' }),
      expect.objectContaining({ name: 'review', type: 'prompt' }),
    ]);
    const got = await ok('GET', `/v1/mcp-integrations/${created.id}`);
    expect(got).toMatchObject({
      url: upstream.url,
      auth_type: 'headers',
      transport: 'http',
      type: 'organisation',
      configurations: { masked_custom_headers: { 'x-api-key': '****', 'x-tenant': '****' } },
    });
    const listed = await ok('GET', '/v1/mcp-integrations');
    const audit = await ok('GET', '/v1/audit-logs?resource_type=mcp_integrations');
    expect((audit.data as Json[]).length).toBeGreaterThan(0);
    for (const shown of [created, got, listed, audit, logged]) {
      expect(JSON.stringify(shown)).not.toContain(SECRET);
      expect(JSON.stringify(shown)).not.toContain(plainNamed);
    }
    expect(upstream.requests.some((r) => r.headers['x-api-key'] === SECRET && r.headers['x-tenant'] === plainNamed)).toBe(true);
  });

  it('refuses bad input with 400 AB01 naming the field', async () => {
    const bad: Array<[Json, string]> = [
      [{ url: upstream.url, auth_type: 'none', transport: 'http' }, 'name'],
      [{ name: 'x', auth_type: 'none', transport: 'http' }, 'url'],
      [{ name: 'x', url: upstream.url, transport: 'http' }, 'auth_type'],
      [{ name: 'x', url: upstream.url, auth_type: 'none', transport: 'stdio' }, 'transport'],
      [{ name: 'x', url: 'http://10.1.2.3/mcp', auth_type: 'none', transport: 'http' }, 'url'],
      [{ name: 'x', url: 'file:///etc/passwd', auth_type: 'none', transport: 'http' }, 'url'],
      [{ name: 'x', url: upstream.url, auth_type: 'headers', transport: 'http' }, 'configurations.custom_headers'],
      [
        { name: 'x', url: upstream.url, auth_type: 'headers', transport: 'http', configurations: { custom_headers: { 'mcp-session-id': 'a' } } },
        'configurations.custom_headers.mcp-session-id',
      ],
      [
        { name: 'x', url: upstream.url, auth_type: 'headers', transport: 'http', configurations: { custom_headers: { 'bad header': 'a' } } },
        'configurations.custom_headers.bad header',
      ],
      [{ name: 'x', url: upstream.url, auth_type: 'none', transport: 'http', slug: 'no spaces' }, 'slug'],
    ];
    for (const [body, param] of bad) expect(field(await refused('POST', '/v1/mcp-integrations', body, 400, 'AB01')), JSON.stringify(body)).toBe(param);
    expect(
      (await refused('POST', '/v1/mcp-integrations', { name: 'x', url: upstream.url, auth_type: 'none', transport: 'http', headers: {} }, 400, 'AB01')).message,
    ).toMatch(/^unknown field headers/);
    await ok('POST', '/v1/mcp-integrations', { name: 'taken', slug: 'taken', url: upstream.url, auth_type: 'none', transport: 'http' });
    expect(
      (await refused('POST', '/v1/mcp-integrations', { name: 'taken', slug: 'taken', url: upstream.url, auth_type: 'none', transport: 'http' }, 409, 'AB07'))
        .message,
    ).toContain('slug "taken"');
    const { integration, server } = await integrationAndServer();
    expect(
      field(
        await refused(
          'PUT',
          `/v1/mcp-integrations/${integration}/capabilities`,
          { capabilities: [{ name: 'nope', type: 'tool', enabled: false }] },
          400,
          'AB01',
        ),
      ),
    ).toBe('capabilities[0].name');
    expect(
      field(
        await refused(
          'PUT',
          `/v1/mcp-integrations/${integration}/capabilities`,
          { capabilities: [{ name: 'echo', type: 'widget', enabled: false }] },
          400,
          'AB01',
        ),
      ),
    ).toBe('capabilities[0].type');
    expect(field(await refused('PUT', `/v1/mcp-integrations/${integration}/workspaces`, { workspaces: [{ id: 'nope', enabled: true }] }, 400, 'AB01'))).toBe(
      'workspaces[0].id',
    );
    expect(field(await refused('POST', '/v1/mcp-servers', { name: 's', mcp_integration_id: integration }, 400, 'AB01'))).toBe('workspace_id');
    expect(field(await refused('POST', '/v1/mcp-servers', { name: 's', workspace_id: 'default' }, 400, 'AB01'))).toBe('mcp_integration_id');
    expect((await refused('POST', '/v1/mcp-servers', { name: 's', mcp_integration_id: 'nope', workspace_id: 'default' }, 404, 'AB08')).message).toBe(
      'MCP integration nope not found',
    );
    expect(field(await refused('PUT', `/v1/mcp-servers/${server}/user-access`, { user_access: [{ user_id: 'ghost', enabled: true }] }, 400, 'AB01'))).toBe(
      'user_access[0].user_id',
    );
    expect(field(await refused('PUT', `/v1/mcp-servers/${server}/user-access`, { default_user_access: 'maybe' }, 400, 'AB01'))).toBe('default_user_access');
    expect(field(await refused('GET', `/v2/mcp-servers/${server}/connections?page_size=501`, undefined, 400, 'AB01'))).toBe('page_size');
    expect(field(await refused('GET', `/v1/mcp-integrations/${integration}/metadata?refresh=maybe`, undefined, 400, 'AB01'))).toBe('refresh');
  });

  it('servers: only in a granted workspace, slug unique, capabilities narrowed as the gateway reads them', async () => {
    const { id: ungranted } = await ok('POST', '/v1/mcp-integrations', headersIntegration());
    expect(field(await refused('POST', '/v1/mcp-servers', { name: 's', mcp_integration_id: ungranted, workspace_id: 'default' }, 400, 'AB01'))).toBe(
      'mcp_integration_id',
    );
    const { integration, server, slug } = await integrationAndServer();
    expect(
      (await refused('POST', '/v1/mcp-servers', { name: 's', slug, mcp_integration_id: integration, workspace_id: 'default' }, 409, 'AB07')).message,
    ).toContain(`slug "${slug}"`);
    expect(await ok('GET', `/v1/mcp-servers/${server}`)).toMatchObject({
      id: server,
      slug,
      workspace_id: gw.boot.workspaceId,
      mcp_integration_id: integration,
      mcp_integration_url: upstream.url,
      auth_type: 'headers',
    });

    await ok('PUT', `/v1/mcp-integrations/${integration}/capabilities`, {
      capabilities: [
        { name: 'delete_everything', type: 'tool', enabled: false },
        { name: 'file:///secrets.txt', type: 'resource', enabled: false },
      ],
    });
    await ok('PUT', `/v1/mcp-servers/${server}/capabilities`, {
      capabilities: [
        { name: 'add', type: 'tool', enabled: false },
        { name: 'review', type: 'prompt', enabled: false },
      ],
    });
    expect(
      field(
        await refused(
          'PUT',
          `/v1/mcp-servers/${server}/capabilities`,
          { capabilities: [{ name: 'delete_everything', type: 'tool', enabled: true }] },
          400,
          'AB01',
        ),
      ),
    ).toBe('capabilities[0].enabled');
    const seen = (await ok('GET', `/v1/mcp-servers/${server}/capabilities?type=tool`)).data as Json[];
    expect(seen.map((c) => [c.name, c.enabled, c.integration_enabled])).toEqual([
      ['echo', true, true],
      ['add', false, true],
      ['delete_everything', false, false],
    ]);

    const r = await route(slug);
    expect(r?.upstream).toEqual({ url: upstream.url, transport: 'http', authType: 'headers', headers: { 'x-api-key': SECRET } });
    expect([...r!.allowed.tools]).toEqual(['echo']);
    expect([...r!.allowed.prompts]).toEqual(['greeting']);
    expect([...r!.allowed.resources]).toEqual(['file:///readme.md']);

    // Enabling again at the server means "as the integration says".
    await ok('PUT', `/v1/mcp-servers/${server}/capabilities`, { capabilities: [{ name: 'add', type: 'tool', enabled: true }] });
    expect([...(await route(slug))!.allowed.tools].sort()).toEqual(['add', 'echo']);
    // A workspace whose grant is withdrawn no longer reaches the server.
    await ok('PUT', `/v1/mcp-integrations/${integration}/workspaces`, { workspaces: [{ id: 'default', enabled: false }] });
    expect(await route(slug)).toBeUndefined();
    expect((await ok('GET', `/v1/mcp-integrations/${integration}/workspaces`)).global_workspace_access).toEqual({ enabled: false });
  });

  it('/test connects and reports status, time and server name; a failing sync records its error', async () => {
    const { server } = await integrationAndServer();
    const good = await ok('POST', `/v1/mcp-servers/${server}/test`);
    expect(good).toMatchObject({ success: true, status_code: 200, url: upstream.url, server_name: 'files-server', error: null });
    expect(good.response_time_ms).toEqual(expect.any(Number));

    const wrong = await integrationAndServer({ configurations: { custom_headers: { 'x-api-key': 'wrong-value' } } });
    expect(await ok('POST', `/v1/mcp-servers/${wrong.server}/test`)).toMatchObject({
      success: false,
      status_code: 403,
      server_name: null,
      error: expect.stringContaining('403'),
    });
    expect(await ok('GET', `/v1/mcp-servers/${wrong.server}/metadata`)).toMatchObject({
      sync_status: 'failed',
      sync_error: expect.stringContaining('403'),
      server_name: null,
    });
    // Fixing the header and refreshing on demand syncs.
    await ok('PUT', `/v1/mcp-integrations/${wrong.integration}`, { configurations: { custom_headers: { 'x-api-key': SECRET } } });
    expect(await ok('GET', `/v1/mcp-integrations/${wrong.integration}/metadata?refresh=true`)).toMatchObject({
      sync_status: 'synced',
      server_name: 'files-server',
    });
  });

  it('a later sync keeps choices, adds new capabilities enabled by default (or disabled when the integration says so)', async () => {
    const on = await integrationAndServer();
    const off = await integrationAndServer({ configurations: { custom_headers: { 'x-api-key': SECRET }, new_capabilities_enabled: false } });
    await ok('PUT', `/v1/mcp-integrations/${on.integration}/capabilities`, { capabilities: [{ name: 'echo', type: 'tool', enabled: false }] });
    upstream.addTool(`fresh_${mode}`);
    for (const x of [on, off]) await ok('GET', `/v1/mcp-servers/${x.server}/metadata?refresh=true`);
    const tools = async (id: string) =>
      Object.fromEntries(((await ok('GET', `/v1/mcp-integrations/${id}/capabilities?type=tool`)).data as Json[]).map((c) => [c.name, c.enabled]));
    expect(await tools(on.integration)).toMatchObject({ echo: false, add: true, [`fresh_${mode}`]: true });
    // With new_capabilities_enabled false every capability waits for an admin, the first sync's too.
    expect(await tools(off.integration)).toMatchObject({ echo: false, add: false, [`fresh_${mode}`]: false });
  });

  it('user access: default and per-user overrides, as the gateway reads them', async () => {
    const { server, slug } = await integrationAndServer();
    await ok('PUT', `/v1/mcp-servers/${server}/user-access`, { default_user_access: 'deny', user_access: [{ user_id: users.member, enabled: true }] });
    const listed = await ok('GET', `/v1/mcp-servers/${server}/user-access`);
    expect(listed.default_user_access).toBe('deny');
    expect((listed.data as Json[]).find((u) => u.user_id === users.member)).toMatchObject({
      enabled: true,
      has_override: true,
      connection_status: 'not_connected',
    });
    expect((listed.data as Json[]).find((u) => u.user_id === users.other)).toMatchObject({ enabled: false, has_override: false });
    const r = await route(slug);
    expect(r?.userAccess.default).toBe('deny');
    expect(r?.userAccess.users.get(users.member)).toBe('allow');
  });

  it('connections: listed without tokens; admins and workspace managers revoke anyone, others only their own (403 AB03)', async () => {
    const { server } = await integrationAndServer();
    const deps = { table: gw.deps.repos.table, cipher: gw.deps.cipher };
    const connect = (userId: string) =>
      putUserConnection(deps, gw.boot.organisationId, {
        serverId: server,
        userId,
        workspaceId: gw.boot.workspaceId,
        tokens: { access_token: `at-${userId}`, refresh_token: 'rt-secret' },
        expiresAt: null,
        now: new Date().toISOString(),
      });
    for (const u of Object.values(users)) await connect(u);
    const all = await ok('GET', `/v2/mcp-servers/${server}/connections?page_size=500`, undefined, keys.admin);
    expect(all.total).toBe(3);
    expect(JSON.stringify(all)).not.toMatch(/at-|rt-secret/);
    expect((await ok('GET', `/v2/mcp-servers/${server}/connections?user_id=${users.member}`)).data).toEqual([
      expect.objectContaining({ user_id: users.member, connected: true }),
    ]);
    expect(((await ok('GET', `/v2/mcp-servers/${server}/connections`, undefined, keys.member)).data as Json[]).map((c) => c.user_id)).toEqual([users.member]);
    expect((await ok('GET', `/v2/mcp-servers/${server}/connections`, undefined, keys.manager)).total).toBe(3);
    await refused('GET', `/v2/mcp-servers/${server}/connections`, undefined, 404, 'AB08', keys.foreignManager);

    await refused('DELETE', `/v2/mcp-servers/${server}/connections?user_id=${users.other}`, undefined, 403, 'AB03', keys.member);
    await ok('DELETE', `/v2/mcp-servers/${server}/connections`, undefined, keys.member);
    await refused('DELETE', `/v2/mcp-servers/${server}/connections?user_id=${users.member}`, undefined, 404, 'AB08', keys.manager);
    await ok('DELETE', `/v2/mcp-servers/${server}/connections?user_id=${users.other}`, undefined, keys.manager);
    await ok('DELETE', `/v2/mcp-servers/${server}/connections?user_id=${users.manager}`, undefined, keys.admin);
    expect((await ok('GET', `/v2/mcp-servers/${server}/connections`)).total).toBe(0);
    expect(field(await refused('DELETE', `/v2/mcp-servers/${server}/connections`, undefined, 400, 'AB01', keys.service))).toBe('user_id');
  });

  it('managersWriteMcpServers and managersWriteWsMcpIntegrations, with workspace overrides; admins unaffected', async () => {
    const { integration } = await integrationAndServer();
    const wsIntegration = { name: `WS ${(n += 1)}`, url: upstream.url, auth_type: 'none', transport: 'http' };
    const server = () => ({ name: `S ${(n += 1)}`, mcp_integration_id: integration });
    await ok('POST', '/v1/mcp-servers', server(), keys.manager);
    const own = await ok('POST', '/v1/mcp-integrations', wsIntegration, keys.manager);
    expect((await ok('GET', `/v1/mcp-integrations/${own.id}`)).workspace_id).toBe(gw.boot.workspaceId);
    await refused('POST', '/v1/mcp-servers', server(), 403, 'AB03', keys.member);
    await refused('PUT', `/v1/mcp-integrations/${integration}`, { name: 'mine now' }, 403, 'AB03', keys.manager);

    await ok('PUT', '/v1/organisation', { security_settings: { managersWriteMcpServers: false, managersWriteWsMcpIntegrations: false } });
    const denied = await refused('POST', '/v1/mcp-servers', server(), 403, 'AB03', keys.manager);
    expect(denied.message).toContain('managersWriteMcpServers');
    expect((await refused('POST', '/v1/mcp-integrations', wsIntegration, 403, 'AB03', keys.manager)).message).toContain('managersWriteWsMcpIntegrations');
    await refused('PUT', `/v1/mcp-integrations/${own.id}`, { name: 'renamed' }, 403, 'AB03', keys.service);
    await ok('GET', `/v1/mcp-integrations/${own.id}`, undefined, keys.manager);
    await ok('POST', '/v1/mcp-servers', { ...server(), workspace_id: 'default' }, keys.admin);

    await ok('PUT', '/v1/workspaces/default', { security_settings: { managersWriteMcpServers: true, managersWriteWsMcpIntegrations: true } });
    await ok('POST', '/v1/mcp-servers', server(), keys.manager);
    await ok('PUT', `/v1/mcp-integrations/${own.id}`, { name: 'renamed' }, keys.manager);
    await ok('PUT', '/v1/workspaces/default', { security_settings: {} });
    await ok('PUT', '/v1/organisation', { security_settings: { managersWriteMcpServers: true, managersWriteWsMcpIntegrations: true } });
  });

  it('deletes: an integration in use is a conflict; the server, then the integration, go', async () => {
    const { integration, server, slug } = await integrationAndServer();
    await refused('DELETE', `/v1/mcp-integrations/${integration}`, undefined, 409, 'AB07');
    await ok('DELETE', `/v1/mcp-servers/${server}`);
    await refused('GET', `/v1/mcp-servers/${server}`, undefined, 404, 'AB08');
    expect(await route(slug)).toBeUndefined();
    await ok('DELETE', `/v1/mcp-integrations/${integration}`);
    await refused('GET', `/v1/mcp-integrations/${integration}/metadata`, undefined, 404, 'AB08');
  });
});
