/**
 * Data for every console page, made through the admin API as a user would (a user and membership
 * straight to the table: accepting an invite needs its e-mail): a workspace, an integration to a
 * mock provider and a provider on it, a config, a collection with a prompt, a partial, a label, a
 * guardrail, rate and usage limits, a secret reference, an MCP integration and server, an invite,
 * a custom price, a gateway request (its log) and a log export. The admin calls leave audit entries.
 */
import { expect } from 'vitest';
import type { TestGantry } from '../../support/gantry.ts';
import { addUser } from '../../support/identity.ts';
import type { MockOpenAI } from '../../support/mock-openai.ts';
import { waitFor } from '../../support/observability.ts';

const ws = { workspace_id: 'default' };

export interface Seeded {
  promptId: string;
  collectionId: string;
  traceId: string;
}

export async function seed(gw: TestGantry, mock: MockOpenAI): Promise<Seeded> {
  const made = async (method: string, path: string, body: unknown) => {
    const r = await gw.admin(method, path, body);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.json)}`).toBe(200);
    return r.json;
  };
  await made('POST', '/v1/admin/workspaces', { name: 'Search team', slug: 'search-team', description: 'The search product' });
  await addUser(gw.deps, gw.boot.organisationId, { email: 'ada@example.com', role: 'admin', workspaces: [{ id: gw.boot.workspaceId, role: 'manager' }] });
  await made('POST', '/v1/integrations', {
    name: 'Mock OpenAI',
    slug: 'mock-openai',
    ai_provider_id: 'openai',
    key: 'sk-test-123',
    configurations: { custom_host: `${mock.url}/v1` },
  });
  await made('POST', '/v1/providers', { name: 'OpenAI for the app', slug: 'openai-app', integration_id: 'mock-openai', ...ws });
  await made('POST', '/v1/configs', {
    name: 'App routing',
    slug: 'app-routing',
    ...ws,
    config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@openai-app' }] },
  });
  const collection = await made('POST', '/v1/collections', { name: 'Support bot', ...ws });
  const prompt = await made('POST', '/v1/prompts', {
    name: 'Support reply',
    collection_id: collection.id,
    string: 'Hello {{name}}, welcome',
    parameters: { temperature: 0.2 },
    model: 'gpt-4o-mini',
    version_description: 'First draft',
  });
  await made('POST', '/v1/prompts/partials', { name: 'Tone', ...ws, string: 'Answer kindly, in {{language}}.', version_description: 'First draft' });
  await made('POST', '/v1/labels', { name: 'canary', ...ws, description: 'Versions tried on 5% of traffic', color_code: '#1e90ff' });
  await made('POST', '/v1/guardrails', {
    name: 'No secrets out',
    ...ws,
    checks: [{ id: 'default.regexMatch', parameters: { rule: 'glpat-[A-Za-z0-9_-]{20}', not: true } }],
    actions: { deny: true, async: false, on_success: null, on_fail: null },
  });
  const limit = { ...ws, conditions: [{ key: 'endpoint_type', value: 'chatComplete' }], group_by: [{ key: 'api_key' }] };
  await made('POST', '/v1/policies/rate-limits', { name: 'chat per key', ...limit, type: 'requests', unit: 'rpm', value: 600 });
  await made('POST', '/v1/policies/usage-limits', { name: 'monthly budget', ...limit, type: 'cost', credit_limit: 100, periodic_reset: 'monthly' });
  await made('POST', '/v1/secret-references', {
    name: 'OpenAI key in Vault',
    manager_type: 'hashicorp_vault',
    auth_config: { vault_addr: 'https://vault.example.com', vault_auth_type: 'approle', vault_role_id: 'role', vault_secret_id: 'secret' },
    secret_path: 'secret/gantry/openai',
    secret_key: 'api_key',
  });
  await made('POST', '/v1/mcp-integrations', {
    name: 'Linear',
    url: 'https://mcp.linear.app/mcp',
    auth_type: 'headers',
    transport: 'http',
    ...ws,
    configurations: { custom_headers: { Authorization: 'Bearer lin_api_x' } },
  });
  await made('POST', '/v1/mcp-servers', { name: 'Linear', mcp_integration_id: 'linear', ...ws });
  await made('POST', '/v1/admin/users/invites', { email: 'grace@example.com', role: 'member', workspaces: [{ id: 'default', role: 'member' }] });
  await made('PUT', '/v1/model-configs/pricing/openai/gpt-4o-mini', { input_per_million: 0.2, output_per_million: 0.8 });

  const key = await gw.workspaceKey(['completions.write']);
  const traceId = 'console-seed-trace';
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'x-gw-api-key': key, 'x-gw-provider': '@openai-app', 'x-gw-trace-id': traceId, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the seed' }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
  await waitFor(gw.deps, async () => ((await gw.admin('GET', `/v1/logs?trace_id=${traceId}`)).json.data as unknown[] | undefined)?.[0]);
  await made('POST', '/v1/logs/exports', {
    ...ws,
    description: 'Seeded export',
    filters: {},
    requested_data: ['id', 'trace_id', 'created_at', 'ai_model', 'cost'],
  });
  return { promptId: String(prompt.id), collectionId: String(collection.id), traceId };
}
