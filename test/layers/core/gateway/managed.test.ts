/**
 * The managed provider wrapper on DynamoDB Local, with a recording inner caller: how targets are
 * rewritten, what is refused and with which field, and the cache (a warm provider costs neither a
 * table read nor a decryption; admin changes apply at once; the TTL bounds the rest).
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { IntegrationService } from '../../../../layers/core/src/admin/integrations/service.ts';
import { ProviderService } from '../../../../layers/core/src/admin/providers/service.ts';
import { VirtualKeyService } from '../../../../layers/core/src/admin/virtual-keys/service.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ManagedProviderCache, managedProviderId, withManagedProviders, type ManagedRequest } from '../../../../layers/core/src/gateway/managed.ts';
import type { Attempt } from '../../../../layers/core/src/gateway/routing/execute.ts';
import type { ResolvedTarget } from '../../../../layers/core/src/kernel/routing.ts';
import { ForbiddenError, GantryError, ValidationError } from '../../../../layers/core/src/http/errors.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import { CipherError, type Cipher } from '../../../../layers/core/src/ports/cipher.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { FileCipher } from '../../../../layers/core/src/ports/local/cipher-file.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { workspaceRecord } from '../../../support/records.ts';

const KEY = 'sk-managed-0123456789abcdefghijklmnopqrstuvwxyz';
const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

function principal(org: string, workspaceId: string | null): Principal {
  return {
    kind: 'api-key',
    keyId: randomUUID(),
    organisationId: org,
    workspaceId,
    userId: null,
    email: null,
    keyType: workspaceId === null ? 'organisation-service' : 'workspace-service',
    role: workspaceId === null ? 'owner' : 'manager',
    owner: workspaceId === null,
    scopes: new Set(['completions.write']),
    defaults: null,
    limits: null,
  };
}

const target = (over: Partial<ResolvedTarget> = {}): ResolvedTarget => ({
  path: 'config',
  override_params: {},
  strict_openai_compliance: true,
  options: {},
  ...over,
});

/** A cipher that counts decryptions and can be told to fail. */
class CountingCipher implements Cipher {
  readonly inner = new FileCipher();
  decrypts = 0;
  fail = false;
  encrypt(plaintext: string, context: Record<string, string>) {
    return this.inner.encrypt(plaintext, context);
  }
  decrypt(ciphertext: string, context: Record<string, string>) {
    this.decrypts++;
    if (this.fail) return Promise.reject(new CipherError(`cannot decrypt ${ciphertext}`));
    return this.inner.decrypt(ciphertext, context);
  }
}

