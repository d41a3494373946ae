/**
 * The index entries of API keys (store/api-key-index.ts) against DynamoDB Local: every key write
 * path leaves exactly the entries the key's record needs, extra entries left by a race are ignored
 * and removed by the readers, and keys written before the index are found once backfilled (and,
 * until then, through the organisation's full list).
 */
import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { rotatedRecord } from '../../../../layers/core/src/admin/api-keys/lifecycle.ts';
import { ensureBootstrap } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ApiKeyIndexEntry, EXPIRY_WARNING_MS, keyDueAt } from '../../../../layers/core/src/store/api-key-index.ts';
import type { ApiKeyRecord } from '../../../../layers/core/src/store/entities.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { keyRecord, scanTable } from '../../../support/records.ts';
import { countReads, seedKeys } from '../../../support/table-reads.ts';

const DAY = 86_400_000;
const t0 = Date.UTC(2026, 5, 1);
const iso = (ms: number) => new Date(ms).toISOString();

let deps: CoreDeps;
let org: string;
let ws: string;

beforeAll(async () => {
  deps = await createTestDeps();
  ({ organisationId: org, workspaceId: ws } = await ensureBootstrap(deps));
});

/** The index entries stored for a key, as `INDEX value` strings. */
async function entriesOf(keyId: string): Promise<string[]> {
  const items = (await scanTable(deps.repos.table)).filter((i) => i._type === 'ApiKeyIndex' && i.key_id === keyId);
  return items.map((i) => `${String(i.index)} ${String(i.value)}`).sort();
}

const userKey = (fields: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  ...keyRecord({ organisation_id: org, workspace_id: ws, type: 'workspace-user', user_id: randomUUID() }, t0).record,
  ...fields,
});

describe('keyDueAt: when the lifecycle has something to do for a key', () => {
  const base = userKey();
  it('is null for a key with no expiry, rotation, transition or reset', () => {
    expect(keyDueAt(base)).toBeNull();
  });
  it('is the expiry warning, then (once sent) the expiry; never for an expired key', () => {
    const expires = t0 + 30 * DAY;
    expect(keyDueAt({ ...base, expires_at: iso(expires) })).toBe(expires - EXPIRY_WARNING_MS);
    expect(keyDueAt({ ...base, expires_at: iso(expires), expiry_warning_for: iso(expires) })).toBe(expires);
    expect(keyDueAt({ ...base, expires_at: iso(expires), status: 'expired' })).toBeNull();
  });
  it('is the rotation notice, then the rotation, of an active key only', () => {
    const next = t0 + 10 * DAY;
    const policy = { rotation_period: 'weekly' as const, next_rotation_at: iso(next), key_transition_period_ms: 3_600_000 };
    expect(keyDueAt({ ...base, rotation_policy: policy })).toBe(next - DAY);
    expect(keyDueAt({ ...base, rotation_policy: policy, rotation_notice_for: iso(next) })).toBe(next);
    expect(keyDueAt({ ...base, rotation_policy: policy, status: 'exhausted' })).toBeNull();
  });
  it('is the earliest of those, the end of a transition and the next usage reset', () => {
    const r = { ...base, previous_key_hash: 'h', previous_key_expires_at: iso(t0 + 2 * DAY), usage_limits: { next_usage_reset_at: iso(t0 + DAY) } };
    expect(keyDueAt(r)).toBe(t0 + DAY);
    expect(keyDueAt({ ...r, previous_key_hash: null, usage_limits: null })).toBeNull();
  });
});

describe('index entries under every key write', () => {
  it('create writes the user, config and due entries; update moves them; delete removes them', async () => {
    const key = userKey({ defaults: { config_id: 'cfg-a' }, expires_at: iso(t0 + 30 * DAY) });
    await deps.repos.apiKeys.create(key);
    expect(await entriesOf(key.id)).toEqual([`CONFIG cfg-a`, `DUE ${iso(t0 + 23 * DAY)}`, `USER ${key.user_id}`]);

    const next = { ...key, defaults: { config_id: 'cfg-b' }, expires_at: iso(t0 + 60 * DAY), last_updated_at: iso(t0 + 1) };
    await deps.repos.apiKeys.update(next, { previous: key });
    expect(await entriesOf(key.id)).toEqual([`CONFIG cfg-b`, `DUE ${iso(t0 + 53 * DAY)}`, `USER ${key.user_id}`]);

    const plain = { ...next, defaults: null, expires_at: null, last_updated_at: iso(t0 + 2) };
    await deps.repos.apiKeys.update(plain, { previous: next });
    expect(await entriesOf(key.id)).toEqual([`USER ${key.user_id}`]);

    await deps.repos.apiKeys.delete(plain);
    expect(await entriesOf(key.id)).toEqual([]);
  });

  it('a rotation adds the end of the transition', async () => {
    const key = userKey();
    await deps.repos.apiKeys.create(key);
    const rotation = rotatedRecord(key, t0, 3_600_000, null);
    await deps.repos.apiKeys.rotate(key, rotation.record);
    expect(await entriesOf(key.id)).toEqual([`DUE ${iso(t0 + 3_600_000)}`, `USER ${key.user_id}`]);
  });

  it('keys made by a larger transaction (an accepted invite) have their entries written ahead', async () => {
    const user = randomUUID();
    const keys = [userKey({ user_id: user }), userKey({ user_id: user })];
    await deps.repos.apiKeys.indexAhead(keys);
    await deps.repos.table.transact(keys.flatMap((k) => deps.repos.apiKeys.createItems(k)));
    expect((await deps.repos.apiKeys.listByUser(org, user)).map((k) => k.id).sort()).toEqual(keys.map((k) => k.id).sort());
  });

  it('the bootstrap writes the owner key and marks the new organisation as needing no backfill', async () => {
    expect(await deps.repos.apiKeys.indexReady(org)).toBe(true);
    expect(await deps.repos.apiKeys.indexReady(randomUUID())).toBe(false);
  });
});

