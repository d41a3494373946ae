import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import {
  McpRepository,
  getUserConnection,
  loadMcpRoute,
  putUserConnection,
  sealMcpSecrets,
  type McpIntegrationRecord,
  type McpServerRecord,
} from '../../../../layers/core/src/store/mcp.ts';
import { createTestDeps } from '../../../support/deps.ts';

const NOW = '2026-11-24T10:00:00.000Z';
const ORG = 'org-1';

function integration(over: Partial<McpIntegrationRecord> = {}): McpIntegrationRecord {
  return {
    id: randomUUID(),
    organisation_id: ORG,
    workspace_id: null,
    slug: `int-${randomUUID().slice(0, 8)}`,
    name: 'Int',
    description: null,
    url: 'https://mcp.example.com/mcp',
    auth_type: 'headers',
    transport: 'http',
    configurations: {},
    masked_configurations: {},
    secret: null,
    global_workspace_access: true,
    workspace_ids: [],
    new_capabilities_enabled: true,
    status: 'active',
    created_at: NOW,
    last_updated_at: NOW,
    created_by: null,
    last_updated_by: null,
    ...over,
  };
}

function server(integrationId: string, over: Partial<McpServerRecord> = {}): McpServerRecord {
  return {
    id: randomUUID(),
    organisation_id: ORG,
    workspace_id: 'ws-1',
    slug: `srv-${randomUUID().slice(0, 8)}`,
    name: 'Srv',
    description: null,
    mcp_integration_id: integrationId,
    capability_overrides: {},
    default_user_access: 'allow',
    user_access: {},
    status: 'active',
    created_at: NOW,
    last_updated_at: NOW,
    created_by: null,
    last_updated_by: null,
    ...over,
  };
}

const cap = (type: 'tool' | 'prompt' | 'resource', name: string, enabled: boolean) => ({ type, name, enabled, created_at: NOW, last_updated_at: NOW });

describe('MCP store', () => {
  let deps: CoreDeps;
  let repo: McpRepository;
  beforeAll(async () => {
    deps = await createTestDeps();
    repo = new McpRepository(deps.repos.table);
  });
  const store = () => ({ table: deps.repos.table, cipher: deps.cipher });

  it('loads a route by slug: decrypted headers, capabilities narrowed by the server, user access', async () => {
    const int = integration();
    int.secret = await sealMcpSecrets(deps.cipher, ORG, int.id, { headers: { 'x-api-key': 'sekret-123' } });
    await repo.createIntegration(int);
    await repo.putCapabilities(
      ORG,
      int.id,
      [cap('tool', 'echo', true), cap('tool', 'add', true), cap('tool', 'rm', false), cap('prompt', 'greeting', true), cap('resource', 'file:///a', true)],
      NOW,
    );
    const srv = server(int.id, { capability_overrides: { 'tool:add': false, 'tool:rm': true }, default_user_access: 'deny', user_access: { u1: 'allow' } });
    await repo.createServer(srv);

    const route = await loadMcpRoute(store(), ORG, srv.slug);
    expect(route?.server).toEqual({ id: srv.id, slug: srv.slug, name: 'Srv', workspaceId: 'ws-1', organisationId: ORG });
    expect(route?.upstream).toEqual({ url: int.url, transport: 'http', authType: 'headers', headers: { 'x-api-key': 'sekret-123' } });
    // A server override cannot enable what the integration disabled.
    expect([...route!.allowed.tools]).toEqual(['echo']);
    expect([...route!.allowed.prompts]).toEqual(['greeting']);
    expect([...route!.allowed.resources]).toEqual(['file:///a']);
    expect(route?.userAccess.default).toBe('deny');
    expect(route?.userAccess.users.get('u1')).toBe('allow');

    const raw = await deps.repos.table.doc.send(new GetCommand({ TableName: deps.repos.table.tableName, Key: { pk: `ORG#${ORG}`, sk: `MCPINT#${int.id}` } }));
    expect(JSON.stringify(raw.Item)).not.toContain('sekret-123');
  });

  it('answers undefined for an unknown slug and for a workspace without a grant', async () => {
    expect(await loadMcpRoute(store(), ORG, 'nope')).toBeUndefined();
    const int = integration({ global_workspace_access: false, workspace_ids: ['ws-other'], auth_type: 'none' });
    await repo.createIntegration(int);
    const srv = server(int.id);
    await repo.createServer(srv);
    expect(await loadMcpRoute(store(), ORG, srv.slug)).toBeUndefined();
    await repo.updateIntegration({ ...int, workspace_ids: ['ws-1'] });
    expect((await loadMcpRoute(store(), ORG, srv.slug))?.server.id).toBe(srv.id);
  });

  it('refuses a taken slug, a missing integration, and deleting an integration in use', async () => {
    const int = integration({ auth_type: 'none' });
    await repo.createIntegration(int);
    const srv = server(int.id);
    await repo.createServer(srv);
    await expect(repo.createServer(server(int.id, { slug: srv.slug }))).rejects.toMatchObject({ status: 409, param: 'slug' });
    await expect(repo.createServer(server(randomUUID()))).rejects.toMatchObject({ status: 404, param: 'mcp_integration_id' });
    await expect(repo.deleteIntegration(int)).rejects.toMatchObject({ status: 409 });
    await repo.deleteServer(srv);
    await repo.deleteIntegration(int);
    expect(await repo.getIntegration(ORG, int.id)).toBeUndefined();
  });

  it('keeps user connections encrypted, keeps created_at across a refresh, deletes them with the server', async () => {
    const int = integration({ auth_type: 'oauth' });
    await repo.createIntegration(int);
    const srv = server(int.id);
    await repo.createServer(srv);
    const base = { serverId: srv.id, userId: 'u1', workspaceId: 'ws-1', expiresAt: '2026-11-24T11:00:00.000Z' };
    await putUserConnection(store(), ORG, { ...base, tokens: { access_token: 'at-1', refresh_token: 'rt-1' }, now: NOW });
    await putUserConnection(store(), ORG, { ...base, tokens: { access_token: 'at-2', refresh_token: 'rt-1' }, now: '2026-11-24T10:30:00.000Z' });
    const conn = await getUserConnection(store(), ORG, srv.id, 'u1');
    expect(conn).toMatchObject({ tokens: { access_token: 'at-2', refresh_token: 'rt-1' }, createdAt: NOW, workspaceId: 'ws-1' });
    const [rec] = await repo.listConnections(ORG, srv.id);
    expect(rec?.last_updated_at).toBe('2026-11-24T10:30:00.000Z');
    expect(JSON.stringify(rec)).not.toContain('at-2');
    expect(await getUserConnection(store(), ORG, srv.id, 'u2')).toBeUndefined();
    await repo.deleteServer(srv);
    expect(await repo.listConnections(ORG, srv.id)).toEqual([]);
  });
});
