/**
 * KeyAuthenticator against DynamoDB Local with a manual clock: what a warm, stale, very stale,
 * invalidated, unknown and expired key costs in table reads and what the caller gets.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate as flush } from 'node:timers/promises';
import { beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { AuthenticationError } from '../../../../layers/core/src/http/errors.ts';
import { hashApiKey } from '../../../../layers/core/src/policy/api-key-secret.ts';
import { KeyAuthenticator, type PrincipalDirectory } from '../../../../layers/core/src/policy/key-auth.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import type { ApiKeyRecord } from '../../../../layers/core/src/store/entities.ts';
import type { ApiKeyRepository } from '../../../../layers/core/src/store/repositories.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { keyRecord, workspaceRecord } from '../../../support/records.ts';

const TTL = 10_000;
const MAX_STALE = 60_000;
const NEGATIVE_TTL = 2_000;

let deps: CoreDeps;
let repo: ApiKeyRepository;
let clock: ManualClock;
let reads: MockInstance<ApiKeyRepository['getByHash']>;
/** The repository's own read, not counted by the spy. */
let realRead: ApiKeyRepository['getByHash'];
let auth: KeyAuthenticator;
const orgId = randomUUID();
const wsId = randomUUID();

beforeAll(async () => {
  deps = await createTestDeps();
  repo = deps.repos.apiKeys;
});

beforeEach(() => {
  clock = new ManualClock();
  vi.restoreAllMocks();
  realRead = repo.getByHash.bind(repo);
  reads = vi.spyOn(repo, 'getByHash');
  auth = new KeyAuthenticator(repo, clock, { ttlMs: TTL, maxStaleMs: MAX_STALE, negativeTtlMs: NEGATIVE_TTL });
});

async function storedKey(fields: Partial<ApiKeyRecord> = {}): Promise<{ record: ApiKeyRecord; key: string }> {
  const made = keyRecord({ organisation_id: orgId, workspace_id: wsId, scopes: ['completions.write', 'logs.view'] }, clock.now());
  const record = { ...made.record, ...fields };
  await repo.create(record);
  return { record, key: made.key };
}

/** Rotates the stored key in the table (as another instance would); the old key works for `transitionMs`. */
async function rotate(current: ApiKeyRecord, transitionMs: number): Promise<{ rotated: ApiKeyRecord; key: string }> {
  const next = keyRecord({ organisation_id: orgId, workspace_id: wsId }, clock.now());
  const rotated: ApiKeyRecord = {
    ...current,
    key_hash: next.record.key_hash,
    key_mask: next.record.key_mask,
    previous_key_hash: current.key_hash,
    previous_key_expires_at: new Date(clock.now() + transitionMs).toISOString(),
  };
  await repo.rotate(current, rotated);
  return { rotated, key: next.key };
}