describe('withManagedProviders', () => {
  let deps: CoreDeps;
  const clock = new ManualClock(Date.UTC(2026, 3, 1));
  const cipher = new CountingCipher();
  const org = randomUUID();
  const ws = workspaceRecord(org, 'main');
  const other = workspaceRecord(org, 'other');
  const admin = principal(org, null);
  const caller = principal(org, ws.id);
  let seen: ResolvedTarget[];
  const inner = async (t: ResolvedTarget): Promise<Attempt> => {
    seen.push(t);
    return { status: 200, headers: {} };
  };

  const request = (headers: Record<string, string> = {}, params: Record<string, unknown> = { model: 'gpt-4o-mini' }): ManagedRequest => ({
    clientHeaders: new Headers(headers),
    params,
  });
  const call = (t: ResolvedTarget, req: ManagedRequest = request(), who: Principal = caller) => withManagedProviders(inner, deps, who, req)(t);

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock, cipher });
    await deps.repos.workspaces.create(ws);
    await deps.repos.workspaces.create(other);
    const integrations = new IntegrationService(deps);
    await integrations.create(admin, {
      name: 'Main',
      slug: 'main',
      ai_provider_id: 'openai',
      key: KEY,
      configurations: { custom_host: 'http://127.0.0.1:9/v1', openai_project: 'proj-admin' },
      allowed_models: ['gpt-4o-mini', 'gpt-4o'],
    });
    await integrations.create(admin, { name: 'Keyless', slug: 'keyless', ai_provider_id: 'openai' });
    const providers = new ProviderService(deps);
    await providers.create(admin, { name: 'Main', slug: 'main', integration_id: 'main', workspace_id: ws.id });
    await providers.create(admin, { name: 'Keyless', slug: 'keyless', integration_id: 'keyless', workspace_id: ws.id });
    await providers.create(admin, { name: 'Theirs', slug: 'theirs', integration_id: 'main', workspace_id: other.id });
    await new VirtualKeyService(deps).create(admin, {
      name: 'Legacy',
      slug: 'legacy',
      provider: 'openai',
      key: 'sk-vk-000000000000000000',
      workspace_id: ws.id,
    });
  });

  beforeEach(() => {
    seen = [];
    deps.managedProviders.invalidate();
    cipher.fail = false;
  });
  afterEach(() => vi.restoreAllMocks());

  describe('rewrites', () => {
    it('a provider @slug into the integration’s provider, key, base URL and options, leaving the original alone', async () => {
      const original = target({ provider: '@main', options: { openai_project: 'proj-client', openai_organization: 'org-client' } });
      await call(original, request({ 'x-gw-provider': '@main' }));
      expect(seen[0]).toEqual({
        path: 'config',
        provider: 'openai',
        api_key: KEY,
        custom_host: 'http://127.0.0.1:9/v1',
        override_params: {},
        strict_openai_compliance: true,
        managed: true,
        // The administrator's options only: the config's own are dropped for a managed target.
        options: { openai_project: 'proj-admin' },
      });
      expect(original.api_key).toBeUndefined();
      expect(original.provider).toBe('@main');
    });

    it('the model "@slug/model", stripping the prefix through override_params', async () => {
      await call(target(), request({}, { model: '@main/gpt-4o' }));
      expect(seen[0]).toMatchObject({ provider: 'openai', api_key: KEY, override_params: { model: 'gpt-4o' } });
    });

    it('a prefixed model in override_params, and strips a same-slug prefix under a @slug target', async () => {
      await call(target({ override_params: { model: '@main/gpt-4o', temperature: 0 } }), request({}, { model: 'x' }));
      expect(seen[0]?.override_params).toEqual({ model: 'gpt-4o', temperature: 0 });
      await call(target({ provider: '@main' }), request({}, { model: '@main/gpt-4o' }));
      expect(seen[1]?.override_params).toEqual({ model: 'gpt-4o' });
    });

    it('a virtual key, and a provider slug named as a virtual key', async () => {
      await call(target({ virtual_key: 'legacy' }));
      expect(seen[0]).toMatchObject({ provider: 'openai', api_key: 'sk-vk-000000000000000000' });
      expect(seen[0]?.virtual_key).toBeUndefined();
      await call(target({ virtual_key: 'main' }));
      expect(seen[1]).toMatchObject({ api_key: KEY });
    });

    it('drops a key the target had when the integration holds none, so nothing stale is sent', async () => {
      await call(target({ provider: '@keyless', api_key: 'sk-config' }));
      expect(seen[0]?.api_key).toBeUndefined();
      expect(seen[0]?.provider).toBe('openai');
    });

    it('passes every other target through untouched', async () => {
      const plain = target({ provider: 'openai', api_key: 'sk-own' });
      await call(plain);
      expect(seen[0]).toBe(plain);
    });

    it('keeps the managed key away from a semantic cache embedding that goes elsewhere', async () => {
      const embedding = { provider: 'openai', model: 'text-embedding-3-small', custom_host: 'https://embed.example.com/v1' };
      await call(target({ provider: '@main', cache: { mode: 'semantic', embedding } }), request({ authorization: 'Bearer sk-client' }));
      expect(seen[0]?.cache?.embedding?.api_key).toBe('sk-client');
      await call(target({ provider: '@main', cache: { mode: 'semantic', embedding } }));
      expect(seen[1]?.cache).toEqual({ mode: 'semantic' });
      const same = { provider: 'openai', model: 'e', custom_host: 'http://127.0.0.1:9/v1' };
      await call(target({ provider: '@main', cache: { mode: 'semantic', embedding: same } }));
      expect(seen[2]?.cache?.embedding).toEqual(same);
    });
  });

  describe('refuses', () => {
    it('an unknown slug with a 400 naming the header or the config path', async () => {
      const byHeader = await rejection(call(target({ provider: '@ghost' }), request({ 'x-gw-provider': '@ghost' })));
      expect(byHeader).toBeInstanceOf(ValidationError);
      expect((byHeader as ValidationError).problems).toEqual([{ path: 'x-gw-provider', message: 'no provider "@ghost" in this workspace' }]);
      const byConfig = await rejection(call(target({ path: 'config.targets[1]', provider: '@ghost' })));
      expect((byConfig as ValidationError).param).toBe('config.targets[1].provider');
      const vk = await rejection(call(target({ virtual_key: 'ghost' }), request({ 'x-gw-virtual-key': 'ghost' })));
      expect((vk as ValidationError).param).toBe('x-gw-virtual-key');
      const model = await rejection(call(target(), request({}, { model: '@ghost/m' })));
      expect((model as ValidationError).param).toBe('model');
    });

    it('malformed references', async () => {
      expect(((await rejection(call(target({ provider: '@' })))) as ValidationError).param).toBe('config.provider');
      for (const model of ['@main', '@/gpt', '@main/']) {
        expect(((await rejection(call(target(), request({}, { model })))) as ValidationError).param).toBe('model');
      }
    });

    it('a provider of another workspace, and any provider for an organisation principal', async () => {
      expect(await rejection(call(target({ provider: '@theirs' })))).toBeInstanceOf(ValidationError);
      expect(await rejection(call(target({ provider: '@main' }), request(), admin))).toBeInstanceOf(ValidationError);
      expect(seen).toEqual([]);
    });

    it('a model outside the allowed models with a 403 naming it', async () => {
      const err = await rejection(call(target({ provider: '@main' }), request({}, { model: 'o3' })));
      expect(err).toBeInstanceOf(ForbiddenError);
      expect((err as ForbiddenError).message).toContain('"o3"');
      expect((err as ForbiddenError).param).toBe('model');
      const overridden = await rejection(call(target({ provider: '@main', path: 'config.targets[0]', override_params: { model: 'o3' } })));
      expect((overridden as ForbiddenError).param).toBe('config.targets[0].override_params.model');
    });

    it('a custom host sent with a managed provider', async () => {
      const err = await rejection(
        call(target({ provider: '@main', custom_host: 'https://evil.example.com' }), request({ 'x-gw-custom-host': 'https://evil.example.com' })),
      );
      expect((err as ValidationError).param).toBe('x-gw-custom-host');
      await call(target({ provider: '@main', custom_host: 'http://127.0.0.1:9/v1' }));
      expect(seen).toHaveLength(1);
    });

    it('an expired provider with a 403, checked on every call, cached or not', async () => {
      const providers = new ProviderService(deps);
      await providers.create(admin, {
        name: 'Brief',
        slug: 'brief',
        integration_id: 'main',
        workspace_id: ws.id,
        expires_at: new Date(clock.now() + 1_000).toISOString(),
      });
      await call(target({ provider: '@brief' }));
      clock.advance(1_000);
      const err = await rejection(call(target({ provider: '@brief' })));
      expect(err).toBeInstanceOf(ForbiddenError);
      expect((err as Error).message).toMatch(/provider @brief expired at/);
    });

    it('a credential that cannot be decrypted with a 500 that reveals nothing, and tries again next time', async () => {
      cipher.fail = true;
      const err = await rejection(call(target({ provider: '@main' })));
      expect(err).toBeInstanceOf(GantryError);
      expect((err as GantryError).status).toBe(500);
      expect((err as Error).message).toBe('The stored credential of provider @main could not be read');
      cipher.fail = false;
      await call(target({ provider: '@main' }));
      expect(seen[0]?.api_key).toBe(KEY);
    });
  });

  describe('cache', () => {
    it('serves a warm provider without a table read or a decryption', async () => {
      await call(target({ provider: '@main' }));
      const send = vi.spyOn(deps.repos.table.doc, 'send');
      const decrypts = cipher.decrypts;
      for (let i = 0; i < 5; i++) await call(target({ provider: '@main' }));
      expect(send).not.toHaveBeenCalled();
      expect(cipher.decrypts).toBe(decrypts);
      expect(seen.every((t) => t.api_key === KEY)).toBe(true);
    });

    it('reads again after the TTL, and at once after an admin change in this process', async () => {
      await call(target({ provider: '@main' }));
      const send = vi.spyOn(deps.repos.table.doc, 'send');
      clock.advance(deps.config.keyCacheTtlMs);
      await call(target({ provider: '@main' }));
      expect(send).toHaveBeenCalled();
      send.mockClear();
      await new IntegrationService(deps).update(admin, 'main', { key: 'sk-rotated-00000000000000000000' });
      send.mockClear();
      await call(target({ provider: '@main' }));
      expect(send).toHaveBeenCalled();
      expect(seen.at(-1)?.api_key).toBe('sk-rotated-00000000000000000000');
      await new IntegrationService(deps).update(admin, 'main', { key: KEY });
    });

    it('loads a cold provider once for concurrent requests, and remembers misses briefly', async () => {
      const send = vi.spyOn(deps.repos.table.doc, 'send');
      await Promise.all([1, 2, 3].map(() => call(target({ provider: '@main' }))));
      // The provider, then its integration: one load for three requests.
      expect(send).toHaveBeenCalledTimes(2);
      send.mockClear();
      await rejection(call(target({ provider: '@ghost' })));
      const missReads = send.mock.calls.length;
      await rejection(call(target({ provider: '@ghost' })));
      expect(send.mock.calls.length).toBe(missReads);
      clock.advance(2_000);
      await rejection(call(target({ provider: '@ghost' })));
      expect(send.mock.calls.length).toBeGreaterThan(missReads);
    });

    it('drops decrypted keys once their TTL has passed', async () => {
      const cache = new ManagedProviderCache(deps.repos.table, cipher, clock, { ttlMs: 1_000 });
      await cache.lookup(org, ws.id, 'provider', 'main');
      const decrypts = cipher.decrypts;
      await cache.lookup(org, ws.id, 'provider', 'main');
      expect(cipher.decrypts).toBe(decrypts);
      clock.advance(1_000);
      await cache.lookup(org, ws.id, 'provider', 'keyless');
      await cache.lookup(org, ws.id, 'provider', 'main');
      expect(cipher.decrypts).toBe(decrypts + 1);
    });
  });
});

describe('managedProviderId', () => {
  it('names the provider behind @slug, passes other values by, and refuses unknown slugs naming the field', async () => {
    const deps = await createTestDeps();
    const org = randomUUID();
    const ws = workspaceRecord(org, 'w');
    await deps.repos.workspaces.create(ws);
    const admin = principal(org, null);
    await new IntegrationService(deps).create(admin, { name: 'G', slug: 'g', ai_provider_id: 'groq' });
    await new ProviderService(deps).create(admin, { name: 'G', slug: 'fast', integration_id: 'g', workspace_id: ws.id });
    const caller = principal(org, ws.id);
    expect(await managedProviderId(deps, caller, '@fast', 'x-gw-provider')).toBe('groq');
    expect(await managedProviderId(deps, caller, 'openai', 'x-gw-provider')).toBeUndefined();
    const err = await rejection(managedProviderId(deps, caller, '@slow', 'x-gw-provider'));
    expect((err as ValidationError).param).toBe('x-gw-provider');
    expect(await rejection(managedProviderId(deps, admin, '@fast', 'x-gw-provider'))).toBeInstanceOf(ValidationError);
  });
});
