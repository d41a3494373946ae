/**
 * Repositories against DynamoDB Local: keys and workspaces round-trip, uniqueness holds without
 * half-written items, the first-start bootstrap is idempotent, and creating the table is too.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureBootstrap } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ConflictError } from '../../../../layers/core/src/http/errors.ts';
import { hashApiKey } from '../../../../layers/core/src/policy/api-key-secret.ts';
import { SCOPES } from '../../../../layers/core/src/policy/scopes.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { ensureTable } from '../../../../layers/core/src/store/create-table.ts';
import { createDocumentClient } from '../../../../layers/core/src/store/db.ts';
import { createRepositories } from '../../../../layers/core/src/store/repositories.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { keyRecord, scanTable, workspaceRecord } from '../../../support/records.ts';

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

function expectConflict(err: unknown, text: string): void {
  expect(err).toBeInstanceOf(ConflictError);
  expect((err as ConflictError).status).toBe(409);
  expect((err as ConflictError).code).toBe('AB07');
  expect((err as ConflictError).message).toContain(text);
}

describe('workspaces', () => {
  let deps: CoreDeps;
  const org = randomUUID();
  beforeAll(async () => {
    deps = await createTestDeps();
  });

  it('creates a workspace and finds it by id and by slug', async () => {
    const ws = workspaceRecord(org, 'alpha', { description: 'first', defaults: { retry: { attempts: 2 } } });
    await deps.repos.workspaces.create(ws);
    expect(await deps.repos.workspaces.getById(org, ws.id)).toEqual(ws);
    expect(await deps.repos.workspaces.resolve(org, ws.id)).toEqual(ws);
    expect(await deps.repos.workspaces.resolve(org, 'alpha')).toEqual(ws);
  });

  it('finds nothing for an unknown id or slug, or in another organisation', async () => {
    const ws = workspaceRecord(org, 'beta');
    await deps.repos.workspaces.create(ws);
    expect(await deps.repos.workspaces.getById(org, randomUUID())).toBeUndefined();
    expect(await deps.repos.workspaces.resolve(org, 'gamma')).toBeUndefined();
    expect(await deps.repos.workspaces.resolve(randomUUID(), 'beta')).toBeUndefined();
    expect(await deps.repos.workspaces.resolve(randomUUID(), ws.id)).toBeUndefined();
  });

  it('refuses a taken slug with a ConflictError naming it, and writes nothing', async () => {
    const first = workspaceRecord(org, 'taken');
    await deps.repos.workspaces.create(first);
    const second = workspaceRecord(org, 'taken');
    expectConflict(await rejection(deps.repos.workspaces.create(second)), '"taken"');

    expect(await deps.repos.workspaces.getById(org, second.id)).toBeUndefined();
    expect(await deps.repos.workspaces.resolve(org, 'taken')).toEqual(first);
    const items = await scanTable(deps.repos.table);
    expect(items.filter((i) => i.sk === `WS#${second.id}`)).toEqual([]);
    expect(items.filter((i) => i.sk === 'WSSLUG#taken')).toHaveLength(1);
  });

  it('refuses a taken id without claiming the new slug', async () => {
    const first = workspaceRecord(org, 'original');
    await deps.repos.workspaces.create(first);
    const clash = workspaceRecord(org, 'fresh-slug', { id: first.id, name: 'impostor' });
    expectConflict(await rejection(deps.repos.workspaces.create(clash)), 'fresh-slug');

    expect(await deps.repos.workspaces.resolve(org, 'fresh-slug')).toBeUndefined();
    expect((await deps.repos.workspaces.getById(org, first.id))?.name).toBe(first.name);
    const items = await scanTable(deps.repos.table);
    expect(items.filter((i) => i.sk === 'WSSLUG#fresh-slug')).toEqual([]);
  });

  it('allows the same slug in two organisations', async () => {
    const other = randomUUID();
    const a = workspaceRecord(org, 'shared');
    const b = workspaceRecord(other, 'shared');
    await deps.repos.workspaces.create(a);
    await deps.repos.workspaces.create(b);
    expect((await deps.repos.workspaces.resolve(org, 'shared'))?.id).toBe(a.id);
    expect((await deps.repos.workspaces.resolve(other, 'shared'))?.id).toBe(b.id);
  });
});

describe('API keys', () => {
  let deps: CoreDeps;
  const org = randomUUID();
  const wsA = randomUUID();
  const wsB = randomUUID();
  const t0 = Date.UTC(2026, 0, 1);

  beforeAll(async () => {
    deps = await createTestDeps();
  });

  it('stores a key under its id and its hash, and reads it back from both', async () => {
    const { record, key } = keyRecord({ organisation_id: org, workspace_id: wsA, scopes: ['completions.write', 'logs.view'] }, t0);
    await deps.repos.apiKeys.create(record);
    expect(await deps.repos.apiKeys.getById(org, record.id)).toEqual(record);
    expect(await deps.repos.apiKeys.getByHash(hashApiKey(key))).toEqual(record);
    expect(await deps.repos.apiKeys.getById(randomUUID(), record.id)).toBeUndefined();

    const items = (await scanTable(deps.repos.table)).filter((i) => i.id === record.id);
    expect(items.map((i) => [i.pk, i.sk, i._type]).sort()).toEqual([
      [`KEYHASH#${record.key_hash}`, 'KEYHASH', 'ApiKeyByHash'],
      [`ORG#${org}`, `APIKEY#${record.id}`, 'ApiKey'],
    ]);
    expect(JSON.stringify(items)).not.toContain(key);
  });

  it('finds nothing for an unknown hash', async () => {
    expect(await deps.repos.apiKeys.getByHash(hashApiKey('gw_unknown'))).toBeUndefined();
  });

  it('lists an organisation oldest first, and one workspace on its own', async () => {
    const listOrg = randomUUID();
    const made = [
      keyRecord({ organisation_id: listOrg, workspace_id: wsB, name: 'second' }, t0 + 2_000),
      keyRecord({ organisation_id: listOrg, workspace_id: null, name: 'first', scopes: ['api_keys.list'] }, t0 + 1_000),
      keyRecord({ organisation_id: listOrg, workspace_id: wsB, name: 'third' }, t0 + 3_000),
      keyRecord({ organisation_id: listOrg, workspace_id: randomUUID(), name: 'fourth' }, t0 + 4_000),
    ];
    for (const m of made) await deps.repos.apiKeys.create(m.record);

    const all = await deps.repos.apiKeys.list(listOrg);
    expect(all.map((k) => k.name)).toEqual(['first', 'second', 'third', 'fourth']);
    expect(all[0]).toEqual(made[1]?.record);
    const inB = await deps.repos.apiKeys.list(listOrg, wsB);
    expect(inB.map((k) => k.name)).toEqual(['second', 'third']);
    expect(await deps.repos.apiKeys.list(randomUUID())).toEqual([]);
  });

  it('deletes the key and its hash copy together', async () => {
    const { record, key } = keyRecord({ organisation_id: org, workspace_id: wsA }, t0);
    await deps.repos.apiKeys.create(record);
    await deps.repos.apiKeys.delete(record);
    expect(await deps.repos.apiKeys.getById(org, record.id)).toBeUndefined();
    expect(await deps.repos.apiKeys.getByHash(hashApiKey(key))).toBeUndefined();
    expect((await scanTable(deps.repos.table)).filter((i) => i.id === record.id)).toEqual([]);
    expect((await deps.repos.apiKeys.list(org, wsA)).map((k) => k.id)).not.toContain(record.id);
  });

  it('refuses a second key with the same value, leaving neither half of it behind', async () => {
    const raw = 'gw_duplicate-value-0123456789abcdefghijkl';
    const first = keyRecord({ organisation_id: org, workspace_id: wsA, name: 'first' }, t0, raw);
    await deps.repos.apiKeys.create(first.record);
    const second = keyRecord({ organisation_id: org, workspace_id: wsB, name: 'second' }, t0, raw);
    expectConflict(await rejection(deps.repos.apiKeys.create(second.record)), 'already exists');

    expect(await deps.repos.apiKeys.getById(org, second.record.id)).toBeUndefined();
    expect((await deps.repos.apiKeys.getByHash(hashApiKey(raw)))?.name).toBe('first');
  });

  it('refuses a second key with the same id, keeping the first', async () => {
    const first = keyRecord({ organisation_id: org, workspace_id: wsA, name: 'first' }, t0);
    await deps.repos.apiKeys.create(first.record);
    const clash = keyRecord({ organisation_id: org, workspace_id: wsA, name: 'clash' }, t0);
    const record = { ...clash.record, id: first.record.id };
    expectConflict(await rejection(deps.repos.apiKeys.create(record)), 'already exists');

    expect((await deps.repos.apiKeys.getById(org, first.record.id))?.name).toBe('first');
    expect(await deps.repos.apiKeys.getByHash(hashApiKey(clash.key))).toBeUndefined();
  });
});

describe('ensureBootstrap', () => {
  const organisations = async (deps: CoreDeps) => (await scanTable(deps.repos.table)).filter((i) => i._type === 'Organisation');

  it('creates one organisation, a default workspace and an owner key, once', async () => {
    const clock = new ManualClock();
    const deps = await createTestDeps({}, { clock });
    const first = await ensureBootstrap(deps);
    expect(first.createdAdminKey).toMatch(/^gw_/);

    const owner = await deps.repos.apiKeys.getByHash(hashApiKey(first.createdAdminKey ?? ''));
    expect(owner).toMatchObject({
      organisation_id: first.organisationId,
      type: 'organisation-service',
      workspace_id: null,
      owner: true,
      status: 'active',
      created_at: new Date(clock.now()).toISOString(),
    });
    expect(owner?.scopes).toEqual([...SCOPES]);
    const ws = await deps.repos.workspaces.resolve(first.organisationId, 'default');
    expect(ws?.id).toBe(first.workspaceId);
    expect((await deps.repos.organisations.get(first.organisationId))?.id).toBe(first.organisationId);

    const second = await ensureBootstrap(deps);
    expect(second).toEqual({ organisationId: first.organisationId, workspaceId: first.workspaceId });
    expect(await organisations(deps)).toHaveLength(1);
    expect(await deps.repos.apiKeys.list(first.organisationId)).toHaveLength(1);
  });

  it('two processes starting at once end with one organisation', async () => {
    const deps = await createTestDeps();
    const [a, b] = await Promise.all([ensureBootstrap(deps, 'gw_racer-a-0123456789abcdefghij'), ensureBootstrap(deps, 'gw_racer-b-0123456789abcdefghij')]);
    expect(a.organisationId).toBe(b.organisationId);
    expect(a.workspaceId).toBe(b.workspaceId);
    expect(await organisations(deps)).toHaveLength(1);
    // Both given keys work: the loser adds its own as an owner key.
    for (const raw of ['gw_racer-a-0123456789abcdefghij', 'gw_racer-b-0123456789abcdefghij']) {
      expect((await deps.repos.apiKeys.getByHash(hashApiKey(raw)))?.owner).toBe(true);
    }
  });

  it('uses a given admin key and shows no generated one', async () => {
    const deps = await createTestDeps();
    const given = 'gw_given-admin-key-0123456789abcdefghij';
    const boot = await ensureBootstrap(deps, given);
    expect(boot.createdAdminKey).toBeUndefined();
    expect((await deps.repos.apiKeys.getByHash(hashApiKey(given)))?.owner).toBe(true);
    expect(await deps.repos.apiKeys.list(boot.organisationId)).toHaveLength(1);
  });

  it('adds a given admin key to an existing bootstrap, once', async () => {
    const deps = await createTestDeps();
    const first = await ensureBootstrap(deps);
    const given = 'gw_later-admin-key-0123456789abcdefghij';

    const again = await ensureBootstrap(deps, given);
    expect(again.organisationId).toBe(first.organisationId);
    expect(again.createdAdminKey).toBeUndefined();
    expect(await deps.repos.apiKeys.getByHash(hashApiKey(given))).toMatchObject({
      organisation_id: first.organisationId,
      owner: true,
      type: 'organisation-service',
    });
    expect(await deps.repos.apiKeys.list(first.organisationId)).toHaveLength(2);

    await ensureBootstrap(deps, given);
    expect(await deps.repos.apiKeys.list(first.organisationId)).toHaveLength(2);
    expect(await organisations(deps)).toHaveLength(1);
  });
});

describe('ensureTable', () => {
  let client: DynamoDBClient;
  const created: string[] = [];
  beforeAll(() => {
    client = new DynamoDBClient({
      endpoint: inject('dynamodbEndpoint'),
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });
  afterAll(async () => {
    for (const name of created) await client.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
    client.destroy();
  });

  const freshName = () => {
    const name = `t-${randomUUID()}`;
    created.push(name);
    return name;
  };

  it('creates the declared table with its index and TTL', async () => {
    const name = freshName();
    await ensureTable(client, name);
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(Table?.GlobalSecondaryIndexes?.map((i) => [i.IndexName, i.KeySchema, i.Projection?.ProjectionType])).toEqual([
      [
        'gsi1',
        [
          { AttributeName: 'gsi1pk', KeyType: 'HASH' },
          { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
        ],
        'ALL',
      ],
    ]);
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
    expect(ttl.TimeToLiveDescription).toMatchObject({ AttributeName: 'ttl', TimeToLiveStatus: 'ENABLED' });
  });

  it('leaves an existing table and its data as they are', async () => {
    const name = freshName();
    await ensureTable(client, name);
    const doc = createDocumentClient({ region: 'local', endpoint: inject('dynamodbEndpoint') });
    const repos = createRepositories(doc, name);
    const ws = workspaceRecord(randomUUID(), 'kept');
    await repos.workspaces.create(ws);

    await ensureTable(client, name);
    expect(await repos.workspaces.getById(ws.organisation_id, ws.id)).toEqual(ws);
    doc.destroy();
  });

  it('two processes creating the same table at once both succeed', async () => {
    const name = freshName();
    await Promise.all([ensureTable(client, name), ensureTable(client, name)]);
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
    expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).toBe('ENABLED');
  });
});
