/**
 * The admin route mechanism against DynamoDB Local: audit entries written in the change's own
 * transaction (transactional routes) or ahead of it (every other route), completed with the
 * outcome, never skipped; a failed write-ahead stops the change; feature flags and roles answer
 * 403 before any handler runs.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { createApp } from '../../../../layers/core/src/app.ts';
import { ConflictError } from '../../../../layers/core/src/http/errors.ts';
import { mountAdminRoutes, type AdminRoute } from '../../../../layers/core/src/admin/route.ts';
import { ensureBootstrap } from '../../../../layers/core/src/bootstrap.ts';
import { AuditRepository, type AuditRecord } from '../../../../layers/core/src/store/audit.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { ADMIN_KEY } from '../../../support/gantry.ts';

let deps: CoreDeps;
let orgId: string;
let audits: AuditRepository;
const seenInside: AuditRecord[][] = [];
let handlerRuns = 0;

const marker = (id: string) => ({ pk: `TEST#${id}`, sk: 'TEST', _type: 'Test' });
const hasMarker = async (id: string) =>
  (
    await deps.repos.table.doc.send(
      new (
        await import('@aws-sdk/lib-dynamodb')
      ).GetCommand({ TableName: deps.repos.table.tableName, Key: { pk: `TEST#${id}`, sk: 'TEST' }, ConsistentRead: true }),
    )
  ).Item !== undefined;

const range = () =>
  audits.range({ organisationId: orgId, start: new Date(Date.now() - 60_000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() });

const routes: AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/workspaces/tx/:id',
    scope: 'workspaces.update',
    audit: { transactional: true },
    handler: async (ctx) => {
      handlerRuns++;
      const id = ctx.params.id ?? '';
      const mode = ctx.query.get('mode');
      try {
        await ctx.deps.repos.table.transact([
          {
            Put: {
              TableName: ctx.deps.repos.table.tableName,
              Item: marker(id),
              ...(mode === 'conflict' ? { ConditionExpression: 'attribute_exists(pk)' } : {}),
            },
          },
        ]);
      } catch {
        throw new ConflictError('the change was refused');
      }
      if (mode === 'crash-after') throw new Error('boom after the change');
      return { id };
    },
  },
  {
    method: 'POST',
    path: '/v1/workspaces/ahead/:id',
    scope: 'workspaces.update',
    handler: async (ctx) => {
      handlerRuns++;
      seenInside.push(await range());
      if (ctx.query.get('mode') === 'crash') throw new Error('boom');
      return {};
    },
  },
  { method: 'POST', path: '/v1/workspaces/flagged', scope: 'workspaces.update', feature: 'guardrails', handler: async () => ({}) },
  { method: 'POST', path: '/v1/workspaces/owners-only', scope: 'workspaces.update', roles: ['owner'], handler: async () => ({}) },
];

let app: ReturnType<typeof createApp>;
const post = async (path: string) => {
  const res = await app.fetch(
    new Request(`http://local${path}`, { method: 'POST', headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' }, body: '{"x":1}' }),
  );
  return { status: res.status, requestId: res.headers.get('x-gw-request-id') ?? '', body: (await res.json()) as Record<string, unknown> };
};
const entryOf = async (requestId: string) => (await range()).filter((e) => e.request_id === requestId);

beforeAll(async () => {
  deps = await createTestDeps({ GUARDRAILS_ENABLED: 'OFF' });
  orgId = (await ensureBootstrap(deps, ADMIN_KEY)).organisationId;
  audits = new AuditRepository(deps.repos.table);
  app = createApp(deps, [(a, d) => mountAdminRoutes(a, d, routes)]);
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('audit entries of transactional routes', () => {
  it('the entry commits with the change, in the same transaction', async () => {
    const id = randomUUID();
    const sent = vi.spyOn(deps.repos.table.doc, 'send');
    const reply = await post(`/v1/workspaces/tx/${id}`);
    expect(reply.status).toBe(200);
    // One write: the transaction carrying both the change and the entry.
    const writes = sent.mock.calls.map((c) => c[0].constructor.name).filter((n) => n !== 'GetCommand' && n !== 'QueryCommand');
    expect(writes).toEqual(['TransactWriteCommand']);
    const items = (
      sent.mock.calls.find((c) => c[0].constructor.name === 'TransactWriteCommand')?.[0].input as {
        TransactItems: { Put?: { Item: Record<string, unknown> } }[];
      }
    ).TransactItems;
    expect(items.map((i) => String(i.Put?.Item.pk).split('#')[0])).toEqual(['TEST', 'AUDIT']);
    expect(await hasMarker(id)).toBe(true);
    expect(await entryOf(reply.requestId)).toEqual([
      expect.objectContaining({
        response_status_code: 200,
        outcome: 'success',
        resource_id: id,
        request_body: '{"x":1}',
        resource_type: 'workspaces',
        action: 'update',
      }),
    ]);
  });

  it('a refused transaction writes neither; the attempt is recorded afterwards as a failure', async () => {
    const id = randomUUID();
    const reply = await post(`/v1/workspaces/tx/${id}?mode=conflict`);
    expect(reply.status).toBe(409);
    expect(await hasMarker(id)).toBe(false);
    expect(await entryOf(reply.requestId)).toEqual([expect.objectContaining({ response_status_code: 409, outcome: 'failure' })]);
  });

  it('a crash after the change commits: the entry written with it is completed with the 500', async () => {
    const id = randomUUID();
    const reply = await post(`/v1/workspaces/tx/${id}?mode=crash-after`);
    expect(reply.status).toBe(500);
    expect(await hasMarker(id)).toBe(true);
    expect(await entryOf(reply.requestId)).toEqual([expect.objectContaining({ response_status_code: 500, outcome: 'failure' })]);
  });
});

describe('audit entries written ahead (every other route)', () => {
  it('the entry exists, pending, before the handler changes anything; then it is completed', async () => {
    seenInside.length = 0;
    const reply = await post(`/v1/workspaces/ahead/${randomUUID()}`);
    expect(reply.status).toBe(200);
    const inside = seenInside[0]?.filter((e) => e.request_id === reply.requestId);
    expect(inside).toEqual([expect.objectContaining({ outcome: 'pending', response_status_code: null })]);
    expect(await entryOf(reply.requestId)).toEqual([expect.objectContaining({ outcome: 'success', response_status_code: 200 })]);
  });

  it('a crashing handler leaves a failure entry with the 500', async () => {
    const reply = await post(`/v1/workspaces/ahead/${randomUUID()}?mode=crash`);
    expect(reply.status).toBe(500);
    expect(await entryOf(reply.requestId)).toEqual([expect.objectContaining({ outcome: 'failure', response_status_code: 500 })]);
  });

  it('when the entry cannot be written, the handler never runs: no change without its record', async () => {
    vi.spyOn(AuditRepository.prototype, 'put').mockRejectedValue(new Error('table unavailable'));
    const before = handlerRuns;
    const reply = await post(`/v1/workspaces/ahead/${randomUUID()}`);
    expect(reply.status).toBe(500);
    expect(handlerRuns).toBe(before);
  });
});

describe('flags and roles', () => {
  it('a route behind a disabled feature answers 403 naming the flag, before authenticating', async () => {
    const res = await app.fetch(new Request('http://local/v1/workspaces/flagged', { method: 'POST' }));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toContain('GUARDRAILS_ENABLED=OFF');
  });

  it('a route for some roles only refuses the others with 403 AB03, whatever their scopes', async () => {
    const { newKeyRecord } = await import('../../../../layers/core/src/admin/api-keys/service.ts');
    const made = newKeyRecord(
      {
        organisation_id: orgId,
        workspace_id: null,
        user_id: null,
        type: 'organisation-service',
        name: 'a',
        description: null,
        scopes: ['workspaces.update'],
        expires_at: null,
        owner: false,
        created_by: null,
      },
      Date.now(),
    );
    await deps.repos.apiKeys.create(made.record);
    const res = await app.fetch(new Request('http://local/v1/workspaces/owners-only', { method: 'POST', headers: { 'x-gw-api-key': made.key } }));
    const body = (await res.json()) as { errorCode: string; message: string };
    expect([res.status, body.errorCode]).toEqual([403, 'AB03']);
    expect(body.message).toContain('only organisation owners may');
    expect((await post('/v1/workspaces/owners-only')).status).toBe(200);
  });
});
