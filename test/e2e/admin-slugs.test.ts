/**
 * Slugs can be chosen on every resource that has one (configs, workspaces, integrations, providers,
 * virtual keys): the chosen slug is kept and names the resource, a bad one is AB01 naming `slug`,
 * a taken one 409 AB07; unknown fields on a create are refused rather than dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';

type Json = Record<string, unknown>;

const KEY = 'sk-test-0123456789abcdefghijklmnopqrstuvwxyz';

interface SlugCase {
  resource: string;
  path: string;
  /** Where the created resource is read back by its slug. */
  read: (slug: string) => string;
  body: (slug: string) => Json;
}

const CASES: SlugCase[] = [
  {
    resource: 'configs',
    path: '/v1/configs',
    read: (s) => `/v1/configs/${s}`,
    body: (slug) => ({ name: 'Prod', slug, workspace_id: 'default', config: { provider: 'openai', api_key: KEY } }),
  },
  { resource: 'workspaces', path: '/v1/workspaces', read: (s) => `/v1/workspaces/${s}`, body: (slug) => ({ name: 'Team', slug }) },
  {
    resource: 'integrations',
    path: '/v1/integrations',
    read: (s) => `/v1/integrations/${s}`,
    body: (slug) => ({ name: 'OpenAI', slug, ai_provider_id: 'openai', key: KEY }),
  },
  {
    resource: 'providers',
    path: '/v1/providers',
    read: (s) => `/v1/providers/${s}?workspace_id=default`,
    body: (slug) => ({ name: 'Mine', slug, integration_id: 'base-integration', workspace_id: 'default' }),
  },
  {
    resource: 'virtual-keys',
    path: '/v1/virtual-keys',
    read: (s) => `/v1/virtual-keys/${s}?workspace_id=default`,
    body: (slug) => ({ name: 'Team key', slug, provider: 'openai', key: KEY, workspace_id: 'default' }),
  },
];

describe.each(['direct', 'lambda'] as const)('admin slugs and unknown fields (%s mode)', (mode) => {
  let gw: TestGantry;
  beforeAll(async () => {
    gw = await startGantry(mode);
    const base = await gw.admin('POST', '/v1/integrations', { name: 'Base', slug: 'base-integration', ai_provider_id: 'openai', key: KEY });
    expect(base.status, JSON.stringify(base.json)).toBe(200);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it.each(CASES)('$resource: a chosen slug is kept, validated and unique', async ({ path, read, body }) => {
    const slug = `chosen-${mode}`;
    const created = await gw.admin('POST', path, body(slug));
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    expect(created.json.slug).toBe(slug);
    const got = await gw.admin('GET', read(slug));
    expect(got.status, JSON.stringify(got.json)).toBe(200);
    expect(got.json.id).toBe(created.json.id);

    const again = await gw.admin('POST', path, body(slug));
    expect(again.status, JSON.stringify(again.json)).toBe(409);
    expect(again.json.errorCode).toBe('AB07');
    expect(String(again.json.message)).toContain(slug);

    const bad = await gw.admin('POST', path, body('no spaces!'));
    expect(bad.status).toBe(400);
    expect(bad.json.errorCode).toBe('AB01');
    expect((bad.json.errors as { path: string }[]).map((e) => e.path)).toEqual(['slug']);
  });

  it.each(CASES)('$resource: a generated slug is the readable name, suffixed only when taken', async ({ path, body }) => {
    const unslugged = (b: Json): Json => {
      const { slug: _slug, ...rest } = b;
      return { ...rest, name: `Readable ${mode}` };
    };
    const first = await gw.admin('POST', path, unslugged(body('')));
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    const base = path === '/v1/configs' ? `pc-readable-${mode}` : `readable-${mode}`;
    expect(first.json.slug).toBe(base);
    const second = await gw.admin('POST', path, unslugged(body('')));
    expect(second.status, JSON.stringify(second.json)).toBe(200);
    expect(String(second.json.slug)).toMatch(new RegExp(`^${base}-[0-9a-f]{6}$`));
  });

  it('refuses a key create with a mistyped field instead of making a key without it', async () => {
    const before = (await gw.admin('GET', '/v1/api-keys?workspace_id=default')).json.total as number;
    const r = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'typo',
      workspace_id: 'default',
      scopes: ['completions.write'],
      expire_at: '2031-01-01T00:00:00Z',
    });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ errorCode: 'AB01', message: 'unknown field expire_at; did you mean expires_at?', errors: [{ path: '' }] });
    const limit = await gw.admin('POST', '/v1/api-keys/workspace/service', {
      name: 'typo',
      workspace_id: 'default',
      scopes: ['completions.write'],
      rate_limit: [],
    });
    expect(limit.json.message).toBe('unknown field rate_limit; did you mean rate_limits?');
    expect((await gw.admin('GET', '/v1/api-keys?workspace_id=default')).json.total).toBe(before);
  });

  it('refuses unknown fields on a config create and a workspace update the same way', async () => {
    const config = await gw.admin('POST', '/v1/configs', { name: 'x', workspace_id: 'default', config: { provider: 'openai' }, is_defualt: true });
    expect(config.json).toMatchObject({ errorCode: 'AB01', message: 'unknown field is_defualt; did you mean is_default?' });
    const ws = await gw.admin('PUT', '/v1/workspaces/default', { descripton: 'x' });
    expect(ws.json).toMatchObject({ errorCode: 'AB01', message: 'unknown field descripton; did you mean description?' });
  });
});
