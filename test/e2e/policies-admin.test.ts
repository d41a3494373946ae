/**
 * The rate limits and usage limits policy routes over plain HTTP, against the local server and
 * through the real Lambda handlers: every validation rule with its status, admin code and field
 * path, the contract's status codes of DELETE, partial updates, visibility, and the feature flags.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { workspaceRecord } from '../support/records.ts';

type Json = Record<string, unknown>;

const RATE = '/v1/policies/rate-limits';
const USAGE = '/v1/policies/usage-limits';

const rateBody = (patch: Json = {}): Json => ({
  name: 'per key',
  conditions: [{ key: 'workspace_id', value: 'default' }],
  group_by: [{ key: 'api_key' }],
  type: 'requests',
  unit: 'rpm',
  value: 100,
  workspace_id: 'default',
  ...patch,
});

const usageBody = (patch: Json = {}): Json => ({
  name: 'budget',
  conditions: [{ key: 'workspace_id', value: 'default' }],
  group_by: [{ key: 'api_key' }],
  type: 'cost',
  credit_limit: 10,
  workspace_id: 'default',
  ...patch,
});

interface Problem {
  path: string;
  message: string;
}

describe.each(['direct', 'lambda'] as const)('policy admin routes (%s mode)', (mode) => {
  let gw: TestGantry;
  let wsKey: string;
  let otherWsKey: string;

  const expectProblem = async (method: string, path: string, body: unknown, field: string, status = 400, code = 'AB01', key?: string) => {
    const res = await gw.admin(method, path, body, key);
    expect(res.status, JSON.stringify(res.json)).toBe(status);
    expect(res.json.errorCode).toBe(code);
    if (status === 400) expect((res.json.errors as Problem[]).map((e) => e.path)).toContain(field);
    return res;
  };

  beforeAll(async () => {
    gw = await startGantry(mode);
    wsKey = await gw.workspaceKey(['completions.write', 'policies.create', 'policies.read', 'policies.list', 'policies.update', 'policies.delete']);
    await gw.deps.repos.workspaces.create(workspaceRecord(gw.boot.organisationId, 'other'));
    const key = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'other',
      workspace_id: 'other',
      scopes: ['policies.create', 'policies.read', 'policies.list'],
    });
    otherWsKey = key.json.key as string;
  });
  afterAll(async () => {
    await gw?.close();
  });

  describe('rate limits', () => {
    it('creates, reads, lists, updates partially and deletes a policy', async () => {
      const created = await gw.admin('POST', RATE, rateBody());
      expect(created.status).toBe(200);
      expect(created.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), object: 'policy_rate_limits' });
      const id = created.json.id as string;

      const got = await gw.admin('GET', `${RATE}/${id}`);
      expect(got.status).toBe(200);
      expect(got.json).toMatchObject({
        object: 'policy_rate_limits',
        id,
        name: 'per key',
        conditions: [{ key: 'workspace_id', value: gw.boot.workspaceId }],
        group_by: [{ key: 'api_key' }],
        type: 'requests',
        unit: 'rpm',
        value: 100,
        status: 'active',
        workspace_id: gw.boot.workspaceId,
        organisation_id: gw.boot.organisationId,
      });

      const put = await gw.admin('PUT', `${RATE}/${id}`, { value: 200, unit: 'rph' });
      expect(put).toEqual({ status: 200, json: {} });
      expect((await gw.admin('GET', `${RATE}/${id}`)).json).toMatchObject({ value: 200, unit: 'rph', type: 'requests', name: 'per key' });

      const list = await gw.admin('GET', `${RATE}?workspace_id=default&unit=rph`);
      expect(list.status).toBe(200);
      expect(list.json.object).toBe('list');
      expect((list.json.data as Json[]).map((p) => p.id)).toContain(id);

      expect(await gw.admin('DELETE', `${RATE}/${id}`)).toEqual({ status: 200, json: {} });
      // Archived: gone from the default views, still readable as archived.
      await expectProblem('GET', `${RATE}/${id}`, undefined, '', 404, 'AB08');
      expect((await gw.admin('GET', `${RATE}/${id}?status=archived`)).json).toMatchObject({ id, status: 'archived' });
      await expectProblem('DELETE', `${RATE}/${id}`, undefined, '', 404, 'AB08');

      // Each change is audited, in the transaction that made it.
      const range = `start_time=${new Date(Date.now() - 3_600_000).toISOString()}&end_time=${new Date(Date.now() + 3_600_000).toISOString()}`;
      const audit = await gw.admin('GET', `/v1/audit-logs?${range}&page_size=100`);
      const mine = (audit.json.data as Json[]).filter((e) => e.resource_id === id);
      expect(mine.map((e) => [e.resource_type, e.action, e.response_status_code]).sort()).toEqual([
        ['rate_limits_policies', 'create', 200],
        ['rate_limits_policies', 'delete', 200],
        ['rate_limits_policies', 'delete', 404],
        ['rate_limits_policies', 'update', 200],
      ]);
    });

    it('answers the documented statuses of DELETE: 400 for a malformed id, 401, 403, 404', async () => {
      await expectProblem('DELETE', `${RATE}/not-a-uuid`, undefined, 'rateLimitsPolicyId');
      await expectProblem('DELETE', `${RATE}/${randomUUID()}`, undefined, '', 404, 'AB08');
      const noKey = await fetch(`${gw.url}${RATE}/${randomUUID()}`, { method: 'DELETE' });
      expect(noKey.status).toBe(401);
      expect(((await noKey.json()) as Json).errorCode).toBe('AB05');
      const readOnly = await gw.workspaceKey(['policies.read']);
      await expectProblem('DELETE', `${RATE}/${randomUUID()}`, undefined, '', 403, 'AB03', readOnly);
      await expectProblem('GET', `${RATE}/123`, undefined, 'rateLimitsPolicyId');
      await expectProblem('PUT', `${RATE}/123`, { value: 1 }, 'rateLimitsPolicyId');
    });

    it.each([
      ['name too long', { name: 'x'.repeat(256) }, 'name'],
      ['name not a string', { name: 5 }, 'name'],
      ['conditions missing', { conditions: undefined }, 'conditions'],
      ['conditions empty', { conditions: [] }, 'conditions'],
      ['condition not an object', { conditions: ['workspace_id'] }, 'conditions[0]'],
      ['condition key unknown', { conditions: [{ key: 'model', value: 'x' }] }, 'conditions[0].key'],
      ['condition value empty', { conditions: [{ key: 'api_key', value: '' }] }, 'conditions[0].value'],
      ['condition value missing', { conditions: [{ key: 'api_key' }] }, 'conditions[0].value'],
      ['endpoint type unknown', { conditions: [{ key: 'endpoint_type', value: 'chat' }] }, 'conditions[0].value'],
      ['condition field unknown', { conditions: [{ key: 'api_key', value: '*', op: 'eq' }] }, 'conditions[0]'],
      ['condition names another workspace', { conditions: [{ key: 'workspace_id', value: 'other' }] }, 'conditions[0].value'],
      ['condition names an unknown key', { conditions: [{ key: 'api_key', value: randomUUID() }] }, 'conditions[0].value'],
      ['condition names another organisation', { conditions: [{ key: 'organisation_id', value: randomUUID() }] }, 'conditions[0].value'],
      ['group_by missing', { group_by: undefined }, 'group_by'],
      ['group_by empty', { group_by: [] }, 'group_by'],
      ['group_by key unknown', { group_by: [{ key: 'model' }] }, 'group_by[0].key'],
      ['group_by repeated', { group_by: [{ key: 'api_key' }, { key: 'api_key' }] }, 'group_by[1].key'],
      ['type missing', { type: undefined }, 'type'],
      ['type unknown', { type: 'bytes' }, 'type'],
      ['unit missing', { unit: undefined }, 'unit'],
      ['unit unknown', { unit: 'rps' }, 'unit'],
      ['value missing', { value: undefined }, 'value'],
      ['value zero', { value: 0 }, 'value'],
      ['value fractional', { value: 1.5 }, 'value'],
      ['value a string', { value: '10' }, 'value'],
      ['organisation_id not a UUID', { organisation_id: 'org-1' }, 'organisation_id'],
      ['unknown field', { burst: 5 }, ''],
    ])('refuses a create with %s', async (_, patch, field) => {
      await expectProblem('POST', RATE, rateBody(patch as Json), field);
    });

    it('accepts every unit, both types, endpoint types, metadata keys and *', async () => {
      for (const unit of ['rpm', 'rph', 'rpd', 'rpw']) {
        for (const type of ['requests', 'tokens']) {
          const res = await gw.admin(
            'POST',
            RATE,
            rateBody({
              unit,
              type,
              conditions: [
                { key: 'endpoint_type', value: 'embed' },
                { key: 'metadata._user', value: '*' },
              ],
              group_by: [{ key: 'metadata._user' }],
            }),
          );
          expect(res.status, JSON.stringify(res.json)).toBe(200);
        }
      }
    });

    it('defaults the workspace from a workspace key, and from a workspace_id condition for an organisation key', async () => {
      const { workspace_id: _, ...noWorkspace } = rateBody();
      const res = await gw.admin('POST', RATE, noWorkspace, wsKey);
      expect(res.status).toBe(200);
      expect((await gw.admin('GET', `${RATE}/${res.json.id as string}`)).json.workspace_id).toBe(gw.boot.workspaceId);
      // Issue 13 #16: an organisation key is no longer refused without workspace_id (the contract requires it only without an API key).
      const fromCondition = await gw.admin('POST', RATE, noWorkspace);
      expect(fromCondition.status).toBe(200);
      expect((await gw.admin('GET', `${RATE}/${fromCondition.json.id as string}`)).json).toMatchObject({
        workspace_id: gw.boot.workspaceId,
        applies_to: 'workspace',
      });
      await expectProblem('POST', RATE, rateBody({ workspace_id: 'nope' }), '', 404, 'AB08');
      await expectProblem('POST', RATE, rateBody({ organisation_id: randomUUID() }), '', 403, 'AB03');
      expect((await gw.admin('POST', RATE, rateBody({ organisation_id: gw.boot.organisationId }))).status).toBe(200);
    });

    it('makes a policy organisation-wide when an organisation key names no workspace, and says so', async () => {
      const { workspace_id: _, ...body } = rateBody({
        conditions: [
          { key: 'endpoint_type', value: 'chatComplete' },
          { key: 'workspace_id', value: '*' },
        ],
      });
      const created = await gw.admin('POST', RATE, body);
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      const id = created.json.id as string;
      expect((await gw.admin('GET', `${RATE}/${id}`)).json).toMatchObject({
        id,
        workspace_id: null,
        applies_to: 'organisation',
        organisation_id: gw.boot.organisationId,
      });
      // Listed for the organisation, not as one workspace's policy; hidden from workspace keys.
      expect(((await gw.admin('GET', RATE)).json.data as Json[]).some((p) => p.id === id)).toBe(true);
      expect(((await gw.admin('GET', `${RATE}?workspace_id=default`)).json.data as Json[]).some((p) => p.id === id)).toBe(false);
      await expectProblem('GET', `${RATE}/${id}`, undefined, '', 404, 'AB08', wsKey);
      // It stays organisation-wide: updates cannot move it into a workspace.
      await expectProblem('PUT', `${RATE}/${id}`, { workspace_id: 'default' }, 'workspace_id');
      expect((await gw.admin('PUT', `${RATE}/${id}`, { value: 7, conditions: [{ key: 'api_key', value: '*' }] })).status).toBe(200);
      expect((await gw.admin('GET', `${RATE}/${id}`)).json).toMatchObject({ value: 7, workspace_id: null });
      expect((await gw.admin('DELETE', `${RATE}/${id}`)).status).toBe(200);
      // A workspace_id condition naming no workspace of the organisation is a 400 on that condition.
      await expectProblem('POST', RATE, { ...body, conditions: [{ key: 'workspace_id', value: 'nowhere' }] }, 'conditions[0].value');
    });

    it('keeps workspace keys to their own workspace', async () => {
      const mine = await gw.admin('POST', RATE, rateBody());
      const id = mine.json.id as string;
      await expectProblem('POST', RATE, rateBody({ workspace_id: 'default' }), '', 403, 'AB03', otherWsKey);
      await expectProblem('GET', `${RATE}/${id}`, undefined, '', 404, 'AB08', otherWsKey);
      const theirs = await gw.admin('GET', RATE, undefined, otherWsKey);
      expect((theirs.json.data as Json[]).some((p) => p.id === id)).toBe(false);
      await expectProblem('GET', `${RATE}?workspace_id=default`, undefined, '', 403, 'AB03', otherWsKey);
    });

    it('validates updates: at least one field, every rule, no move to another workspace', async () => {
      const id = (await gw.admin('POST', RATE, rateBody())).json.id as string;
      await expectProblem('PUT', `${RATE}/${id}`, {}, '');
      await expectProblem('PUT', `${RATE}/${id}`, { value: -1 }, 'value');
      await expectProblem('PUT', `${RATE}/${id}`, { unit: 'rpy' }, 'unit');
      await expectProblem('PUT', `${RATE}/${id}`, { conditions: [] }, 'conditions');
      await expectProblem('PUT', `${RATE}/${id}`, { workspace_id: 'other' }, 'workspace_id');
      await expectProblem('PUT', `${RATE}/${id}`, { organisation_id: randomUUID() }, 'organisation_id');
      expect((await gw.admin('PUT', `${RATE}/${id}`, { workspace_id: 'default', name: null })).status).toBe(200);
      expect((await gw.admin('GET', `${RATE}/${id}`)).json.name).toBeNull();
      await expectProblem('PUT', `${RATE}/${randomUUID()}`, { value: 5 }, '', 404, 'AB08');
    });

    it('validates list filters', async () => {
      await expectProblem('GET', `${RATE}?type=bytes`, undefined, 'type');
      await expectProblem('GET', `${RATE}?unit=rpy`, undefined, 'unit');
      await expectProblem('GET', `${RATE}?status=gone`, undefined, 'status');
      await expectProblem('GET', `${RATE}?page_size=0`, undefined, 'page_size');
    });
  });

  describe('usage limits', () => {
    it('creates, reads (with usage), lists, updates and deletes a budget', async () => {
      const created = await gw.admin('POST', USAGE, usageBody({ alert_threshold: 8, periodic_reset: 'monthly', alert_emails: ['fin@example.com'] }));
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      expect(created.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), object: 'policy_usage_limits' });
      const id = created.json.id as string;
      const got = await gw.admin('GET', `${USAGE}/${id}?include_usage=true`);
      expect(got.json).toMatchObject({
        object: 'policy_usage_limits',
        type: 'cost',
        credit_limit: 10,
        alert_threshold: 8,
        periodic_reset: 'monthly',
        periodic_reset_days: null,
        next_usage_reset_at: expect.stringMatching(/-01T00:00:00.000Z$/),
        last_reset_at: null,
        alert_emails: ['fin@example.com'],
        value_key_usage_map: {},
      });
      expect(got.json).not.toHaveProperty('reset_anchor');

      // Setting one reset rule replaces the other.
      expect((await gw.admin('PUT', `${USAGE}/${id}`, { periodic_reset_days: 30 })).status).toBe(200);
      expect((await gw.admin('GET', `${USAGE}/${id}`)).json).toMatchObject({ periodic_reset: null, periodic_reset_days: 30 });
      expect((await gw.admin('PUT', `${USAGE}/${id}`, { periodic_reset: null, periodic_reset_days: null })).status).toBe(200);
      expect((await gw.admin('GET', `${USAGE}/${id}`)).json).toMatchObject({ periodic_reset: null, periodic_reset_days: null, next_usage_reset_at: null });

      const list = await gw.admin('GET', `${USAGE}?type=cost`);
      expect((list.json.data as Json[]).map((p) => p.id)).toContain(id);
      expect((await gw.admin('GET', `${USAGE}/${id}/entities`)).json).toEqual({ object: 'list', total: 0, data: [] });
      await expectProblem('PUT', `${USAGE}/${id}/entities/nobody/reset`, undefined, '', 404, 'AB08');

      expect(await gw.admin('DELETE', `${USAGE}/${id}`)).toEqual({ status: 200, json: {} });
      await expectProblem('DELETE', `${USAGE}/${id}`, undefined, '', 404, 'AB08');
      await expectProblem('DELETE', `${USAGE}/x`, undefined, 'policyUsageLimitsId');
    });

    it.each([
      ['type unknown', { type: 'requests' }, 'type'],
      ['credit_limit missing', { credit_limit: undefined }, 'credit_limit'],
      ['credit_limit negative', { credit_limit: -1 }, 'credit_limit'],
      ['credit_limit a string', { credit_limit: '10' }, 'credit_limit'],
      ['credit_limit fractional for tokens', { type: 'tokens', credit_limit: 1.5 }, 'credit_limit'],
      ['alert_threshold negative', { alert_threshold: -1 }, 'alert_threshold'],
      ['alert_threshold at the limit', { alert_threshold: 10 }, 'alert_threshold'],
      ['periodic_reset unknown', { periodic_reset: 'daily' }, 'periodic_reset'],
      ['periodic_reset_days 0', { periodic_reset_days: 0 }, 'periodic_reset_days'],
      ['periodic_reset_days 366', { periodic_reset_days: 366 }, 'periodic_reset_days'],
      ['periodic_reset_days fractional', { periodic_reset_days: 1.5 }, 'periodic_reset_days'],
      ['both reset rules', { periodic_reset: 'weekly', periodic_reset_days: 7 }, 'periodic_reset_days'],
      ['next_usage_reset_at not ISO', { periodic_reset: 'weekly', next_usage_reset_at: 'next monday' }, 'next_usage_reset_at'],
      ['next_usage_reset_at without a rule', { next_usage_reset_at: '2030-01-01T00:00:00Z' }, 'next_usage_reset_at'],
      ['alert_emails not addresses', { alert_emails: ['finance'] }, 'alert_emails[0]'],
      ['conditions empty', { conditions: [] }, 'conditions'],
      ['group_by empty', { group_by: [] }, 'group_by'],
      ['name too long', { name: 'y'.repeat(256) }, 'name'],
      ['organisation_id not a UUID', { organisation_id: 'x' }, 'organisation_id'],
    ])('refuses a create with %s', async (_, patch, field) => {
      await expectProblem('POST', USAGE, usageBody(patch as Json), field);
    });

    it('accepts the bounds: 1 and 365 days, a given next reset, a zero threshold', async () => {
      for (const patch of [
        { periodic_reset_days: 1 },
        { periodic_reset_days: 365 },
        { periodic_reset: 'weekly', next_usage_reset_at: '2031-03-03T09:00:00Z', alert_threshold: 0 },
      ]) {
        const res = await gw.admin('POST', USAGE, usageBody(patch));
        expect(res.status, JSON.stringify(res.json)).toBe(200);
      }
      const weekly = await gw.admin('POST', USAGE, usageBody({ periodic_reset: 'weekly', next_usage_reset_at: '2031-03-03T09:00:00Z' }));
      expect((await gw.admin('GET', `${USAGE}/${weekly.json.id as string}`)).json.next_usage_reset_at).toBe('2031-03-03T09:00:00.000Z');
    });

    it('still needs a workspace from an organisation key: budgets are never organisation-wide', async () => {
      const { workspace_id: _, ...noWorkspace } = usageBody();
      await expectProblem('POST', USAGE, noWorkspace, 'workspace_id');
      expect((await gw.admin('POST', USAGE, noWorkspace, wsKey)).status).toBe(200);
    });

    it('checks updates against the stored policy', async () => {
      const id = (await gw.admin('POST', USAGE, usageBody({ alert_threshold: 5 }))).json.id as string;
      await expectProblem('PUT', `${USAGE}/${id}`, {}, '');
      await expectProblem('PUT', `${USAGE}/${id}`, { credit_limit: 4 }, 'credit_limit');
      await expectProblem('PUT', `${USAGE}/${id}`, { alert_threshold: 12 }, 'alert_threshold');
      await expectProblem('PUT', `${USAGE}/${id}`, { periodic_reset: 'weekly', periodic_reset_days: 3 }, 'periodic_reset_days');
      await expectProblem('PUT', `${USAGE}/${id}`, { next_usage_reset_at: '2031-01-01T00:00:00Z' }, 'next_usage_reset_at');
      await expectProblem('PUT', `${USAGE}/${id}`, { type: 'tokens' }, '');
      expect((await gw.admin('PUT', `${USAGE}/${id}`, { alert_threshold: null, credit_limit: 4 })).status).toBe(200);
    });
  });
});

describe('feature flags', () => {
  it('POLICY_ENABLED=OFF closes both kinds with a 403 naming the flag', async () => {
    const gw = await startGantry('direct', { POLICY_ENABLED: 'OFF' });
    try {
      for (const path of [RATE, USAGE, `${RATE}/${randomUUID()}`]) {
        const res = await gw.admin('GET', path);
        expect(res.status).toBe(403);
        expect(res.json).toMatchObject({ errorCode: 'AB03', message: expect.stringContaining('POLICY_ENABLED=OFF') });
      }
      expect((await gw.admin('POST', RATE, rateBody())).status).toBe(403);
    } finally {
      await gw.close();
    }
  });

  it('USAGE_LIMITS_ENABLED=OFF closes the usage limits only', async () => {
    const gw = await startGantry('direct', { USAGE_LIMITS_ENABLED: 'OFF' });
    try {
      const res = await gw.admin('POST', USAGE, usageBody(), ADMIN_KEY);
      expect(res.status).toBe(403);
      expect(res.json.message).toContain('USAGE_LIMITS_ENABLED=OFF');
      expect((await gw.admin('POST', RATE, rateBody())).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});
