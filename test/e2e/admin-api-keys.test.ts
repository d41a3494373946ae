/**
 * The API key admin endpoints end to end over plain HTTP, against the local server directly and
 * through the real Lambda handlers: the three key types, listing, reading, deleting, and every
 * refusal with its status, admin error code and the field it names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { hashApiKey } from '../../layers/core/src/policy/api-key-secret.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { startLocalServer, type LocalServer } from '../../lambdas/local/server.ts';
import { createTestDeps } from '../support/deps.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { addUser } from '../support/identity.ts';
import { scanTable, workspaceRecord } from '../support/records.ts';

type Json = Record<string, unknown>;

interface Reply {
  status: number;
  body: Json;
}

interface Problem {
  path: string;
  message: string;
}

interface AdminErrorBody {
  object: string;
  errorCode: string;
  message: string;
  errors: Problem[];
}

interface KeyView {
  object: string;
  id: string;
  name: string;
  type: string;
  organisation_id: string;
  workspace_id: string | null;
  user_id: string | null;
  scopes: string[];
  status: string;
  key: string;
  expires_at: string | null;
  created_at: string;
}

interface ListBody {
  object: string;
  total: number;
  data: KeyView[];
}

/** One admin call over HTTP. `key: null` sends no key; a string body is sent as it is. */
async function call(baseUrl: string, method: string, path: string, opts: { key?: string | null; body?: unknown } = {}): Promise<Reply> {
  const key = opts.key === undefined ? ADMIN_KEY : opts.key;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['x-gw-api-key'] = key;
  const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const res = await fetch(baseUrl + path, { method, headers, body });
  return { status: res.status, body: (await res.json()) as Json };
}

function expectAdminError(reply: Reply, status: number, code: string): AdminErrorBody {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  const body = reply.body as unknown as AdminErrorBody;
  expect(body.object).toBe('error');
  expect(body.errorCode).toBe(code);
  expect(Array.isArray(body.errors)).toBe(true);
  return body;
}

/** AB01 whose problems name exactly `paths`, each also named in the message. */
function expectInvalid(reply: Reply, ...paths: string[]): AdminErrorBody {
  const body = expectAdminError(reply, 400, 'AB01');
  expect(body.errors.map((e) => e.path)).toEqual(paths);
  for (const p of paths) expect(body.message).toContain(p);
  return body;
}

const MASK = /^gw_.{4}\*{4}.{4}$/;

