/**
 * The OpenAPI document against the server, end to end in both modes:
 *
 * - every request example in `GET /v1/openapi.json` is accepted as written (2xx) by a fresh
 *   organisation, in the order a user would follow (the collection before the prompt that names
 *   it), once the test made the one thing no example makes (a user of the workspace, named by the
 *   user key's example); ids the API makes at run time (`file-abc123`) are replaced by those of
 *   the objects the test made, and the MCP server's URL by the test's own MCP server. The console
 *   pre-fills its forms with these examples.
 * - every operation of the document is called once it has what it needs, and what the server
 *   accepted validates against the document: the request body against the request schema, the
 *   answer against the success schema of its status (admin resources, Gantry's own gateway objects,
 *   and provider answers through mock providers speaking the vendors' wire formats). The last test
 *   fails naming any operation left uncalled, so a new route comes with its call here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { ContractChecker, type OpenApiDoc } from '../support/openapi-contract.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { startMockRealtime, type MockRealtime } from '../support/mock-realtime.ts';
import { addUser } from '../support/identity.ts';
import { makePng, makeWav, multipart } from '../support/media.ts';
import { until } from '../support/until.ts';
import { startMcpUpstream, type McpUpstream } from '../support/mcp-upstream.ts';
import { observability } from '../../layers/core/src/observability/install.ts';
import { putUserConnection } from '../../layers/core/src/store/mcp.ts';

/** The user the workspace user key example names. */
const USER_ID = '3f1c2b9e-7d4a-4e8b-9a6f-0c5d2e1b8a47';

type Json = Record<string, unknown>;

