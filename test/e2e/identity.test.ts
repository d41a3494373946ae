/**
 * Organisation, workspaces, members, users, invites, security settings and feedback over HTTP:
 * invites end to end (create -> outbox mail -> accept -> the user exists with its roles -> resend
 * -> delete), workspace listing by status, archive and delete rules, member filters, the settings
 * that narrow managers and members, and feedback (workspace keys yes, admin keys no).
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutboxMailer } from '../../layers/core/src/ports/local/outbox-mailer.ts';
import { securitySetting } from '../../layers/core/src/policy/security-settings.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { addUser } from '../support/identity.ts';

type Json = Record<string, unknown>;
interface Reply {
  status: number;
  json: Json;
}

const paths = (r: Reply) => ((r.json.errors as { path: string }[] | undefined) ?? []).map((e) => e.path);

describe.each(['direct', 'lambda'] as const)('identity and access (%s mode)', (mode) => {
  let gw: TestGantry;
  let outbox: OutboxMailer;

  const call = async (method: string, p: string, body?: unknown, key: string | null = ADMIN_KEY): Promise<Reply> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (key) headers['x-gw-api-key'] = key;
    const res = await fetch(gw.url + p, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const ok = async (method: string, p: string, body?: unknown, key?: string): Promise<Json> => {
    const r = await call(method, p, body, key);
    expect(r.status, `${method} ${p}: ${JSON.stringify(r.json)}`).toBe(200);
    return r.json;
  };
  const workspaceKey = async (workspace: string, scopes: string[]) =>
    (await ok('POST', '/v1/api-keys/workspace/service', { name: 'k', workspace_id: workspace, scopes })).key as string;

  beforeAll(async () => {
    gw = await startGantry(mode, { GW_OUTBOX_DIR: mkdtempSync(path.join(os.tmpdir(), 'gantry-identity-outbox-')) });
    outbox = gw.deps.mailer as OutboxMailer;
  });
  afterAll(async () => {
    await gw?.close();
  });

  describe('workspaces', () => {
    it('creates (slug generated or given), reads by id or slug, updates, and answers under /v1/admin/workspaces too', async () => {
      const created = await ok('POST', '/v1/workspaces', { name: 'Team A', description: 'a', defaults: { metadata: { team: 'a' } } });
      expect(created).toMatchObject({ object: 'workspace', name: 'Team A', status: 'active', defaults: { metadata: { team: 'a' } } });
      expect(created.slug).toBe('team-a');
      const given = await ok('POST', '/v1/admin/workspaces', { name: 'Team B', slug: `team-b-${mode}` });
      expect(given.slug).toBe(`team-b-${mode}`);
      for (const ref of [given.id, given.slug]) {
        expect(await ok('GET', `/v1/admin/workspaces/${String(ref)}`)).toMatchObject({ id: given.id, users: [] });
        expect(await ok('GET', `/v1/workspaces/${String(ref)}`)).toMatchObject({ id: given.id });
      }
      await ok('PUT', `/v1/workspaces/${String(given.slug)}`, { name: 'Team B2', rate_limits: [{ type: 'requests', unit: 'rpm', value: 10 }] });
      expect(await ok('GET', `/v1/workspaces/${String(given.id)}`)).toMatchObject({
        name: 'Team B2',
        rate_limits: [{ type: 'requests', unit: 'rpm', value: 10 }],
      });
      const dup = await call('POST', '/v1/workspaces', { name: 'x', slug: `team-b-${mode}` });
      expect([dup.status, dup.json.errorCode]).toEqual([409, 'AB07']);
      const bad = await call('POST', '/v1/workspaces', { name: '', slug: 'Bad Slug' });
      expect(paths(bad).sort()).toEqual(['name', 'slug']);
    });

    it('lists active workspaces by default; archived only when asked, and only for owners and admins', async () => {
      const ws = await ok('POST', '/v1/workspaces', { name: 'Old' });
      await ok('POST', `/v1/workspaces/${String(ws.id)}/archive`);
      expect((await call('POST', `/v1/workspaces/${String(ws.id)}/archive`)).status).toBe(409);
      const slugs = async (q: string, key?: string) => ((await ok('GET', `/v1/workspaces${q}`, undefined, key)).data as Json[]).map((w) => w.slug);
      expect(await slugs('')).not.toContain(ws.slug);
      expect(await slugs('?status=archived')).toEqual([ws.slug]);
      expect(await slugs('?status=active,archived')).toEqual(expect.arrayContaining([ws.slug, 'default']));
      expect(paths(await call('GET', '/v1/workspaces?status=deleted'))).toEqual(['status']);
      const manager = await workspaceKey('default', ['workspaces.list', 'workspaces.read']);
      expect(await slugs('', manager)).toEqual(['default']);
      const refused = await call('GET', '/v1/workspaces?status=active,archived', undefined, manager);
      expect([refused.status, refused.json.errorCode]).toEqual([403, 'AB03']);
      expect(String(refused.json.message)).toContain('archived');
      // A workspace principal cannot see other workspaces at all.
      expect((await call('GET', `/v1/workspaces/${String(ws.id)}`, undefined, manager)).status).toBe(404);
    });

    it('keys of an archived workspace stop working; restoring it brings them back', async () => {
      const ws = await ok('POST', '/v1/workspaces', { name: 'Paused' });
      const key = await workspaceKey(String(ws.slug), ['api_keys.list']);
      expect((await call('GET', '/v1/api-keys', undefined, key)).status).toBe(200);
      await ok('POST', `/v1/admin/workspaces/${String(ws.slug)}/archive`);
      const refused = await call('GET', '/v1/api-keys', undefined, key);
      expect([refused.status, refused.json.errorCode]).toEqual([403, 'AB03']);
      expect(String(refused.json.message)).toContain('archived');
      await ok('PUT', `/v1/workspaces/${String(ws.slug)}`, { status: 'active' });
      expect((await call('GET', '/v1/api-keys', undefined, key)).status).toBe(200);
    });

    it('delete is refused with 409 AB07 while API keys or configs belong to the workspace; then it goes', async () => {
      const ws = await ok('POST', '/v1/workspaces', { name: 'Doomed' });
      const keyId = (await ok('POST', '/v1/api-keys/workspace/service', { name: 'k', workspace_id: ws.id, scopes: ['completions.write'] })).id as string;
      const config = await ok('POST', '/v1/configs', { name: 'c', workspace_id: ws.id, config: { provider: 'openai' } });
      const blocked = await call('DELETE', `/v1/workspaces/${String(ws.id)}`);
      expect([blocked.status, blocked.json.errorCode]).toEqual([409, 'AB07']);
      expect(String(blocked.json.message)).toMatch(/1 API key\(s\) and 1 config\(s\)/);
      await ok('DELETE', `/v1/api-keys/${keyId}`);
      expect((await call('DELETE', `/v1/workspaces/${String(ws.id)}`)).json.message).toContain('config');
      await ok('DELETE', `/v1/configs/${String(config.id)}`);
      await ok('DELETE', `/v1/workspaces/${String(ws.id)}`);
      expect((await call('GET', `/v1/workspaces/${String(ws.id)}`)).status).toBe(404);
      expect((await call('DELETE', '/v1/workspaces/default')).status).toBe(409);
    });

    it('managers update their workspace but not its limits, settings or status', async () => {
      const manager = await workspaceKey('default', ['workspaces.update', 'workspaces.read']);
      expect((await call('PUT', '/v1/workspaces/default', { description: 'ours' }, manager)).status).toBe(200);
      for (const body of [{ rate_limits: [] }, { security_settings: { membersViewAnalytics: false } }, { status: 'archived' }]) {
        const r = await call('PUT', '/v1/workspaces/default', body, manager);
        expect([r.status, r.json.errorCode]).toEqual([403, 'AB03']);
      }
    });
  });

  describe('invites, users and members', () => {
    it('end to end: create -> mail -> accept -> user with its roles and key -> resend -> delete', async () => {
      const ws = await ok('POST', '/v1/workspaces', { name: 'Invitees' });
      const email = `dana-${mode}@example.com`;
      const created = await ok('POST', '/v1/admin/users/invites', {
        email: email.toUpperCase(),
        role: 'member',
        workspaces: [
          { id: ws.slug, role: 'manager' },
          { id: 'default', role: 'member' },
        ],
        workspace_api_key_details: { scopes: ['completions.write', 'workspaces.read'] },
      });
      expect(created).toMatchObject({ object: 'invite' });
      const link = String(created.invite_link);
      expect(link).toMatch(/\/v1\/admin\/users\/invites\/accept\?token=gwi_/);
      const token = new URL(link).searchParams.get('token') as string;

      const mail = (await outbox.list()).filter((m) => m.kind === 'invite' && m.to.includes(email));
      expect(mail).toHaveLength(1);
      expect(mail[0]?.text).toContain(link);
      // The token is stored hashed only.
      expect(JSON.stringify(await (await import('../support/records.ts')).scanTable(gw.deps.repos.table))).not.toContain(token);

      const invite = await ok('GET', `/v1/admin/users/invites/${String(created.id)}`);
      expect(invite).toMatchObject({ email, role: 'member', status: 'pending' });
      expect(((await ok('GET', '/v1/admin/users/invites?status=pending')).data as Json[]).map((i) => i.id)).toContain(created.id);
      const again = await call('POST', '/v1/admin/users/invites', { email, role: 'member', workspaces: [] });
      expect([again.status, again.json.errorCode]).toEqual([409, 'AB07']);

      // Resend: a new link, the old one stops working.
      const resent = await ok('POST', `/v1/admin/users/invites/${String(created.id)}/resend`);
      const newToken = new URL(String(resent.invite_link)).searchParams.get('token') as string;
      expect(newToken).not.toBe(token);
      expect((await outbox.list()).filter((m) => m.kind === 'invite' && m.to.includes(email))).toHaveLength(2);
      expect((await call('POST', '/v1/admin/users/invites/accept', { token }, null)).status).toBe(404);

      const accepted = await call('POST', `/v1/admin/users/invites/accept?token=${newToken}`, { first_name: 'Dana' }, null);
      expect(accepted.status, JSON.stringify(accepted.json)).toBe(200);
      const user = accepted.json as { id: string; api_keys: { id: string; key: string; workspace_id: string }[]; workspaces: Json[] };
      expect(user).toMatchObject({ object: 'user', email, role: 'member' });
      expect(user.workspaces).toEqual([
        { id: ws.id, role: 'manager' },
        { id: gw.boot.workspaceId, role: 'member' },
      ]);
      expect(user.api_keys).toHaveLength(2);
      expect((await call('POST', '/v1/admin/users/invites/accept', { token: newToken }, null)).status).toBe(409);
      expect((await ok('GET', `/v1/admin/users/invites/${String(created.id)}`)).status).toBe('accepted');

      const stored = await ok('GET', `/v1/admin/users/${user.id}`);
      expect(stored).toMatchObject({ object: 'user', email, first_name: 'Dana', role: 'member' });
      expect((stored.workspace_ids as string[]).sort()).toEqual([ws.id, gw.boot.workspaceId].sort());
      expect(((await ok('GET', `/v1/admin/users?email=${encodeURIComponent(email)}`)).data as Json[]).map((u) => u.id)).toEqual([user.id]);

      // The keys act with the user's role in each workspace.
      const inWs = user.api_keys.find((k) => k.workspace_id === ws.id)?.key as string;
      const inDefault = user.api_keys.find((k) => k.workspace_id === gw.boot.workspaceId)?.key as string;
      expect((await call('GET', `/v1/workspaces/${String(ws.id)}`, undefined, inWs)).status).toBe(200);
      expect((await call('PUT', `/v1/workspaces/${String(ws.id)}`, { description: 'x' }, inWs)).status).toBe(403);
      expect((await call('GET', '/v1/workspaces/default', undefined, inDefault)).status).toBe(200);

      // Members of the workspace, filtered by role and e-mail.
      const members = await ok('GET', `/v1/admin/workspaces/${String(ws.id)}/users?role=manager&email=dana`);
      expect(members.data).toEqual([expect.objectContaining({ object: 'workspace-user', id: user.id, role: 'manager', org_role: 'member', email })]);
      expect((await ok('GET', `/v1/admin/workspaces/${String(ws.id)}/users?role=member`)).data).toEqual([]);

      // Demoting the member: its key loses the manager's powers at once.
      await ok('PUT', `/v1/admin/workspaces/${String(ws.id)}/users/${user.id}`, { role: 'member' });
      expect((await ok('GET', `/v1/workspaces/${String(ws.id)}/users/${user.id}`)).role).toBe('member');
      // Removing the membership: the user's key in that workspace stops working.
      await ok('DELETE', `/v1/admin/workspaces/${String(ws.id)}/users/${user.id}`);
      const gone = await call('GET', `/v1/workspaces/${String(ws.id)}`, undefined, inWs);
      expect(gone.status).toBe(401);
      expect(String(gone.json.message)).toContain('no longer a member');

      // Removing the user removes the rest.
      await ok('DELETE', `/v1/admin/users/${user.id}`);
      expect((await call('GET', `/v1/admin/users/${user.id}`)).status).toBe(404);
      expect((await call('GET', '/v1/workspaces/default', undefined, inDefault)).status).toBe(401);

      // Delete an invite.
      const other = await ok('POST', '/v1/admin/users/invites', { email: `eve-${mode}@example.com`, role: 'admin', workspaces: [] });
      await ok('DELETE', `/v1/admin/users/invites/${String(other.id)}`);
      expect((await call('GET', `/v1/admin/users/invites/${String(other.id)}`)).status).toBe(404);
    });

    it('invites validate their fields, workspaces and scopes', async () => {
      const bad = await call('POST', '/v1/admin/users/invites', { email: 'nope', role: 'owner', workspaces: [{ id: 'default', role: 'boss' }] });
      expect(paths(bad).sort()).toEqual(['email', 'role', 'workspaces[0].role']);
      const missing = await call('POST', '/v1/admin/users/invites', {
        email: 'a@example.com',
        role: 'member',
        workspaces: [{ id: 'nowhere', role: 'member' }],
      });
      expect([missing.status, missing.json.errorCode]).toEqual([404, 'AB08']);
      const orgScope = await call('POST', '/v1/admin/users/invites', {
        email: 'b@example.com',
        role: 'member',
        workspaces: [{ id: 'default', role: 'member' }],
        workspace_api_key_details: { scopes: ['users.list'] },
      });
      expect(paths(orgScope)).toEqual(['workspace_api_key_details.scopes[0]']);
      expect(paths(await call('POST', '/v1/admin/users/invites/accept', {}, null))).toEqual(['token']);
    });

    it('users: roles change, only owners give the owner role; members are added by id with a role', async () => {
      const u = await addUser(gw.deps, gw.boot.organisationId, { email: `frank-${mode}@example.com` });
      const admin = (await ok('POST', '/v1/api-keys/organisation/service', { name: 'a', scopes: ['users.update', 'users.read'] })).key as string;
      const refused = await call('PUT', `/v1/admin/users/${u.id}`, { role: 'owner' }, admin);
      expect([refused.status, refused.json.errorCode]).toEqual([403, 'AB03']);
      await ok('PUT', `/v1/admin/users/${u.id}`, { role: 'admin' }, admin);
      await ok('PUT', `/v1/admin/users/${u.id}`, { role: 'owner' });
      expect((await ok('GET', `/v1/admin/users/${u.id}`)).role).toBe('owner');
      expect(paths(await call('PUT', `/v1/admin/users/${u.id}`, { role: 'king' }))).toEqual(['role']);

      const manager = await workspaceKey('default', ['workspace_users.create', 'workspace_users.list']);
      const v = await addUser(gw.deps, gw.boot.organisationId);
      await ok('POST', '/v1/workspaces/default/users', { users: [{ id: v.id, role: 'admin' }] }, manager);
      expect((await ok('GET', `/v1/admin/workspaces/default/users/${v.id}`)).role).toBe('manager');
      const twice = await call('POST', '/v1/workspaces/default/users', { users: [{ id: v.id }] });
      expect([twice.status, twice.json.errorCode]).toEqual([409, 'AB07']);
      const nobody = await call('POST', '/v1/workspaces/default/users', { users: [{ id: 'nobody' }] });
      expect([nobody.status, nobody.json.errorCode]).toEqual([404, 'AB08']);
      const elsewhere = await ok('POST', '/v1/workspaces', { name: 'Elsewhere' });
      expect((await call('POST', `/v1/workspaces/${String(elsewhere.id)}/users`, { users: [{ id: v.id }] }, manager)).status).toBe(404);
    });
  });

  describe('organisation security settings', () => {
    it('shows every setting with its default and changes them; workspaces override them', async () => {
      const org = await ok('GET', '/v1/organisation');
      expect(org.security_settings).toMatchObject({
        membersWritePrompts: false,
        membersViewAnalytics: true,
        managersWriteWsIntegrations: true,
        managersViewAllData: true,
      });
      expect(org.session_settings).toEqual({ max_session_ttl: null });
      expect(paths(await call('PUT', '/v1/organisation', { security_settings: { membersViewEverything: true } }))).toEqual(['security_settings']);

      const memberUser = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: gw.boot.workspaceId, role: 'member' }] });
      const memberKey = (
        await ok('POST', '/v1/api-keys/workspace/user', { name: 'm', workspace_id: 'default', user_id: memberUser.id, scopes: ['analytics.view'] })
      ).key as string;
      const principal = await gw.deps.keyAuth.authenticate(memberKey);
      expect(await securitySetting(gw.deps, principal, 'membersViewAllData')).toBe(true);

      await ok('PUT', '/v1/organisation', { security_settings: { membersViewAllData: false } });
      expect(await securitySetting(gw.deps, principal, 'membersViewAllData')).toBe(false);
      await ok('PUT', '/v1/workspaces/default', { security_settings: { membersViewAllData: true } });
      expect(await securitySetting(gw.deps, principal, 'membersViewAllData')).toBe(true);
      // Owners and admins always have full access.
      const owner = await gw.deps.keyAuth.authenticate(ADMIN_KEY);
      expect(await securitySetting(gw.deps, owner, 'membersViewAllData')).toBe(true);
      await ok('PUT', '/v1/workspaces/default', { security_settings: null });
      await ok('PUT', '/v1/organisation', { security_settings: { membersViewAllData: null } });
      expect(await securitySetting(gw.deps, principal, 'membersViewAllData')).toBe(true);
    });

    it('membersViewAnalytics and managersViewAnalytics close the analytics routes, with a message naming the setting', async () => {
      const probe = (key: string) => call('GET', '/v1/analytics/summary', undefined, key);
      const memberUser = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: gw.boot.workspaceId, role: 'member' }] });
      const memberKey = (
        await ok('POST', '/v1/api-keys/workspace/user', { name: 'm', workspace_id: 'default', user_id: memberUser.id, scopes: ['analytics.view'] })
      ).key as string;
      const managerKey = await workspaceKey('default', ['analytics.view']);
      expect([403, 401]).not.toContain((await probe(memberKey)).status);
      await ok('PUT', '/v1/workspaces/default', { security_settings: { membersViewAnalytics: false } });
      const closed = await probe(memberKey);
      expect([closed.status, closed.json.errorCode]).toEqual([403, 'AB03']);
      expect(String(closed.json.message)).toContain('membersViewAnalytics');
      expect([403, 401]).not.toContain((await probe(managerKey)).status);
      await ok('PUT', '/v1/organisation', { security_settings: { managersViewAnalytics: false } });
      expect(String((await probe(managerKey)).json.message)).toContain('managersViewAnalytics');
      expect([403, 401]).not.toContain((await probe(ADMIN_KEY)).status);
      await ok('PUT', '/v1/workspaces/default', { security_settings: { membersViewAnalytics: null } });
      await ok('PUT', '/v1/organisation', { security_settings: { managersViewAnalytics: null } });
      expect([403, 401]).not.toContain((await probe(memberKey)).status);
    });
  });

  describe('feedback', () => {
    it('workspace keys create and update feedback; admin keys cannot', async () => {
      const key = await workspaceKey('default', ['feedback.create', 'feedback.update']);
      const created = await ok('POST', '/v1/feedback', { trace_id: 'trace-1', value: 5, weight: 0.5, metadata: { user: 'u' } }, key);
      expect(created).toMatchObject({ status: 'success', feedback_ids: [expect.any(String)] });
      const id = (created.feedback_ids as string[])[0] as string;
      expect(await ok('PUT', `/v1/feedback/${id}`, { value: -3 }, key)).toMatchObject({ feedback_ids: [id] });
      const bad = await call('POST', '/v1/feedback', { trace_id: '', value: 11, weight: 2 }, key);
      expect(paths(bad).sort()).toEqual(['trace_id', 'value', 'weight']);
      expect((await call('PUT', '/v1/feedback/unknown', { value: 1 }, key)).status).toBe(404);
      const owner = await call('POST', '/v1/feedback', { trace_id: 't', value: 1 });
      expect([owner.status, owner.json.errorCode]).toEqual([403, 'AB03']);
      expect(String(owner.json.message)).toContain('admin keys cannot');
    });
  });
});

describe('feature flags', () => {
  let gw: TestGantry;
  beforeAll(async () => {
    gw = await startGantry('direct', { AUDIT_LOGS_ENABLED: 'OFF', SCIM_ENABLED: 'OFF' });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('AUDIT_LOGS_ENABLED=OFF: the audit log route answers 403 naming the flag, and nothing is recorded', async () => {
    const reply = await gw.admin('GET', '/v1/audit-logs?start_time=2020-01-01T00:00:00Z&end_time=2030-01-01T00:00:00Z');
    expect(reply.status).toBe(403);
    expect(reply.json).toMatchObject({ errorCode: 'AB03' });
    expect(String(reply.json.message)).toContain('AUDIT_LOGS_ENABLED=OFF');
    expect((await gw.admin('POST', '/v1/workspaces', { name: 'Quiet' })).status).toBe(200);
    const items = await (await import('../support/records.ts')).scanTable(gw.deps.repos.table);
    expect(items.filter((i) => String(i.pk).startsWith('AUDIT#'))).toEqual([]);
  });

  it('SCIM_ENABLED=OFF: the SCIM paths answer 403 naming the flag (with it on: 404, SCIM is not implemented)', async () => {
    const reply = await gw.admin('GET', '/v1/scim/workspaces');
    expect([reply.status, reply.json.errorCode]).toEqual([403, 'AB03']);
    expect(String(reply.json.message)).toContain('SCIM_ENABLED=OFF');
    const on = await startGantry('direct');
    try {
      const res = await fetch(`${on.url}/v1/scim/workspaces`);
      expect([res.status, ((await res.json()) as { errorCode: string }).errorCode]).toEqual([404, 'AB02']);
    } finally {
      await on.close();
    }
  });
});