describe.each(['direct', 'lambda'] as const)('admin API keys (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let secondWorkspaceId: string;
  /** Every raw key this suite saw, to check none of them reaches the table. */
  const rawKeys: string[] = [ADMIN_KEY];

  const admin = (method: string, path: string, opts?: { key?: string | null; body?: unknown }) => call(gw.url, method, path, opts);

  /** Creates a key with the owner key (or `key`), expecting success; returns id and raw key. */
  async function createKey(kind: 'organisation/service' | 'workspace/service' | 'workspace/user', body: Json, key?: string) {
    const reply = await admin('POST', `/v1/api-keys/${kind}`, { body: { name: 'k', ...body }, ...(key ? { key } : {}) });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const created = reply.body as { id: string; key: string; object: string };
    rawKeys.push(created.key);
    return created;
  }

  /** A chat completion through the gateway with `key`; answers the status. */
  async function chat(key: string): Promise<number> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-provider',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    const second = workspaceRecord(gw.boot.organisationId, 'second');
    await gw.deps.repos.workspaces.create(second);
    secondWorkspaceId = second.id;
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  describe('create', () => {
    it('creates an organisation service key: answers id, key and object only, and the key works on the admin API', async () => {
      const reply = await admin('POST', '/v1/api-keys/organisation/service', { body: { name: 'ops', scopes: ['api_keys.list', 'api_keys.read'] } });
      expect(reply.status).toBe(200);
      expect(Object.keys(reply.body).sort()).toEqual(['id', 'key', 'object']);
      const created = reply.body as { id: string; key: string; object: string };
      rawKeys.push(created.key);
      expect(created.object).toBe('api-key');
      expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.key).toMatch(/^gw_[A-Za-z0-9_-]{40}$/);

      const got = await admin('GET', `/v1/api-keys/${created.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({
        object: 'api-key',
        id: created.id,
        name: 'ops',
        type: 'organisation-service',
        organisation_id: gw.boot.organisationId,
        workspace_id: null,
        user_id: null,
        scopes: ['api_keys.list', 'api_keys.read'],
        status: 'active',
        expires_at: null,
      });
      expect((await admin('GET', '/v1/api-keys', { key: created.key })).status).toBe(200);
      // Organisation keys never call the gateway.
      expect(await chat(created.key)).toBe(403);
    });

    it.each([
      ['slug', () => 'default'],
      ['id', () => gw.boot.workspaceId],
    ])('creates a workspace service key naming the workspace by %s', async (_by, workspace) => {
      const created = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: workspace() });
      const got = await admin('GET', `/v1/api-keys/${created.id}`);
      expect(got.body).toMatchObject({ type: 'workspace-service', workspace_id: gw.boot.workspaceId, user_id: null, scopes: ['completions.write'] });
    });

    it('creates a workspace user key for a user of the workspace', async () => {
      const user = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: gw.boot.workspaceId, role: 'member' }] });
      const created = await createKey('workspace/user', { scopes: ['completions.write'], workspace_id: 'default', user_id: user.id });
      const got = await admin('GET', `/v1/api-keys/${created.id}`);
      expect(got.body).toMatchObject({ type: 'workspace-user', workspace_id: gw.boot.workspaceId, user_id: user.id });
      expect(await chat(created.key)).toBe(200);
    });

    it('400 AB01 for a user key whose user is not a user of the workspace', async () => {
      const outsider = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: secondWorkspaceId, role: 'member' }] });
      for (const userId of [outsider.id, 'user-42']) {
        const reply = await admin('POST', '/v1/api-keys/workspace/user', {
          body: { name: 'k', scopes: ['completions.write'], workspace_id: 'default', user_id: userId },
        });
        expect(expectInvalid(reply, 'user_id').message).toContain('not a user of the workspace');
      }
    });

    it('the new key calls the gateway only when it holds completions.write', async () => {
      const withScope = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'default' });
      const without = await createKey('workspace/service', { scopes: ['api_keys.list'], workspace_id: 'default' });
      expect(await chat(withScope.key)).toBe(200);
      expect(await chat(without.key)).toBe(403);
    });

    it('stores an expiry and shows it', async () => {
      const expires = new Date(Date.now() + 86_400_000).toISOString();
      const created = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'default', expires_at: expires });
      const got = await admin('GET', `/v1/api-keys/${created.id}`);
      expect(got.body.expires_at).toBe(expires);
    });

    it('a workspace key with api_keys.create creates keys in its own workspace with scopes it holds', async () => {
      const manager = await createKey('workspace/service', { scopes: ['api_keys.create', 'completions.write'], workspace_id: 'default' });
      const child = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'default' }, manager.key);
      expect(await chat(child.key)).toBe(200);
    });
  });

  describe('list', () => {
    let listWorkspace: string;
    const ids: string[] = [];

    beforeAll(async () => {
      const ws = workspaceRecord(gw.boot.organisationId, `list-${mode}`);
      await gw.deps.repos.workspaces.create(ws);
      listWorkspace = ws.id;
      for (const name of ['a', 'b', 'c']) {
        ids.push((await createKey('workspace/service', { name, scopes: ['completions.write'], workspace_id: ws.slug })).id);
      }
    });

    it('pages through one workspace by slug: total, page boundaries, every key once', async () => {
      const pages: ListBody[] = [];
      for (const current of [0, 1, 2]) {
        const reply = await admin('GET', `/v1/api-keys?workspace_id=list-${mode}&page_size=2&current_page=${current}`);
        expect(reply.status).toBe(200);
        pages.push(reply.body as unknown as ListBody);
      }
      expect(pages.map((p) => p.object)).toEqual(['list', 'list', 'list']);
      expect(pages.map((p) => p.total)).toEqual([3, 3, 3]);
      expect(pages.map((p) => p.data.length)).toEqual([2, 1, 0]);
      const seen = pages.flatMap((p) => p.data.map((k) => k.id));
      expect([...seen].sort()).toEqual([...ids].sort());
      const created = pages.flatMap((p) => p.data.map((k) => k.created_at));
      expect(created).toEqual([...created].sort());
      for (const k of pages.flatMap((p) => p.data)) expect(k.workspace_id).toBe(listWorkspace);
    });

    it('filters by workspace id as well as slug', async () => {
      const reply = await admin('GET', `/v1/api-keys?workspace_id=${listWorkspace}`);
      const body = reply.body as unknown as ListBody;
      expect(body.total).toBe(3);
      expect(body.data.map((k) => k.id).sort()).toEqual([...ids].sort());
    });

    it('without a filter the owner sees every key of the organisation, the organisation keys too', async () => {
      const body = (await admin('GET', '/v1/api-keys?page_size=100')).body as unknown as ListBody;
      expect(body.total).toBe(body.data.length);
      const types = new Set(body.data.map((k) => k.type));
      expect(types).toEqual(new Set(['organisation-service', 'workspace-service', 'workspace-user']));
      for (const id of ids) expect(body.data.some((k) => k.id === id)).toBe(true);
    });

    it('defaults to the first page of 50', async () => {
      const body = (await admin('GET', `/v1/api-keys?workspace_id=${listWorkspace}`)).body as unknown as ListBody;
      expect(body.data).toHaveLength(3);
    });

    it('a workspace key lists only its own workspace, whatever it asks for', async () => {
      const lister = await createKey('workspace/service', { scopes: ['api_keys.list'], workspace_id: 'default' });
      const body = (await admin('GET', '/v1/api-keys?page_size=100', { key: lister.key })).body as unknown as ListBody;
      expect(body.data.length).toBeGreaterThan(0);
      for (const k of body.data) expect(k.workspace_id).toBe(gw.boot.workspaceId);
      expect(body.data.some((k) => k.id === lister.id)).toBe(true);

      const other = await admin('GET', `/v1/api-keys?workspace_id=list-${mode}`, { key: lister.key });
      const err = expectAdminError(other, 403, 'AB03');
      expect(err.message).toContain('own workspace');
    });
  });

  describe('get', () => {
    it('shows the key masked, never the key itself or its hash, in get and list', async () => {
      const created = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'default' });
      const got = await admin('GET', `/v1/api-keys/${created.id}`);
      const view = got.body as unknown as KeyView;
      expect(view.key).toMatch(MASK);
      expect(view.key.startsWith(created.key.slice(0, 7))).toBe(true);
      expect(view.key.endsWith(created.key.slice(-4))).toBe(true);
      const list = await admin('GET', '/v1/api-keys?page_size=100');
      for (const text of [JSON.stringify(got.body), JSON.stringify(list.body)]) {
        expect(text).not.toContain(created.key);
        expect(text).not.toContain(hashApiKey(created.key));
        expect(text).not.toContain(hashApiKey(ADMIN_KEY));
        expect(text).not.toContain('key_hash');
      }
      for (const k of (list.body as unknown as ListBody).data) expect(k.key).toMatch(MASK);
    });

    it('a workspace key cannot see keys of another workspace or the organisation: 404', async () => {
      const reader = await createKey('workspace/service', { scopes: ['api_keys.read'], workspace_id: 'default' });
      const elsewhere = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: secondWorkspaceId });
      const org = await createKey('organisation/service', { scopes: ['api_keys.read'] });
      for (const id of [elsewhere.id, org.id]) {
        const err = expectAdminError(await admin('GET', `/v1/api-keys/${id}`, { key: reader.key }), 404, 'AB08');
        expect(err.message).toContain(id);
      }
      expect((await admin('GET', `/v1/api-keys/${reader.id}`, { key: reader.key })).status).toBe(200);
    });
  });

  describe('delete', () => {
    it('answers {} and the deleted key stops authenticating at once', async () => {
      const victim = await createKey('workspace/service', { scopes: ['completions.write', 'api_keys.list'], workspace_id: 'default' });
      // Warm: the key is now in the authentication cache.
      expect((await admin('GET', '/v1/api-keys', { key: victim.key })).status).toBe(200);
      expect(await chat(victim.key)).toBe(200);

      const del = await admin('DELETE', `/v1/api-keys/${victim.id}`);
      expect(del.status).toBe(200);
      expect(del.body).toEqual({});

      const err = expectAdminError(await admin('GET', '/v1/api-keys', { key: victim.key }), 401, 'AB05');
      expect(err.message).toBe('Invalid API key');
      expect(await chat(victim.key)).toBe(401);
      expectAdminError(await admin('GET', `/v1/api-keys/${victim.id}`), 404, 'AB08');
      expectAdminError(await admin('DELETE', `/v1/api-keys/${victim.id}`), 404, 'AB08');
    });

    it('a workspace key deletes keys of its own workspace only', async () => {
      const deleter = await createKey('workspace/service', { scopes: ['api_keys.delete'], workspace_id: 'default' });
      const mine = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'default' });
      const elsewhere = await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'second' });
      expect((await admin('DELETE', `/v1/api-keys/${mine.id}`, { key: deleter.key })).status).toBe(200);
      const err = expectAdminError(await admin('DELETE', `/v1/api-keys/${elsewhere.id}`, { key: deleter.key }), 404, 'AB08');
      expect(err.message).toContain(elsewhere.id);
      expect(await chat(elsewhere.key)).toBe(200);
    });

    it('403 for deleting the owner key, which keeps working', async () => {
      const owner = await gw.deps.repos.apiKeys.getByHash(hashApiKey(ADMIN_KEY));
      expect(owner?.owner).toBe(true);
      const err = expectAdminError(await admin('DELETE', `/v1/api-keys/${owner?.id}`), 403, 'AB03');
      expect(err.message).toContain('owner key');
      expect((await admin('GET', '/v1/api-keys')).status).toBe(200);
    });
  });

  describe('authentication and authorization', () => {
    it('401 AB05 without a key, naming the header', async () => {
      const err = expectAdminError(await admin('GET', '/v1/api-keys', { key: null }), 401, 'AB05');
      expect(err.message).toContain('x-gw-api-key');
    });

    it('401 AB05 with a wrong key, on every route', async () => {
      for (const [method, path] of [
        ['GET', '/v1/api-keys'],
        ['GET', '/v1/api-keys/x'],
        ['DELETE', '/v1/api-keys/x'],
        ['POST', '/v1/api-keys/organisation/service'],
      ] as const) {
        const err = expectAdminError(
          await admin(method, path, { key: 'gw_not-a-real-key-000000000000', ...(method === 'POST' ? { body: {} } : {}) }),
          401,
          'AB05',
        );
        expect(err.message).toBe('Invalid API key');
      }
    });

    it('403 AB03 for a key without the route scope, naming the scope', async () => {
      const key = (await createKey('workspace/service', { scopes: ['completions.write'], workspace_id: 'default' })).key;
      for (const [method, path, scope] of [
        ['GET', '/v1/api-keys', 'api_keys.list'],
        ['GET', '/v1/api-keys/x', 'api_keys.read'],
        ['DELETE', '/v1/api-keys/x', 'api_keys.delete'],
        ['POST', '/v1/api-keys/workspace/service', 'api_keys.create'],
      ] as const) {
        const err = expectAdminError(await admin(method, path, { key, ...(method === 'POST' ? { body: {} } : {}) }), 403, 'AB03');
        expect(err.message).toContain(scope);
      }
    });

    it('403 AB03 for a workspace key creating an organisation key', async () => {
      const manager = await createKey('workspace/service', { scopes: ['api_keys.create', 'api_keys.list'], workspace_id: 'default' });
      const reply = await admin('POST', '/v1/api-keys/organisation/service', { key: manager.key, body: { name: 'x', scopes: ['api_keys.list'] } });
      expect(expectAdminError(reply, 403, 'AB03').message).toContain('only organisation owners and organisation admins may');
    });

    it('403 AB03 for a workspace key creating a key in another workspace', async () => {
      const manager = await createKey('workspace/service', { scopes: ['api_keys.create', 'completions.write'], workspace_id: 'default' });
      for (const workspace of ['second', secondWorkspaceId]) {
        const reply = await admin('POST', '/v1/api-keys/workspace/service', {
          key: manager.key,
          body: { name: 'x', scopes: ['completions.write'], workspace_id: workspace },
        });
        expect(expectAdminError(reply, 403, 'AB03').message).toContain('own workspace');
      }
    });

    it('403 AB03 for granting scopes the caller does not hold, naming them', async () => {
      const manager = await createKey('workspace/service', { scopes: ['api_keys.create', 'completions.write'], workspace_id: 'default' });
      const reply = await admin('POST', '/v1/api-keys/workspace/service', {
        key: manager.key,
        body: { name: 'x', scopes: ['completions.write', 'api_keys.delete', 'logs.view'], workspace_id: 'default' },
      });
      const err = expectAdminError(reply, 403, 'AB03');
      expect(err.message).toContain('api_keys.delete');
      expect(err.message).toContain('logs.view');
      expect(err.message).not.toContain('completions.write');
    });

    it('an organisation admin key (not the owner) may not grant scopes it lacks either', async () => {
      const orgAdmin = await createKey('organisation/service', { scopes: ['api_keys.create', 'api_keys.list'] });
      const reply = await admin('POST', '/v1/api-keys/organisation/service', { key: orgAdmin.key, body: { name: 'x', scopes: ['workspaces.create'] } });
      expect(expectAdminError(reply, 403, 'AB03').message).toContain('workspaces.create');
      const ok = await admin('POST', '/v1/api-keys/workspace/service', {
        key: orgAdmin.key,
        body: { name: 'x', scopes: ['api_keys.list'], workspace_id: 'second' },
      });
      expect(ok.status).toBe(200);
      rawKeys.push((ok.body as { key: string }).key);
    });
  });

  describe('validation', () => {
    const ws = (extra: Json) => ({ name: 'x', scopes: ['completions.write'], workspace_id: 'default', ...extra });

    it.each([
      ['missing name', 'workspace/service', { name: undefined }, ['name']],
      ['empty name', 'workspace/service', { name: '   ' }, ['name']],
      ['name over 255 characters', 'workspace/service', { name: 'n'.repeat(256) }, ['name']],
      ['name not a string', 'workspace/service', { name: 7 }, ['name']],
      ['empty scopes', 'workspace/service', { scopes: [] }, ['scopes']],
      ['missing scopes', 'workspace/service', { scopes: undefined }, ['scopes']],
      ['unknown scope', 'workspace/service', { scopes: ['completions.write', 'keys.steal'] }, ['scopes[1]']],
      ['organisation-only scope on a workspace key', 'workspace/service', { scopes: ['completions.write', 'workspaces.create'] }, ['scopes[1]']],
      ['organisation-only scope on a user key', 'workspace/user', { scopes: ['users.list'], user_id: 'u1' }, ['scopes[0]']],
      ['missing workspace_id on a workspace service key', 'workspace/service', { workspace_id: undefined }, ['workspace_id']],
      ['missing workspace_id on a workspace user key', 'workspace/user', { workspace_id: undefined, user_id: 'u1' }, ['workspace_id']],
      ['missing user_id on a user key created by a service key', 'workspace/user', {}, ['user_id']],
      ['user_id on a workspace service key', 'workspace/service', { user_id: 'u1' }, ['user_id']],
      ['workspace_id on an organisation key', 'organisation/service', {}, ['workspace_id']],
      ['user_id on an organisation key', 'organisation/service', { workspace_id: undefined, user_id: 'u1' }, ['user_id']],
      ['expires_at not a date', 'workspace/service', { expires_at: 'next tuesday' }, ['expires_at']],
      ['expires_at without a time zone', 'workspace/service', { expires_at: '2999-01-01T00:00:00' }, ['expires_at']],
      ['expires_at in the past', 'workspace/service', { expires_at: '2020-01-01T00:00:00Z' }, ['expires_at']],
      ['several problems at once', 'workspace/service', { name: '', scopes: ['nope'] }, ['name', 'scopes[0]']],
    ] as const)('400 AB01 for %s', async (_what, kind, patch, paths) => {
      const before = (await admin('GET', '/v1/api-keys?page_size=100')).body as unknown as ListBody;
      const reply = await admin('POST', `/v1/api-keys/${kind}`, { body: ws(patch) });
      expectInvalid(reply, ...paths);
      const after = (await admin('GET', '/v1/api-keys?page_size=100')).body as unknown as ListBody;
      expect(after.total).toBe(before.total);
    });

    it('400 AB01 for a body that is not valid JSON, naming the body', async () => {
      const reply = await admin('POST', '/v1/api-keys/workspace/service', { body: '{"name": "x", "scopes": [' });
      const err = expectInvalid(reply, 'body');
      expect(err.message).toContain('JSON');
    });

    it('400 AB01 for an empty body, naming every required field', async () => {
      expectInvalid(await admin('POST', '/v1/api-keys/organisation/service', { body: '' }), 'name', 'scopes');
    });

    it.each([
      ['current_page=-1', 'current_page'],
      ['current_page=abc', 'current_page'],
      ['current_page=1.5', 'current_page'],
      ['page_size=0', 'page_size'],
      ['page_size=101', 'page_size'],
      ['page_size=ten', 'page_size'],
    ])('400 AB01 for the list query %s', async (query, path) => {
      expectInvalid(await admin('GET', `/v1/api-keys?${query}`), path);
    });
  });

  describe('not found', () => {
    it('404 AB08 for an unknown key id, naming it', async () => {
      const err = expectAdminError(await admin('GET', '/v1/api-keys/00000000-0000-0000-0000-000000000000'), 404, 'AB08');
      expect(err.message).toContain('00000000-0000-0000-0000-000000000000');
      expectAdminError(await admin('DELETE', '/v1/api-keys/no-such-key'), 404, 'AB08');
    });

    it('404 AB08 for an unknown workspace, on create and on list', async () => {
      const create = await admin('POST', '/v1/api-keys/workspace/service', { body: { name: 'x', scopes: ['completions.write'], workspace_id: 'nowhere' } });
      expect(expectAdminError(create, 404, 'AB08').message).toContain('nowhere');
      const list = await admin('GET', '/v1/api-keys?workspace_id=nowhere');
      expect(expectAdminError(list, 404, 'AB08').message).toContain('nowhere');
    });
  });

  it('stores no raw key anywhere in the table, only hashes', async () => {
    const items = await scanTable(gw.deps.repos.table);
    const text = JSON.stringify(items);
    expect(rawKeys.length).toBeGreaterThan(20);
    for (const key of rawKeys) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(3));
    }
    // Each surviving key is findable by its hash.
    const hashes = new Set(items.map((i) => i.pk));
    expect(hashes.has(`KEYHASH#${hashApiKey(ADMIN_KEY)}`)).toBe(true);
  });
});

describe.each(['direct', 'lambda'] as const)('admin API keys with an expiry (%s mode)', (mode) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let server: LocalServer;
  let close: () => void;

  beforeAll(async () => {
    const deps = await createTestDeps({}, { clock });
    await ensureBootstrap(deps, ADMIN_KEY);
    server = await startLocalServer({ deps, mode });
    close = () => deps.upstream.close();
  });
  afterAll(async () => {
    await server?.close();
    close?.();
  });

  it('a key stops authenticating once its expires_at passes, even while cached', async () => {
    const expiresAt = new Date(clock.now() + 3_600_000).toISOString();
    const reply = await call(server.url, 'POST', '/v1/api-keys/workspace/service', {
      body: { name: 'temp', scopes: ['api_keys.list', 'completions.write'], workspace_id: 'default', expires_at: expiresAt },
    });
    expect(reply.status).toBe(200);
    const key = (reply.body as { key: string }).key;
    expect((await call(server.url, 'GET', '/v1/api-keys', { key })).status).toBe(200);

    clock.advance(3_600_000 - 1);
    expect((await call(server.url, 'GET', '/v1/api-keys', { key })).status).toBe(200);

    clock.advance(1);
    const err = expectAdminError(await call(server.url, 'GET', '/v1/api-keys', { key }), 401, 'AB05');
    expect(err.message).toContain('expired');
    const gateway = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(gateway.status).toBe(401);
    expect(((await gateway.json()) as { error: { message: string } }).error.message).toContain('expired');
  });

  it('"in the past" is judged by the service clock', async () => {
    const past = new Date(clock.now() - 1).toISOString();
    const reply = await call(server.url, 'POST', '/v1/api-keys/workspace/service', {
      body: { name: 'temp', scopes: ['completions.write'], workspace_id: 'default', expires_at: past },
    });
    expectInvalid(reply, 'expires_at');
    const now = new Date(clock.now()).toISOString();
    expectInvalid(
      await call(server.url, 'POST', '/v1/api-keys/workspace/service', {
        body: { name: 'temp', scopes: ['completions.write'], workspace_id: 'default', expires_at: now },
      }),
      'expires_at',
    );
  });
});