describe.each(['direct', 'lambda'] as const)('the OpenAPI document against the server (%s mode)', (mode) => {
  let gw: TestGantry;
  let chat: MockOpenAI;
  let api: MockOpenAIApi;
  let realtime: MockRealtime;
  let mcp: McpUpstream;
  let contract: ContractChecker;
  let wsKey: string;
  /** Ids of what the test made, by name. */
  const ids: Record<string, string> = {};

  const owner = { 'x-gw-api-key': ADMIN_KEY };
  const via = (mock: { url: string }) => ({
    'x-gw-api-key': wsKey,
    'x-gw-provider': 'openai',
    'x-gw-custom-host': `${mock.url}/v1`,
    authorization: 'Bearer sk-provider',
  });

  /** Calls an operation and expects a 2xx answer that fits the document. */
  async function ok(method: string, template: string, opts: Parameters<ContractChecker['call']>[2] = {}): Promise<Json> {
    const res = await contract.call(method, template, { headers: owner, ...opts });
    const where = `${method} ${template}`;
    expect(res.status, `${where}: ${JSON.stringify(res.json)}`).toBeGreaterThanOrEqual(200);
    expect(res.status, `${where}: ${JSON.stringify(res.json)}`).toBeLessThan(300);
    expect(res.problems, where).toEqual([]);
    return res.json;
  }

  beforeAll(async () => {
    [gw, chat, api, realtime, mcp] = await Promise.all([
      startGantry(mode),
      startMockOpenAI(),
      startMockOpenAIApi(),
      startMockRealtime(),
      startMcpUpstream({ stateful: true }),
    ]);
    const doc = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as OpenApiDoc;
    contract = new ContractChecker(doc, gw.url);
    wsKey = await gw.workspaceKey(['completions.write', 'feedback.create', 'feedback.update', 'feedback.list', 'logs.list', 'logs.view']);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), chat?.close(), api?.close(), realtime?.close(), mcp?.close()]);
  });

  const tried = new Set<string>();
  /** The example of an operation, posted as written (with `replace` for ids made at run time). */
  const example = (method: string, template: string, opts: { params?: Record<string, string>; headers?: Record<string, string>; replace?: Json } = {}) => {
    const body = contract.example(method, template);
    expect(body, `${method} ${template} has an example`).toBeDefined();
    tried.add(`${method} ${template}`);
    return ok(method, template, { ...opts, body: { ...(body as Json), ...opts.replace } });
  };

  it('accepts every admin request example as written', async () => {
    // The one prerequisite an example names: a user of the default workspace.
    ids.user = (await addUser(gw.deps, gw.boot.organisationId, { id: USER_ID, email: 'ada@example.com' })).id;
    await ok('POST', '/v1/admin/workspaces/{workspaceId}/users', { params: { workspaceId: 'default' }, body: { users: [{ id: ids.user, role: 'member' }] } });

    ids.workspace = String((await example('POST', '/v1/workspaces')).id);
    await ok('DELETE', '/v1/workspaces/{workspaceId}', { params: { workspaceId: ids.workspace } });
    ids.workspace = String((await example('POST', '/v1/admin/workspaces')).id);

    ids.collection = String((await example('POST', '/v1/collections')).id);
    await example('PUT', '/v1/collections/{collectionId}', { params: { collectionId: ids.collection } });
    ids.label = String((await example('POST', '/v1/labels')).id);
    await example('PUT', '/v1/labels/{labelId}', { params: { labelId: ids.label } });
    ids.partial = String((await example('POST', '/v1/prompts/partials')).id);
    await example('PUT', '/v1/prompts/partials/{promptPartialId}', { params: { promptPartialId: ids.partial } });
    await example('PUT', '/v1/prompts/partials/{promptPartialId}/makeDefault', { params: { promptPartialId: ids.partial } });

    ids.integration = String((await example('POST', '/v1/integrations')).id);
    ids.provider = String((await example('POST', '/v1/providers')).id);
    ids.config = String((await example('POST', '/v1/configs')).id);

    ids.prompt = String((await example('POST', '/v1/prompts')).id);
    const v2 = await example('PUT', '/v1/prompts/{promptId}', { params: { promptId: ids.prompt } });
    ids.promptVersion = String(v2.prompt_version_id);
    await example('PUT', '/v1/prompts/{promptId}/versions/{versionId}', { params: { promptId: ids.prompt, versionId: ids.promptVersion } });
    await example('PUT', '/v1/prompts/{promptId}/makeDefault', { params: { promptId: ids.prompt } });
    await example('POST', '/v1/prompts/{promptId}/render', { params: { promptId: ids.prompt } });

    ids.guardrail = String((await example('POST', '/v1/guardrails')).id);
    await example('PUT', '/v1/guardrails/{guardrailId}', { params: { guardrailId: ids.guardrail } });
    ids.secretReference = String((await example('POST', '/v1/secret-references')).id);
    await example('PUT', '/v1/secret-references/{secretReferenceId}', { params: { secretReferenceId: ids.secretReference } });

    // Its server is the test's own MCP server: the sync that follows a create calls no third party.
    ids.mcpIntegration = String((await example('POST', '/v1/mcp-integrations', { replace: { url: mcp.url } })).id);
    ids.mcpServer = String((await example('POST', '/v1/mcp-servers')).id);

    ids.orgKey = String((await example('POST', '/v1/api-keys/organisation/service')).id);
    ids.serviceKey = String((await example('POST', '/v1/api-keys/workspace/service')).id);
    ids.userKey = String((await example('POST', '/v1/api-keys/workspace/user')).id);

    await example('POST', '/v1/feedback', { headers: { 'x-gw-api-key': wsKey } });
  });

  it('accepts every gateway request example as written', async () => {
    const upload = new FormData();
    upload.append('purpose', 'batch');
    upload.append(
      'file',
      new Blob(['{"custom_id":"1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[]}}\n']),
      'in.jsonl',
    );
    const file = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: via(api), body: upload });
    expect(file.status).toBe(200);
    ids.file = String(((await file.json()) as Json).id);

    await example('POST', '/v1/chat/completions', { headers: via(chat) });
    await example('POST', '/v1/completions', { headers: via(api) });
    await example('POST', '/v1/prompts/{promptId}/completions', { params: { promptId: ids.prompt ?? '' }, headers: via(chat) });
    await example('POST', '/v1/embeddings', { headers: via(api) });
    await example('POST', '/v1/images/generations', { headers: via(api) });
    await example('POST', '/v1/audio/speech', { headers: via(api) });
    await example('POST', '/v1/moderations', { headers: via(api) });
    await example('POST', '/v1/rerank', { headers: via(api) });
    await example('POST', '/v1/messages', { headers: via(chat) });
    await example('POST', '/v1/messages/count_tokens', { headers: via(chat) });
    ids.batch = String((await example('POST', '/v1/batches', { headers: via(api), replace: { input_file_id: ids.file } })).id);
    ids.job = String((await example('POST', '/v1/fine_tuning/jobs', { headers: via(api), replace: { training_file: ids.file } })).id);
    ids.response = String((await example('POST', '/v1/responses', { headers: via(api) })).id);
    await example('POST', '/v1/realtime/client_secrets', { headers: via(realtime) });
    await example('POST', '/v1/realtime/sessions', { headers: via(realtime) });
  });

  it('tried every example of the document', () => {
    expect([...tried].sort()).toEqual(contract.examples().sort());
  });

  it('answers API keys, the organisation, workspaces, users and invites as documented', async () => {
    await ok('GET', '/v1/api-keys');
    await ok('GET', '/v1/api-keys', { query: 'cursor=' });
    await ok('GET', '/v1/api-keys/{id}', { params: { id: ids.serviceKey ?? '' } });
    await ok('PUT', '/v1/api-keys/{id}', { params: { id: ids.serviceKey ?? '' }, body: { name: 'renamed' } });
    await ok('POST', '/v1/api-keys/{id}/rotate', { params: { id: ids.serviceKey ?? '' }, body: {} });
    await ok('DELETE', '/v1/api-keys/{id}', { params: { id: ids.userKey ?? '' } });

    await ok('GET', '/v1/organisation');
    await ok('PUT', '/v1/organisation', { body: { name: 'Contract Inc' } });
    for (const base of ['/v1/workspaces', '/v1/admin/workspaces']) {
      await ok('GET', base);
      await ok('GET', `${base}/{workspaceId}`, { params: { workspaceId: 'default' } });
      await ok('GET', `${base}/{workspaceId}/users`, { params: { workspaceId: 'default' } });
      await ok('GET', `${base}/{workspaceId}/users/{userId}`, { params: { workspaceId: 'default', userId: USER_ID } });
      await ok('PUT', `${base}/{workspaceId}/users/{userId}`, { params: { workspaceId: 'default', userId: USER_ID }, body: { role: 'manager' } });
    }
    const spareUser = await addUser(gw.deps, gw.boot.organisationId, { email: `spare-${mode}@example.com` });
    await ok('POST', '/v1/admin/workspaces/{workspaceId}/users', { params: { workspaceId: 'default' }, body: { users: [{ id: spareUser.id }] } });
    await ok('DELETE', '/v1/admin/workspaces/{workspaceId}/users/{userId}', { params: { workspaceId: 'default', userId: spareUser.id } });
    await ok('PUT', '/v1/workspaces/{workspaceId}', { params: { workspaceId: ids.workspace ?? '' }, body: { description: 'Search, again' } });
    await ok('POST', '/v1/admin/workspaces/{workspaceId}/archive', { params: { workspaceId: ids.workspace ?? '' } });
    await ok('DELETE', '/v1/admin/workspaces/{workspaceId}', { params: { workspaceId: ids.workspace ?? '' } });
    const spare = await ok('POST', '/v1/workspaces', { body: { name: 'Spare' } });
    await ok('POST', '/v1/workspaces/{workspaceId}/users', { params: { workspaceId: String(spare.id) }, body: { users: [{ id: USER_ID }] } });
    await ok('DELETE', '/v1/workspaces/{workspaceId}/users/{userId}', { params: { workspaceId: String(spare.id), userId: USER_ID } });
    await ok('PUT', '/v1/admin/workspaces/{workspaceId}', { params: { workspaceId: String(spare.id) }, body: { name: 'Spare (kept)' } });
    await ok('POST', '/v1/workspaces/{workspaceId}/archive', { params: { workspaceId: String(spare.id) } });
    await ok('DELETE', '/v1/workspaces/{workspaceId}', { params: { workspaceId: String(spare.id) } });

    const invited = await ok('POST', '/v1/admin/users/invites', {
      body: { email: `grace-${mode}@example.com`, role: 'member', workspaces: [{ id: 'default', role: 'member' }] },
    });
    await ok('GET', '/v1/admin/users/invites');
    await ok('GET', '/v1/admin/users/invites/{inviteId}', { params: { inviteId: String(invited.id) } });
    const resent = await ok('POST', '/v1/admin/users/invites/{inviteId}/resend', { params: { inviteId: String(invited.id) } });
    const token = new URL(String(resent.invite_link)).searchParams.get('token') ?? '';
    const accepted = await ok('POST', '/v1/admin/users/invites/accept', { headers: {}, query: `token=${token}`, body: { first_name: 'Grace' } });
    const other = await ok('POST', '/v1/admin/users/invites', { body: { email: `linus-${mode}@example.com`, role: 'member', workspaces: [] } });
    await ok('DELETE', '/v1/admin/users/invites/{inviteId}', { params: { inviteId: String(other.id) } });
    await ok('GET', '/v1/admin/users');
    await ok('GET', '/v1/admin/users/{userId}', { params: { userId: String(accepted.id) } });
    await ok('PUT', '/v1/admin/users/{userId}', { params: { userId: String(accepted.id) }, body: { first_name: 'G.' } });
    await ok('DELETE', '/v1/admin/users/{userId}', { params: { userId: String(accepted.id) } });
    await ok('GET', '/v1/audit-logs');
  }, 120_000);

  it('answers configs, guardrails, integrations, providers, virtual keys, secret references, policies and prices as documented', async () => {
    await ok('GET', '/v1/configs');
    await ok('GET', '/v1/configs/{slug}', { params: { slug: 'prod-routing' } });
    await ok('PUT', '/v1/configs/{slug}', { params: { slug: 'prod-routing' }, body: { config: { provider: 'openai' } } });
    await ok('GET', '/v1/configs/{slug}/versions', { params: { slug: 'prod-routing' } });
    await ok('DELETE', '/v1/configs/{slug}', { params: { slug: 'prod-routing' } });

    await ok('GET', '/v1/guardrails');
    await ok('GET', '/v1/guardrails/{guardrailId}', { params: { guardrailId: ids.guardrail ?? '' } });
    await ok('DELETE', '/v1/guardrails/{guardrailId}', { params: { guardrailId: ids.guardrail ?? '' } });

    await ok('GET', '/v1/integrations');
    await ok('GET', '/v1/integrations/{slug}', { params: { slug: 'openai-prod' } });
    await ok('PUT', '/v1/integrations/{slug}', { params: { slug: 'openai-prod' }, body: { description: 'The production key' } });
    await ok('GET', '/v1/providers');
    await ok('GET', '/v1/providers/{slug}', { params: { slug: 'openai-app' } });
    await ok('PUT', '/v1/providers/{slug}', { params: { slug: 'openai-app' }, body: { note: 'for the app' } });
    await ok('DELETE', '/v1/providers/{slug}', { params: { slug: 'openai-app' } });
    await ok('DELETE', '/v1/integrations/{slug}', { params: { slug: 'openai-prod' } });

    await ok('POST', '/v1/virtual-keys', {
      body: { name: 'legacy', slug: 'vk-contract', workspace_id: 'default', provider: 'openai', key: 'sk-legacy-0123456789' },
    });
    await ok('GET', '/v1/virtual-keys');
    await ok('GET', '/v1/virtual-keys/{slug}', { params: { slug: 'vk-contract' } });
    await ok('PUT', '/v1/virtual-keys/{slug}', { params: { slug: 'vk-contract' }, body: { note: 'old' } });
    await ok('DELETE', '/v1/virtual-keys/{slug}', { params: { slug: 'vk-contract' } });

    await ok('GET', '/v1/secret-references');
    await ok('GET', '/v1/secret-references/{secretReferenceId}', { params: { secretReferenceId: ids.secretReference ?? '' } });
    await ok('DELETE', '/v1/secret-references/{secretReferenceId}', { params: { secretReferenceId: ids.secretReference ?? '' } });

    const scope = { conditions: [{ key: 'workspace_id', value: 'default' }], group_by: [{ key: 'api_key' }], workspace_id: 'default' };
    const rate = await ok('POST', '/v1/policies/rate-limits', { body: { ...scope, type: 'requests', unit: 'rpm', value: 1000 } });
    await ok('GET', '/v1/policies/rate-limits');
    await ok('GET', '/v1/policies/rate-limits/{id}', { params: { id: String(rate.id) } });
    await ok('PUT', '/v1/policies/rate-limits/{id}', { params: { id: String(rate.id) }, body: { value: 2000 } });
    await ok('DELETE', '/v1/policies/rate-limits/{id}', { params: { id: String(rate.id) } });
    // A token budget that one chat completion spends from: an entity to list and reset.
    const budget = {
      params: { id: String((await ok('POST', '/v1/policies/usage-limits', { body: { ...scope, type: 'tokens', credit_limit: 1_000_000 } })).id) },
    };
    await ok('GET', '/v1/policies/usage-limits');
    await ok('PUT', '/v1/policies/usage-limits/{id}', { ...budget, body: { credit_limit: 2_000_000 } });
    await ok('POST', '/v1/chat/completions', { headers: via(chat), body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] } });
    const entity = await until(async () => {
      const listed = (await contract.call('GET', '/v1/policies/usage-limits/{id}/entities', { ...budget, headers: owner })).json.data as Json[] | undefined;
      return listed?.[0];
    }, 'the budget entity');
    await ok('GET', '/v1/policies/usage-limits/{id}/entities', budget);
    await ok('GET', '/v1/policies/usage-limits/{id}', { ...budget, query: 'include_usage=true' });
    await ok('PUT', '/v1/policies/usage-limits/{id}/entities/{entityId}/reset', { params: { ...budget.params, entityId: String(entity.id) } });
    await ok('DELETE', '/v1/policies/usage-limits/{id}', budget);

    const price = { params: { provider: 'openai', model: 'gpt-4o-mini' } };
    await ok('PUT', '/v1/model-configs/pricing/{provider}/{model}', { ...price, body: { input_per_million: 0.1, output_per_million: 0.4 } });
    await ok('GET', '/v1/model-configs/pricing');
    await ok('GET', '/v1/model-configs/pricing/{provider}/{model}', price);
    await ok('DELETE', '/v1/model-configs/pricing/{provider}/{model}', price);
  }, 120_000);

  it('answers collections, labels, partials and prompts as documented', async () => {
    await ok('GET', '/v1/collections');
    await ok('GET', '/v1/collections/{collectionId}', { params: { collectionId: ids.collection ?? '' } });
    await ok('GET', '/v1/labels');
    await ok('GET', '/v1/labels/{labelId}', { params: { labelId: ids.label ?? '' } });
    await ok('GET', '/v1/prompts/partials');
    await ok('GET', '/v1/prompts/partials/{promptPartialId}', { params: { promptPartialId: ids.partial ?? '' } });
    await ok('GET', '/v1/prompts/partials/{promptPartialId}/versions', { params: { promptPartialId: ids.partial ?? '' } });
    await ok('GET', '/v1/prompts');
    await ok('GET', '/v1/prompts/{promptId}', { params: { promptId: ids.prompt ?? '' } });
    await ok('GET', '/v1/prompts/{promptId}/versions', { params: { promptId: ids.prompt ?? '' } });
    await ok('GET', '/v1/prompts/{promptId}/versions/{versionId}', { params: { promptId: ids.prompt ?? '', versionId: ids.promptVersion ?? '' } });

    await ok('DELETE', '/v1/prompts/{promptId}', { params: { promptId: ids.prompt ?? '' } });
    await ok('DELETE', '/v1/prompts/partials/{promptPartialId}', { params: { promptPartialId: ids.partial ?? '' } });
    await ok('DELETE', '/v1/labels/{labelId}', { params: { labelId: ids.label ?? '' } });
    await ok('DELETE', '/v1/collections/{collectionId}', { params: { collectionId: ids.collection ?? '' } });
  }, 120_000);

  it('answers MCP integrations, servers, capabilities and connections as documented', async () => {
    const integration = { params: { id: ids.mcpIntegration ?? '' } };
    const server = { params: { id: ids.mcpServer ?? '' } };
    await ok('GET', '/v1/mcp-integrations');
    await ok('GET', '/v1/mcp-integrations/{id}', integration);
    await ok('PUT', '/v1/mcp-integrations/{id}', { ...integration, body: { description: 'Issues' } });
    await ok('GET', '/v1/mcp-integrations/{id}/workspaces', integration);
    await ok('GET', '/v1/mcp-servers');
    await ok('GET', '/v1/mcp-servers/{id}', server);
    await ok('PUT', '/v1/mcp-servers/{id}', { ...server, body: { description: 'Issues for support' } });
    await ok('DELETE', '/v1/mcp-servers/{id}', server);
    await ok('DELETE', '/v1/mcp-integrations/{id}', integration);

    // An organisation integration on a real MCP server, granted to the workspace and synced: capabilities to list and change.
    const shared = {
      params: { id: String((await ok('POST', '/v1/mcp-integrations', { body: { name: 'Files', url: mcp.url, auth_type: 'none', transport: 'http' } })).id) },
    };
    await ok('PUT', '/v1/mcp-integrations/{id}/workspaces', { ...shared, body: { workspaces: [{ id: 'default', enabled: true }] } });
    expect((await ok('GET', '/v1/mcp-integrations/{id}/metadata', { ...shared, query: 'refresh=true' })).sync_status).toBe('synced');
    expect((await ok('GET', '/v1/mcp-integrations/{id}/capabilities', shared)).total).toBeGreaterThan(0);
    await ok('PUT', '/v1/mcp-integrations/{id}/capabilities', { ...shared, body: { capabilities: [{ name: 'echo', type: 'tool', enabled: true }] } });
    const files = {
      params: {
        id: String((await ok('POST', '/v1/mcp-servers', { body: { name: 'Files', mcp_integration_id: shared.params.id, workspace_id: 'default' } })).id),
      },
    };
    await ok('POST', '/v1/mcp-servers/{id}/test', { ...files, body: { timeout_ms: 5000 } });
    expect((await ok('GET', '/v1/mcp-servers/{id}/capabilities', files)).total).toBeGreaterThan(0);
    await ok('PUT', '/v1/mcp-servers/{id}/capabilities', { ...files, body: { capabilities: [{ name: 'echo', type: 'tool', enabled: true }] } });
    await ok('PUT', '/v1/mcp-servers/{id}/user-access', {
      ...files,
      body: { default_user_access: 'allow', user_access: [{ user_id: USER_ID, enabled: true }] },
    });
    await ok('GET', '/v1/mcp-servers/{id}/user-access', files);
    await ok('GET', '/v1/mcp-servers/{id}/metadata', files);
    const store = { table: gw.deps.repos.table, cipher: gw.deps.cipher };
    await putUserConnection(store, gw.boot.organisationId, {
      serverId: files.params.id,
      userId: USER_ID,
      workspaceId: gw.boot.workspaceId,
      tokens: { access_token: 'at-1' },
      expiresAt: null,
      now: new Date().toISOString(),
    });
    expect((await ok('GET', '/v2/mcp-servers/{id}/connections', files)).total).toBe(1);
    await ok('DELETE', '/v2/mcp-servers/{id}/connections', { ...files, query: `user_id=${USER_ID}` });
  }, 120_000);

  it('answers feedback, logs, log exports and analytics as documented', async () => {
    const ws = { headers: { 'x-gw-api-key': wsKey } };
    const feedback = await ok('POST', '/v1/feedback', { ...ws, body: { trace_id: `trace-contract-${mode}`, value: 1 } });
    await ok('PUT', '/v1/feedback/{id}', { ...ws, params: { id: String((feedback.feedback_ids as string[])[0]) }, body: { value: 2 } });
    await ok('GET', '/v1/feedback', ws);
    const inserted = await ok('POST', '/v1/logs', {
      ...ws,
      body: { request: { url: 'https://api.example/v1/chat', body: { q: 1 } }, response: { status: 200, body: { a: 1 } } },
    });
    const logId = String((inserted.ids as string[])[0]);
    await until(
      async () => ((await contract.call('GET', '/v1/logs/{logId}', { params: { logId }, headers: owner })).status === 200 ? true : undefined),
      'the inserted log',
    );
    await ok('GET', '/v1/logs/{logId}', { params: { logId } });
    await ok('GET', '/v1/logs');
    await ok('GET', '/v1/logs/groups/{groupBy}', { params: { groupBy: 'model' } });

    const created = await ok('POST', '/v1/logs/exports', { body: { workspace_id: 'default', filters: {}, requested_data: ['id', 'trace_id'] } });
    const exportId = { params: { exportId: String(created.id) } };
    await ok('GET', '/v1/logs/exports');
    await ok('GET', '/v1/logs/exports/{exportId}', exportId);
    await ok('PUT', '/v1/logs/exports/{exportId}', { ...exportId, body: { workspace_id: 'default', filters: {}, requested_data: ['id'], description: 'ids' } });
    await ok('POST', '/v1/logs/exports/{exportId}/start', exportId);
    await until(
      async () => ((await contract.call('GET', '/v1/logs/exports/{exportId}', { ...exportId, headers: owner })).json.status === 'success' ? true : undefined),
      'the export',
    );
    await ok('GET', '/v1/logs/exports/{exportId}/download', exportId);
    // A run to cancel, held in progress (no worker picks it up).
    const second = await ok('POST', '/v1/logs/exports', { body: { workspace_id: 'default', filters: {}, requested_data: ['id'] } });
    const exports = observability(gw.deps).exports;
    const draft = await exports.get(gw.boot.organisationId, String(second.id));
    await exports.put({ ...draft!, status: 'in_progress' });
    await ok('POST', '/v1/logs/exports/{exportId}/cancel', { params: { exportId: String(second.id) } });

    await ok('GET', '/v1/analytics/groups/{groupBy}', { params: { groupBy: 'model' } });
    await ok('GET', '/v1/analytics/summary');
    await ok('GET', '/v1/analytics/summary/cache');
    for (const path of contract.operations('GET').filter((p) => p.startsWith('/v1/analytics/graphs/'))) await ok('GET', path);
  }, 120_000);

  it('answers the gateway endpoints in the shapes it documents', async () => {
    await ok('GET', '/v1/models', { headers: { 'x-gw-api-key': wsKey } });
    await ok('GET', '/v1/models/{model}', { params: { model: 'gpt-4o-mini' }, headers: { ...via(api) } });
    await ok('GET', '/v1/files', { headers: via(api) });
    await ok('GET', '/v1/files/{file_id}', { params: { file_id: ids.file ?? '' }, headers: via(api) });
    await ok('GET', '/v1/files/{file_id}/content', { params: { file_id: ids.file ?? '' }, headers: via(api) });
    await ok('GET', '/v1/batches', { headers: via(api) });
    await ok('GET', '/v1/batches/{batch_id}', { params: { batch_id: ids.batch ?? '' }, headers: via(api) });
    await ok('POST', '/v1/batches/{batch_id}/cancel', { params: { batch_id: ids.batch ?? '' }, headers: via(api) });
    await ok('GET', '/v1/fine_tuning/jobs', { headers: via(api) });
    await ok('GET', '/v1/fine_tuning/jobs/{job_id}', { params: { job_id: ids.job ?? '' }, headers: via(api) });
    await ok('GET', '/v1/fine_tuning/jobs/{job_id}/events', { params: { job_id: ids.job ?? '' }, headers: via(api) });
    await ok('GET', '/v1/fine_tuning/jobs/{job_id}/checkpoints', { params: { job_id: ids.job ?? '' }, headers: via(api) });
    await ok('POST', '/v1/fine_tuning/jobs/{job_id}/cancel', { params: { job_id: ids.job ?? '' }, headers: via(api) });
    await ok('GET', '/v1/responses/{response_id}', { params: { response_id: ids.response ?? '' }, headers: via(api) });
    await ok('GET', '/v1/responses/{response_id}/input_items', { params: { response_id: ids.response ?? '' }, headers: via(api) });
    await ok('DELETE', '/v1/responses/{response_id}', { params: { response_id: ids.response ?? '' }, headers: via(api) });
    await ok('DELETE', '/v1/files/{file_id}', { params: { file_id: ids.file ?? '' }, headers: via(api) });

    const png = makePng(8, 8);
    const image = (extra: { name: string; value: string }[] = []) => multipart([{ name: 'image', value: png, filename: 'a.png', type: 'image/png' }, ...extra]);
    await ok('POST', '/v1/images/edits', { headers: via(api), form: image([{ name: 'prompt', value: 'A hat' }]) });
    await ok('POST', '/v1/images/variations', { headers: via(api), form: image() });
    const audio = () =>
      multipart([
        { name: 'file', value: makeWav(), filename: 'a.wav', type: 'audio/wav' },
        { name: 'model', value: 'whisper-1' },
      ]);
    await ok('POST', '/v1/audio/transcriptions', { headers: via(api), form: audio() });
    await ok('POST', '/v1/audio/translations', { headers: via(api), form: audio() });

    // A file held by Gantry and a batch Gantry runs on it (against the chat provider): Gantry's own objects.
    const line = (id: string) =>
      `${JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } })}\n`;
    const jsonl = Buffer.from(line('a') + line('b'));
    const held = await ok('POST', '/v1/files', {
      headers: { 'x-gw-api-key': wsKey },
      form: multipart([
        { name: 'purpose', value: 'batch' },
        { name: 'file', value: jsonl, filename: 'in.jsonl', type: 'application/jsonl' },
      ]),
    });
    await ok('GET', '/v1/files', { headers: { 'x-gw-api-key': wsKey } });
    const batch = await ok('POST', '/v1/batches', {
      headers: via(chat),
      body: { input_file_id: String(held.id), endpoint: '/v1/chat/completions', completion_window: '24h' },
    });
    const batchId = { params: { batch_id: String(batch.id) }, headers: via(chat) };
    await until(async () => ((await contract.call('GET', '/v1/batches/{batch_id}', batchId)).json.status === 'completed' ? true : undefined), 'the batch');
    await ok('GET', '/v1/batches/{batch_id}', batchId);
    await ok('GET', '/v1/batches/{batch_id}/output', batchId);

    const beta = { headers: { ...via(api), 'openai-beta': 'assistants=v2' } };
    const assistant = await ok('POST', '/v1/assistants', { ...beta, body: { model: 'gpt-4o-mini', name: 'Helper' } });
    await ok('GET', '/v1/assistants', beta);
    await ok('GET', '/v1/assistants/{assistant_id}', { ...beta, params: { assistant_id: String(assistant.id) } });
    await ok('POST', '/v1/assistants/{assistant_id}', { ...beta, params: { assistant_id: String(assistant.id) }, body: { name: 'Helper 2' } });
    await ok('POST', '/v1/threads/runs', { ...beta, body: { assistant_id: String(assistant.id) } });
    const thread = await ok('POST', '/v1/threads', { ...beta, body: {} });
    const threadId = { thread_id: String(thread.id) };
    await ok('GET', '/v1/threads/{thread_id}', { ...beta, params: threadId });
    await ok('POST', '/v1/threads/{thread_id}', { ...beta, params: threadId, body: { metadata: { topic: 'hats' } } });
    const message = await ok('POST', '/v1/threads/{thread_id}/messages', { ...beta, params: threadId, body: { role: 'user', content: 'Hi' } });
    const messageId = { ...threadId, message_id: String(message.id) };
    await ok('GET', '/v1/threads/{thread_id}/messages', { ...beta, params: threadId });
    await ok('GET', '/v1/threads/{thread_id}/messages/{message_id}', { ...beta, params: messageId });
    await ok('POST', '/v1/threads/{thread_id}/messages/{message_id}', { ...beta, params: messageId, body: { metadata: { seen: 'yes' } } });
    await ok('DELETE', '/v1/threads/{thread_id}/messages/{message_id}', { ...beta, params: messageId });
    const run = await ok('POST', '/v1/threads/{thread_id}/runs', { ...beta, params: threadId, body: { assistant_id: String(assistant.id) } });
    const runId = { ...threadId, run_id: String(run.id) };
    await ok('GET', '/v1/threads/{thread_id}/runs', { ...beta, params: threadId });
    await ok('GET', '/v1/threads/{thread_id}/runs/{run_id}', { ...beta, params: runId });
    await ok('POST', '/v1/threads/{thread_id}/runs/{run_id}', { ...beta, params: runId, body: { metadata: { try: '1' } } });
    await ok('POST', '/v1/threads/{thread_id}/runs/{run_id}/submit_tool_outputs', {
      ...beta,
      params: runId,
      body: { tool_outputs: [{ tool_call_id: 'call_1', output: '42' }] },
    });
    await ok('POST', '/v1/threads/{thread_id}/runs/{run_id}/cancel', { ...beta, params: runId, body: {} });
    const steps = await ok('GET', '/v1/threads/{thread_id}/runs/{run_id}/steps', { ...beta, params: runId });
    await ok('GET', '/v1/threads/{thread_id}/runs/{run_id}/steps/{step_id}', { ...beta, params: { ...runId, step_id: String((steps.data as Json[])[0]?.id) } });
    await ok('DELETE', '/v1/threads/{thread_id}', { ...beta, params: threadId });
    await ok('DELETE', '/v1/assistants/{assistant_id}', { ...beta, params: { assistant_id: String(assistant.id) } });
  }, 120_000);

  it('answers the service routes as documented', async () => {
    await ok('GET', '/v1/health', { headers: {} });
    await ok('GET', '/v1/openapi.json', { headers: {} });
    await ok('GET', '/v1/docs', { headers: {} });
  });

  it('covered every operation of the document', () => {
    expect(contract.operationKeys().filter((k) => !contract.covered.has(k))).toEqual([]);
  });
});
