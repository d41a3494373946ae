/**
 * `/v1/guardrails` over plain HTTP, against the local server and through the real Lambda handlers:
 * create (both action shapes stored as one), get by id or slug, paged lists and filters, versioned
 * updates, delete; validation naming the path; secrets masked in answers and audit entries but kept
 * for the gateway; workspace and organisation scope; GUARDRAILS_ENABLED=OFF.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { workspaceRecord } from '../support/records.ts';

type Json = Record<string, unknown>;
interface Problem {
  path: string;
  message: string;
}

const G = '/v1/guardrails';

const body = (patch: Json = {}): Json => ({
  name: 'no secrets',
  workspace_id: 'default',
  checks: [
    { id: 'default.regexMatch', parameters: { rule: 'glpat-[a-z0-9]+', not: true } },
    {
      id: 'default.webhook',
      parameters: { webhookURL: 'https://hooks.example.com/check', headers: { Authorization: 'Bearer hook-secret-123' } },
      is_enabled: false,
    },
  ],
  actions: {
    deny: true,
    async: false,
    on_success: { feedback: { value: 5, weight: 1, metadata: '' } },
    on_fail: { feedback: { value: -5, weight: 1, metadata: '' } },
  },
  ...patch,
});

describe.each(['direct', 'lambda'] as const)('guardrails admin routes (%s mode)', (mode) => {
  let gw: TestGantry;
  let wsKey: string;

  const source = () => {
    const s = gw.deps.guardrails;
    if (!s) throw new Error('createDeps sets a guardrail source');
    return s;
  };

  const expectProblem = async (method: string, path: string, payload: unknown, field: string, message?: string) => {
    const res = await gw.admin(method, path, payload);
    expect(res.status, JSON.stringify(res.json)).toBe(400);
    expect(res.json.errorCode).toBe('AB01');
    const found = (res.json.errors as Problem[]).find((e) => e.path === field);
    expect(found, JSON.stringify(res.json.errors)).toBeDefined();
    if (message) expect(found?.message).toBe(message);
  };

  beforeAll(async () => {
    gw = await startGantry(mode);
    wsKey = await gw.workspaceKey(['guardrails.create', 'guardrails.read', 'guardrails.list', 'guardrails.update', 'guardrails.delete']);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('creates a guardrail and reads it by id and by slug, secrets masked', async () => {
    const created = await gw.admin('POST', G, body());
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    expect(created.json).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      slug: expect.stringMatching(/^guard_[0-9a-f]{12}$/),
      version_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    const byId = await gw.admin('GET', `${G}/${created.json.id as string}`);
    const bySlug = await gw.admin('GET', `${G}/${created.json.slug as string}`);
    expect(bySlug).toEqual(byId);
    expect(byId.json).toMatchObject({
      object: 'guardrail',
      id: created.json.id,
      name: 'no secrets',
      workspace_id: gw.boot.workspaceId,
      organisation_id: gw.boot.organisationId,
      status: 'active',
      version_id: created.json.version_id,
      actions: {
        deny: true,
        async: false,
        on_success: { feedback: { value: 5, weight: 1, metadata: '' } },
        on_fail: { feedback: { value: -5, weight: 1, metadata: '' } },
      },
    });
    expect((byId.json.checks as Json[])[1]).toEqual({
      id: 'default.webhook',
      parameters: { webhookURL: 'https://hooks.example.com/check', headers: { Authorization: '****' } },
      is_enabled: false,
    });
    expect(JSON.stringify(byId.json)).not.toContain('hook-secret-123');
    // The gateway reads the real value.
    const principal = await gw.deps.keyAuth.authenticateRequest(new Headers({ 'x-gw-api-key': wsKey }), 'admin');
    const saved = await source().forGateway(principal, created.json.slug as string);
    expect(saved?.checks[1]?.parameters).toMatchObject({ headers: { Authorization: 'Bearer hook-secret-123' } });
  });

  it('accepts the examples’ action shape and stores the schema’s', async () => {
    const created = await gw.admin('POST', G, body({ actions: { onFail: 'block', message: 'Model not allowed' } }));
    expect(created.status).toBe(200);
    expect((await gw.admin('GET', `${G}/${created.json.id as string}`)).json.actions).toEqual({
      deny: true,
      async: false,
      on_success: null,
      on_fail: null,
      message: 'Model not allowed',
    });
    const other = await gw.admin('POST', G, body({ actions: { on_fail: 'log', on_success: 'continue' } }));
    expect((await gw.admin('GET', `${G}/${other.json.id as string}`)).json.actions).toEqual({ deny: false, async: false, on_success: null, on_fail: null });
  });

  it('names every bad field', async () => {
    await expectProblem(
      'POST',
      G,
      body({ checks: [{ id: 'default.requiredMetadataKeyPairs', parameters: { metadataPairs: { env: 'prod' }, operator: 'some' } }] }),
      'checks[0].parameters.operator',
      'must be one of all, any, none',
    );
    await expectProblem('POST', G, body({ checks: [{ id: 'default.nope' }] }), 'checks[0].id');
    await expectProblem(
      'POST',
      G,
      body({ checks: [{ id: 'default.regexMatch', parameters: { rule: '(' } }] }),
      'checks[0].parameters.rule',
      'is not a valid regular expression',
    );
    await expectProblem('POST', G, body({ checks: [] }), 'checks');
    await expectProblem('POST', G, body({ checks: [{ id: 'default.notNull', extra: 1 }] }), 'checks[0]');
    await expectProblem('POST', G, body({ actions: { on_fail: 'explode' } }), 'actions.on_fail');
    await expectProblem('POST', G, body({ actions: { deny: 'yes' } }), 'actions.deny', 'must be a boolean');
    await expectProblem('POST', G, body({ name: '' }), 'name');
    await expectProblem('POST', G, { ...body(), actions: undefined }, 'actions');
    await expectProblem('POST', G, { ...body(), workspace_id: undefined }, 'workspace_id');
    const missingWs = await gw.admin('POST', G, body({ workspace_id: 'no-such-ws' }));
    expect(missingWs.status).toBe(404);
  });

  it('lists with paging and filters', async () => {
    const all = await gw.admin('GET', `${G}?page_size=100`);
    expect(all.status).toBe(200);
    const total = all.json.total as number;
    expect(total).toBeGreaterThanOrEqual(3);
    expect((all.json.data as Json[])[0]).not.toHaveProperty('checks');
    const paged = await gw.admin('GET', `${G}?page_size=1&current_page=1`);
    expect(paged.json).toMatchObject({ object: 'list', total });
    expect((paged.json.data as Json[]).map((d) => d.id)).toEqual([(all.json.data as Json[])[1]?.id]);
    expect((await gw.admin('GET', `${G}?workspace_id=${gw.boot.workspaceId}`)).json.total).toBe(total);
    expect((await gw.admin('GET', `${G}?workspace_id=no-such-ws`)).json.total).toBe(0);
    const bad = await gw.admin('GET', `${G}?page_size=0`);
    expect(bad.status).toBe(400);
  });

  it('updates make a new version and keep masked secrets; delete removes', async () => {
    const created = await gw.admin('POST', G, body());
    const id = created.json.id as string;
    const current = (await gw.admin('GET', `${G}/${id}`)).json;
    const put = await gw.admin('PUT', `${G}/${id}`, { name: 'renamed', checks: current.checks });
    expect(put.status, JSON.stringify(put.json)).toBe(200);
    expect(put.json).toEqual({ id, slug: created.json.slug, version_id: expect.any(String) });
    expect(put.json.version_id).not.toBe(created.json.version_id);
    const principal = await gw.deps.keyAuth.authenticateRequest(new Headers({ 'x-gw-api-key': wsKey }), 'admin');
    const saved = await source().forGateway(principal, id);
    expect(saved).toMatchObject({ name: 'renamed', version_id: put.json.version_id });
    expect(saved?.checks[1]?.parameters).toMatchObject({ headers: { Authorization: 'Bearer hook-secret-123' } });
    await expectProblem(
      'PUT',
      `${G}/${id}`,
      { checks: [{ id: 'default.wordCount', parameters: { minWords: -1 } }] },
      'checks[0].parameters.minWords',
      'must be at least 0',
    );
    await expectProblem('PUT', `${G}/${id}`, {}, '');
    expect(await gw.admin('DELETE', `${G}/${id}`)).toEqual({ status: 200, json: {} });
    expect((await gw.admin('GET', `${G}/${id}`)).status).toBe(404);
    expect(await source().forGateway(principal, id)).toBeUndefined();
  });

  it('organisation guardrails: readable by workspace keys, changed only by organisation keys', async () => {
    const created = await gw.admin('POST', G, { ...body({ organisation_id: gw.boot.organisationId }), workspace_id: undefined });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const id = created.json.id as string;
    expect((await gw.admin('GET', `${G}/${id}`)).json.workspace_id).toBeNull();
    expect((await gw.admin('GET', `${G}/${id}`, undefined, wsKey)).status).toBe(200);
    const put = await gw.admin('PUT', `${G}/${id}`, { name: 'mine now' }, wsKey);
    expect(put.status).toBe(403);
    expect(put.json.errorCode).toBe('AB03');
    // A workspace key creates in its own workspace and cannot reach another.
    const own = await gw.admin('POST', G, { ...body(), workspace_id: undefined }, wsKey);
    expect(own.status).toBe(200);
    await gw.deps.repos.workspaces.create(workspaceRecord(gw.boot.organisationId, 'other-ws'));
    expect((await gw.admin('POST', G, body({ workspace_id: 'other-ws' }), wsKey)).status).toBe(403);
  });

  it('writes audit entries without secrets', async () => {
    const created = await gw.admin('POST', G, body({ name: 'audited' }));
    const start = new Date(Date.now() - 3_600_000).toISOString();
    const end = new Date(Date.now() + 60_000).toISOString();
    const logs = await gw.admin('GET', `/v1/audit-logs?start_time=${start}&end_time=${end}&page_size=100`);
    const entry = (logs.json.data as Json[]).find((e) => e.resource_type === 'guardrails' && e.resource_id === created.json.id);
    expect(entry).toMatchObject({ action: 'create', response_status_code: 200, outcome: 'success' });
    expect(JSON.stringify(entry)).not.toContain('hook-secret-123');
  });
});

describe('GUARDRAILS_ENABLED=OFF', () => {
  let gw: TestGantry;
  beforeAll(async () => {
    gw = await startGantry('direct', { GUARDRAILS_ENABLED: 'OFF' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('answers 403 naming the flag on every guardrail route', async () => {
    for (const [method, path] of [
      ['POST', G],
      ['GET', G],
      ['GET', `${G}/x`],
      ['PUT', `${G}/x`],
      ['DELETE', `${G}/x`],
    ] as const) {
      const res = await gw.admin(method, path, method === 'GET' ? undefined : body());
      expect(res.status).toBe(403);
      expect(String(res.json.message)).toContain('GUARDRAILS_ENABLED=OFF');
    }
  });
});