describe('readers', () => {
  it('find the keys of a user and of a config (by id or slug) reading those keys only', async () => {
    const user = randomUUID();
    const mine = [userKey({ user_id: user }), userKey({ user_id: user, defaults: { config_id: 'cfg-slug' } })];
    const pinnedById = userKey({ defaults: { config_id: 'cfg-id' } });
    const others = Array.from({ length: 200 }, () => userKey({ defaults: { config_id: 'cfg-other' } }));
    await seedKeys(deps, [...others, ...mine, pinnedById]);

    const byUser = await countReads(deps.repos.table.doc, () => deps.repos.apiKeys.listByUser(org, user));
    expect(byUser.result.map((k) => k.id).sort()).toEqual(mine.map((k) => k.id).sort());
    expect(byUser.reads.items).toBeLessThanOrEqual(2 * mine.length + 1);

    const byConfig = await countReads(deps.repos.table.doc, () => deps.repos.apiKeys.listByConfig(org, ['cfg-id', 'cfg-slug']));
    expect(byConfig.result.map((k) => k.id).sort()).toEqual([pinnedById.id, mine[1]?.id].sort());
    expect(byConfig.reads.items).toBeLessThanOrEqual(2 * 2 + 1);
  });

  it('ignore and remove an entry its key no longer needs (two writes raced), keeping the right one', async () => {
    const key = userKey({ defaults: { config_id: 'cfg-now' } });
    await deps.repos.apiKeys.create(key);
    // What a lost race leaves: an entry under the config the key pinned before.
    const stale = ApiKeyIndexEntry.toItem({ organisation_id: org, key_id: key.id, index: 'CONFIG', value: 'cfg-then', write_id: 'w' });
    await deps.repos.table.doc.send(new PutCommand({ TableName: deps.repos.table.tableName, Item: stale }));
    expect(await deps.repos.apiKeys.listByConfig(org, ['cfg-then'])).toEqual([]);
    expect(await entriesOf(key.id)).toEqual(['CONFIG cfg-now', `USER ${key.user_id}`]);
    expect((await deps.repos.apiKeys.listByConfig(org, ['cfg-now'])).map((k) => k.id)).toEqual([key.id]);
  });
});

describe('keys written before the index', () => {
  it('are found through the full list until the backfill is done, and through the index after it', async () => {
    const oldOrg = randomUUID();
    const user = randomUUID();
    const old = (fields: Partial<ApiKeyRecord>) => ({ ...keyRecord({ organisation_id: oldOrg, workspace_id: ws }, t0).record, ...fields });
    const theirs = old({ type: 'workspace-user', user_id: user, defaults: { config_id: 'cfg-old' } });
    const expiring = old({ expires_at: iso(t0 + 30 * DAY) });
    await seedKeys(deps, [...Array.from({ length: 250 }, () => old({})), theirs, expiring], false);

    expect(await deps.repos.apiKeys.indexReady(oldOrg)).toBe(false);
    expect((await deps.repos.apiKeys.listByUser(oldOrg, user)).map((k) => k.id)).toEqual([theirs.id]);
    expect((await deps.repos.apiKeys.listByConfig(oldOrg, ['cfg-old'])).map((k) => k.id)).toEqual([theirs.id]);
    const nothingDue = async (at: number) => {
      const found: string[] = [];
      for await (const page of deps.repos.apiKeys.dueKeys(oldOrg, at)) found.push(...page.map((k) => k.id));
      return found;
    };
    expect(await nothingDue(t0 + 30 * DAY)).toEqual([]);

    // A budget of nothing: one page a call, resumed from the marker.
    const seen: string[] = [];
    const opts = { budgetMs: 0, nowIso: () => iso(t0), onKeys: async (keys: ApiKeyRecord[]) => void seen.push(...keys.map((k) => k.id)) };
    const runs: boolean[] = [];
    while (!runs.at(-1)) runs.push(await deps.repos.apiKeys.backfillIndex(oldOrg, opts));
    expect(runs).toEqual([false, false, true]);
    expect(new Set(seen).size).toBe(252);
    expect(await deps.repos.apiKeys.indexReady(oldOrg)).toBe(true);

    const byUser = await countReads(deps.repos.table.doc, () => deps.repos.apiKeys.listByUser(oldOrg, user));
    expect(byUser.result.map((k) => k.id)).toEqual([theirs.id]);
    expect(byUser.reads.items).toBeLessThanOrEqual(2);
    expect(await nothingDue(t0 + 30 * DAY)).toEqual([expiring.id]);
  });
});