/** Lets a background refresh that has been started run to its end. */
async function settle(): Promise<void> {
  await Promise.allSettled(reads.mock.results.map((r) => r.value));
  await flush();
}

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('KeyAuthenticator', () => {
  it('resolves a stored key to its principal', async () => {
    const { record, key } = await storedKey({ user_id: 'u-1', type: 'workspace-user' });
    const p = await auth.authenticate(key);
    expect(p).toEqual({
      kind: 'api-key',
      keyId: record.id,
      organisationId: orgId,
      workspaceId: wsId,
      userId: 'u-1',
      email: null,
      keyType: 'workspace-user',
      // Without a directory a user key is a member; with one, the user's role in the workspace.
      role: 'member',
      owner: false,
      scopes: new Set(['completions.write', 'logs.view']),
      defaults: null,
      limits: { usage_limits: null, rate_limits: null, reset_usage: 0, last_reset_at: null },
    });
  });

  it('roles by key type: the owner key, organisation keys (admins), workspace service keys (managers)', async () => {
    const owner = await storedKey({ owner: true, type: 'organisation-service', workspace_id: null });
    const admin = await storedKey({ type: 'organisation-service', workspace_id: null });
    const service = await storedKey({ type: 'workspace-service' });
    expect((await auth.authenticate(owner.key)).role).toBe('owner');
    expect((await auth.authenticate(admin.key)).role).toBe('admin');
    expect((await auth.authenticate(service.key)).role).toBe('manager');
  });

  it('accepts the key a rotation replaced until its transition ends, then names the rotation', async () => {
    const { record, key: oldKey } = await storedKey();
    const next = await rotate(record, 60_000);
    auth.invalidate(record.key_hash);
    expect((await auth.authenticate(oldKey)).keyId).toBe(record.id);
    expect((await auth.authenticate(next.key)).keyId).toBe(record.id);
    clock.advance(60_000);
    const err = await rejection(auth.authenticate(oldKey));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as Error).message).toContain('rotated');
    expect((await auth.authenticate(next.key)).keyId).toBe(record.id);
  });

  it('another instance stops accepting a key retired by a second rotation once its cache entry is stale', async () => {
    const { record, key: first } = await storedKey();
    const second = await rotate(record, 3_600_000);
    // This instance never hears of the rotations: it only has its cache and the table.
    expect((await auth.authenticate(first)).keyId).toBe(record.id);
    await rotate(second.rotated, 3_600_000);
    clock.advance(TTL);
    const err = await rejection(auth.authenticate(first));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((await auth.authenticate(second.key)).keyId).toBe(record.id);
  });

  it("a workspace key carries its workspace's default metadata under its own; an archived workspace refuses it", async () => {
    const ws = workspaceRecord(orgId, 'meta', { id: wsId, defaults: { metadata: { team: 'workspace', env: 'prod' } } });
    const directory: PrincipalDirectory = {
      workspace: async () => ws,
      userRole: async () => undefined,
      defaultOrganisation: async () => orgId,
      organisationExists: async () => true,
      maxSessionTtl: async () => null,
    };
    const withDirectory = new KeyAuthenticator(repo, clock, { ttlMs: TTL, directory });
    const { key } = await storedKey({ defaults: { metadata: { team: 'key' } } });
    expect((await withDirectory.authenticate(key)).defaults?.metadata).toEqual({ team: 'key', env: 'prod' });
    ws.status = 'archived';
    withDirectory.invalidateAll();
    const err = await rejection(withDirectory.authenticate(key));
    expect((err as Error).message).toContain('archived');
    // A user key whose user is no longer a member is refused.
    ws.status = 'active';
    const user = await storedKey({ type: 'workspace-user', user_id: 'gone' });
    expect(((await rejection(withDirectory.authenticate(user.key))) as Error).message).toContain('no longer a member');
  });

  it('a JWT-shaped value without JWT configured is refused naming GW_JWKS_URL, without reading the table', async () => {
    const err = await rejection(auth.authenticate('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'));
    expect((err as AuthenticationError).status).toBe(401);
    expect((err as Error).message).toContain('GW_JWKS_URL');
    expect(reads).not.toHaveBeenCalled();
  });

  it.each([undefined, null, ''])('rejects a missing key (%j) naming the header, without reading the table', async (raw) => {
    const err = await rejection(auth.authenticate(raw));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).status).toBe(401);
    expect((err as AuthenticationError).code).toBe('AB05');
    expect((err as AuthenticationError).message).toContain('x-gw-api-key');
    expect(reads).not.toHaveBeenCalled();
  });

  it('serves a warm key without any DynamoDB call until the TTL passes', async () => {
    const { key } = await storedKey();
    await auth.authenticate(key);
    expect(reads).toHaveBeenCalledTimes(1);
    expect(reads).toHaveBeenCalledWith(hashApiKey(key));
    for (let i = 0; i < 5; i++) {
      clock.advance(TTL / 5 - 1);
      await auth.authenticate(key);
    }
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it('after the TTL serves the cached key at once and refreshes it once in the background', async () => {
    const { record, key } = await storedKey();
    await auth.authenticate(key);
    // The key is revoked elsewhere (another process): this one does not know yet.
    await repo.delete(record);
    clock.advance(TTL);

    const stale = await auth.authenticate(key);
    expect(stale.keyId).toBe(record.id);
    expect(reads).toHaveBeenCalledTimes(2);
    // A second request while the refresh is under way starts no second read.
    await auth.authenticate(key);
    expect(reads).toHaveBeenCalledTimes(2);

    await settle();
    const err = await rejection(auth.authenticate(key));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).message).toBe('Invalid API key');
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('a successful background refresh makes the key fresh again', async () => {
    const { key } = await storedKey();
    await auth.authenticate(key);
    clock.advance(TTL);
    await auth.authenticate(key);
    await settle();
    clock.advance(TTL - 1);
    await auth.authenticate(key);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('a failed background refresh keeps serving the cached key and tries again on the next request', async () => {
    const { record, key } = await storedKey();
    await auth.authenticate(key);
    clock.advance(TTL);
    reads.mockRejectedValueOnce(new Error('throttled'));
    expect((await auth.authenticate(key)).keyId).toBe(record.id);
    await settle();
    expect((await auth.authenticate(key)).keyId).toBe(record.id);
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it('re-reads synchronously once an entry is older than the maximum staleness', async () => {
    const { record, key } = await storedKey();
    await auth.authenticate(key);
    await repo.delete(record);
    clock.advance(MAX_STALE);
    const err = await rejection(auth.authenticate(key));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('invalidate() makes the next request read the table again', async () => {
    const { record, key } = await storedKey();
    await auth.authenticate(key);
    await repo.delete(record);
    auth.invalidate(record.key_hash);
    await expect(auth.authenticate(key)).rejects.toBeInstanceOf(AuthenticationError);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('a background refresh that read the key before it was invalidated does not bring it back', async () => {
    const { record, key } = await storedKey();
    await auth.authenticate(key);
    clock.advance(TTL);

    // The refresh reads the key, then is held until the key has been deleted and invalidated.
    let readDone!: () => void;
    const read = new Promise<void>((r) => (readDone = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    reads.mockImplementationOnce(async (hash) => {
      const found = await realRead(hash);
      readDone();
      await held;
      return found;
    });

    await auth.authenticate(key);
    await read;
    await repo.delete(record);
    auth.invalidate(record.key_hash);
    release();
    await settle();

    const err = await rejection(auth.authenticate(key));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).message).toBe('Invalid API key');
  });

  it('invalidating another key during a refresh does not stop this key from refreshing later', async () => {
    const { record, key } = await storedKey();
    const other = await storedKey();
    await auth.authenticate(key);
    clock.advance(TTL);

    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    reads.mockImplementationOnce(async (hash) => {
      await held;
      return realRead(hash);
    });
    await auth.authenticate(key);
    auth.invalidate(other.record.key_hash);
    release();
    await settle();
    expect(reads).toHaveBeenCalledTimes(2);

    // The discarded refresh cached nothing; the next request starts a new one, which is kept.
    await repo.delete(record);
    expect((await auth.authenticate(key)).keyId).toBe(record.id);
    expect(reads).toHaveBeenCalledTimes(3);
    await settle();
    await expect(auth.authenticate(key)).rejects.toThrow('Invalid API key');
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it('remembers an unknown key for the negative TTL, then reads again', async () => {
    const made = keyRecord({ organisation_id: orgId, workspace_id: wsId }, clock.now());
    await expect(auth.authenticate(made.key)).rejects.toBeInstanceOf(AuthenticationError);
    expect(reads).toHaveBeenCalledTimes(1);
    clock.advance(NEGATIVE_TTL - 1);
    await expect(auth.authenticate(made.key)).rejects.toThrow('Invalid API key');
    expect(reads).toHaveBeenCalledTimes(1);

    // Once the key exists, it works as soon as the negative entry runs out.
    await repo.create(made.record);
    clock.advance(1);
    expect((await auth.authenticate(made.key)).keyId).toBe(made.record.id);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('rejects a key whose expires_at has passed, even while it is cached', async () => {
    const expires = clock.now() + 5_000;
    const { key } = await storedKey({ expires_at: new Date(expires).toISOString() });
    await auth.authenticate(key);
    clock.advance(4_999);
    await auth.authenticate(key);
    clock.advance(1);
    const err = await rejection(auth.authenticate(key));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).code).toBe('AB05');
    expect((err as AuthenticationError).message).toContain('expired');
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it('rejects a key whose status is expired', async () => {
    const { key } = await storedKey({ status: 'expired' });
    await expect(auth.authenticate(key)).rejects.toThrow('This API key has expired');
  });

  it('keeps at most maxEntries keys: the oldest entry is dropped first', async () => {
    const small = new KeyAuthenticator(repo, clock, { ttlMs: TTL, maxEntries: 2 });
    const [a, b, c] = [await storedKey(), await storedKey(), await storedKey()];
    for (const k of [a, b, c]) await small.authenticate(k.key);
    expect(reads).toHaveBeenCalledTimes(3);
    await small.authenticate(c.key);
    await small.authenticate(b.key);
    expect(reads).toHaveBeenCalledTimes(3);
    await small.authenticate(a.key);
    expect(reads).toHaveBeenCalledTimes(4);
  });
});
