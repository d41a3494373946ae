/**
 * Console sessions over real HTTP (both local modes, DynamoDB Local): sign-in exchanges a key for
 * an HttpOnly cookie, the cookie authenticates admin routes with CSRF on unsafe methods, the
 * organisation's max_session_ttl bounds it (ManualClock), sign-out and key deletion end it, and no
 * key material appears in any answer, cookie or audit entry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../layers/core/src/policy/api-key-secret.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';

type Json = Record<string, unknown>;

interface Reply {
  status: number;
  json: Json;
  text: string;
  cookies: string[];
}

/** Set-Cookie attributes as a browser reads them (names lower-cased). */
function cookieAttributes(setCookie: string): { name: string; value: string; attrs: Record<string, string | true> } {
  const [pair = '', ...rest] = setCookie.split(';').map((s) => s.trim());
  const eq = pair.indexOf('=');
  const attrs: Record<string, string | true> = {};
  for (const a of rest) {
    const i = a.indexOf('=');
    if (i < 0) attrs[a.toLowerCase()] = true;
    else attrs[a.slice(0, i).toLowerCase()] = a.slice(i + 1);
  }
  return { name: pair.slice(0, eq), value: pair.slice(eq + 1), attrs };
}

describe.each(['direct', 'lambda'] as const)('console sessions (%s mode)', (mode) => {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 9));
  let gw: TestGantry;

  const send = async (
    method: string,
    path: string,
    opts: { body?: unknown; cookie?: string; csrf?: string; key?: string; type?: string } = {},
  ): Promise<Reply> => {
    const headers: Record<string, string> = { 'content-type': opts.type ?? 'application/json' };
    if (opts.cookie) headers.cookie = `gw_console=${opts.cookie}`;
    if (opts.csrf) headers['x-gw-csrf'] = opts.csrf;
    if (opts.key) headers['x-gw-api-key'] = opts.key;
    const res = await fetch(gw.url + path, { method, headers, ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }) });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Json) : {}, text, cookies: res.headers.getSetCookie() };
  };
  const signIn = async (apiKey: string) => {
    const r = await send('POST', '/v1/console/session', { body: { api_key: apiKey } });
    expect(r.status, r.text).toBe(201);
    const cookie = cookieAttributes(r.cookies[0] ?? '');
    return { reply: r, cookie: cookie.value, csrf: r.json.csrf_token as string };
  };
  const workspaceKey = async (scopes: string[]) => {
    const r = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'console-ws', workspace_id: 'default', scopes });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    return r.json as { id: string; key: string };
  };

  beforeAll(async () => {
    gw = await startGantry(mode, {}, { clock });
  });
  afterAll(() => gw?.close());

  it('signs in with the admin key: an HttpOnly, Secure, SameSite=Strict opaque cookie and the principal, never the key', async () => {
    const { reply, cookie } = await signIn(ADMIN_KEY);
    expect(reply.cookies).toHaveLength(1);
    const parsed = cookieAttributes(reply.cookies[0] ?? '');
    expect(parsed.name).toBe('gw_console');
    expect(parsed.attrs).toMatchObject({ httponly: true, secure: true, samesite: 'Strict', path: '/', 'max-age': '28800' });
    expect(cookie).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const principal = reply.json.principal as Json;
    expect(principal).toMatchObject({
      kind: 'api_key',
      type: 'organisation-service',
      role: 'owner',
      workspace_id: null,
      organisation_id: gw.boot.organisationId,
    });
    expect(typeof principal.id).toBe('string');
    expect(reply.json.scopes).toEqual(expect.arrayContaining(['api_keys.create', 'api_keys.list', 'workspaces.list']));
    expect(reply.json.expires_at).toBe(new Date(clock.now() + 28_800_000).toISOString());
    expect(reply.json.csrf_token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    // No key material anywhere: not the key, not its hash, not in the cookie.
    for (const secret of [ADMIN_KEY, hashApiKey(ADMIN_KEY)]) {
      expect(reply.text).not.toContain(secret);
      expect(reply.cookies.join('\n')).not.toContain(secret);
    }
    expect(reply.text).not.toMatch(/gw_[A-Za-z0-9_-]{16,}/);
  });

  it('refuses a bad key (401 admin shape), a missing field (400 naming api_key) and a non-JSON body', async () => {
    const bad = await send('POST', '/v1/console/session', { body: { api_key: 'gw_not-a-real-key-000000000000000000' } });
    expect(bad.status).toBe(401);
    expect(bad.json).toMatchObject({ object: 'error', errorCode: 'AB05' });
    expect(bad.cookies).toEqual([]);
    const missing = await send('POST', '/v1/console/session', { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.text).toContain('api_key');
    const unknown = await send('POST', '/v1/console/session', { body: { api_key: ADMIN_KEY, password: 'x' } });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('password');
    const form = await send('POST', '/v1/console/session', { body: { api_key: ADMIN_KEY }, type: 'text/plain' });
    expect(form.status).toBe(400);
    expect(form.text).toContain('content-type');
    expect(form.cookies).toEqual([]);
  });

  it('the cookie authenticates admin routes; unsafe methods need x-gw-csrf; a key header wins over the cookie', async () => {
    const { cookie, csrf } = await signIn(ADMIN_KEY);
    expect((await send('GET', '/v1/api-keys', { cookie })).status).toBe(200);
    const body = { name: 'made-in-console', workspace_id: 'default', scopes: ['completions.write'] };
    const noCsrf = await send('POST', '/v1/api-keys/workspace/service', { cookie, body });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.text).toContain('x-gw-csrf');
    const wrongCsrf = await send('POST', '/v1/api-keys/workspace/service', { cookie, body, csrf: 'x'.repeat(43) });
    expect(wrongCsrf.status).toBe(403);
    const made = await send('POST', '/v1/api-keys/workspace/service', { cookie, body, csrf });
    expect(made.status, made.text).toBe(200);
    // The same session's GET answers the same principal and token, and sets no new cookie.
    const again = await send('GET', '/v1/console/session', { cookie });
    expect(again.status).toBe(200);
    expect(again.json.csrf_token).toBe(csrf);
    expect(again.cookies).toEqual([]);
    // A narrower key sent with the owner's cookie acts as the key (no CSRF needed, and its scopes only).
    const narrow = await workspaceKey(['completions.write']);
    const asKey = await send('POST', '/v1/api-keys/workspace/service', { cookie, body, key: narrow.key });
    expect(asKey.status).toBe(403);
    expect(asKey.text).not.toContain('x-gw-csrf');
  });

  it('a workspace key signs in with its own scopes and role; the server keeps enforcing them', async () => {
    const ws = await workspaceKey(['api_keys.list']);
    const { reply, cookie, csrf } = await signIn(ws.key);
    expect(reply.json.principal).toMatchObject({ id: ws.id, name: 'console-ws', role: 'manager', type: 'workspace-service' });
    expect(reply.json.scopes).toEqual(['api_keys.list']);
    expect((await send('GET', '/v1/api-keys', { cookie })).status).toBe(200);
    const denied = await send('POST', '/v1/api-keys/workspace/service', { cookie, csrf, body: { name: 'x', workspace_id: 'default', scopes: [] } });
    expect(denied.status).toBe(403);
  });

  it('sign-out needs the CSRF token, revokes the session on the server and clears the cookie', async () => {
    const { cookie, csrf } = await signIn(ADMIN_KEY);
    expect((await send('DELETE', '/v1/console/session', { cookie })).status).toBe(403);
    const out = await send('DELETE', '/v1/console/session', { cookie, csrf });
    expect(out.status).toBe(204);
    expect(cookieAttributes(out.cookies[0] ?? '')).toMatchObject({ name: 'gw_console', value: '', attrs: { 'max-age': '0' } });
    // A copy of the old cookie no longer works anywhere.
    expect((await send('GET', '/v1/console/session', { cookie })).status).toBe(401);
    expect((await send('GET', '/v1/api-keys', { cookie })).status).toBe(401);
    // Signing out again (or without a cookie) just clears the cookie.
    expect((await send('DELETE', '/v1/console/session', { cookie })).status).toBe(204);
    expect((await send('GET', '/v1/console/session')).status).toBe(401);
  });

  it('deleting the key that signed in ends its sessions', async () => {
    const ws = await workspaceKey(['api_keys.list']);
    const { cookie } = await signIn(ws.key);
    expect((await send('GET', '/v1/api-keys', { cookie })).status).toBe(200);
    expect((await gw.admin('DELETE', `/v1/api-keys/${ws.id}`)).status).toBe(200);
    const after = await send('GET', '/v1/api-keys', { cookie });
    expect(after.status).toBe(401);
    expect(after.text).toContain('sign in again');
    expect((await send('GET', '/v1/console/session', { cookie })).status).toBe(401);
  });

  it("expires at the organisation's max_session_ttl when it is shorter than the configured TTL", async () => {
    const set = await gw.admin('PUT', '/v1/organisation', { session_settings: { max_session_ttl: 900 } });
    expect(set.status, JSON.stringify(set.json)).toBe(200);
    try {
      const { reply, cookie } = await signIn(ADMIN_KEY);
      expect(cookieAttributes(reply.cookies[0] ?? '').attrs['max-age']).toBe('900');
      expect(reply.json.expires_at).toBe(new Date(clock.now() + 900_000).toISOString());
      clock.advance(899_000);
      expect((await send('GET', '/v1/api-keys', { cookie })).status).toBe(200);
      clock.advance(1_000);
      const expired = await send('GET', '/v1/api-keys', { cookie });
      expect(expired.status).toBe(401);
      expect(expired.text).toContain('expired');
    } finally {
      await gw.admin('PUT', '/v1/organisation', { session_settings: { max_session_ttl: null } });
    }
  });

  it('sign-in and sign-out write audit entries without key material', async () => {
    const from = new Date(clock.now() - 1000).toISOString();
    const { cookie, csrf } = await signIn(ADMIN_KEY);
    await send('DELETE', '/v1/console/session', { cookie, csrf });
    const to = new Date(clock.now() + 1000).toISOString();
    const list = await gw.admin('GET', `/v1/audit-logs?start_time=${from}&end_time=${to}&page_size=100`);
    expect(list.status, JSON.stringify(list.json)).toBe(200);
    const entries = (list.json.data as Json[]).filter((e) => e.resource_type === 'console_sessions');
    expect(entries.map((e) => [e.action, e.response_status_code, e.user_type])).toEqual(
      expect.arrayContaining([
        ['create', 201, 'api_key'],
        ['delete', 204, 'api_key'],
      ]),
    );
    const text = JSON.stringify(entries);
    expect(text).not.toContain(ADMIN_KEY);
    expect(text).not.toContain(hashApiKey(ADMIN_KEY));
    expect(text).not.toContain(cookie);
  });
});
