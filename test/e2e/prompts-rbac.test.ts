/**
 * The prompt security settings (docs/design/spec.md#security-settings) over HTTP, for every role and every prompt resource
 * (prompts, partials, collections, labels): membersWritePrompts off by default, the three others on;
 * each switched at the organisation and overridden by the workspace; owners and admins unaffected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import type { Role } from '../../layers/core/src/kernel/principal.ts';
import { SCOPES, WORKSPACE_SCOPES } from '../../layers/core/src/policy/scopes.ts';
import type { ApiKeyType } from '../../layers/core/src/store/entities.ts';
import { addUser } from '../support/identity.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';

type Json = Record<string, unknown>;

interface Resource {
  list: string;
  create: (n: number) => Json;
}

describe.each(['direct', 'lambda'] as const)('prompt security settings (%s mode)', (mode) => {
  let gw: TestGantry;
  const keys = {} as Record<Role | 'service', string>;
  let resources: Resource[];
  let counter = 0;

  const store = async (type: ApiKeyType, scopes: readonly string[], userId: string | null = null) => {
    const made = newKeyRecord(
      {
        organisation_id: gw.boot.organisationId,
        workspace_id: type === 'organisation-service' ? null : gw.boot.workspaceId,
        user_id: userId,
        type,
        name: `rbac ${type}`,
        description: null,
        scopes: [...scopes],
        expires_at: null,
        owner: false,
        created_by: null,
      },
      Date.now(),
    );
    await gw.deps.repos.apiKeys.create(made.record);
    return made.key;
  };

  /** For each resource: [read status, write status] the caller gets. */
  const statuses = async (who: keyof typeof keys): Promise<[number, number][]> => {
    const out: [number, number][] = [];
    for (const r of resources) {
      const read = await gw.admin('GET', r.list, undefined, keys[who]);
      const write = await gw.admin('POST', r.list, r.create((counter += 1)), keys[who]);
      for (const res of [read, write]) if (res.status !== 200) expect(res.json.errorCode, JSON.stringify(res.json)).toBe('AB03');
      out.push([read.status, write.status]);
    }
    return out;
  };
  const all = (read: number, write: number): [number, number][] => resources.map(() => [read, write]);
  const settings = async (path: string, values: Json | null) => {
    expect((await gw.admin('PUT', path, { security_settings: values })).status).toBe(200);
  };

  beforeAll(async () => {
    gw = await startGantry(mode);
    const ws = gw.boot.workspaceId;
    const manager = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: ws, role: 'manager' }] });
    const member = await addUser(gw.deps, gw.boot.organisationId, { workspaces: [{ id: ws, role: 'member' }] });
    keys.owner = ADMIN_KEY;
    keys.admin = await store('organisation-service', SCOPES);
    keys.service = await store('workspace-service', WORKSPACE_SCOPES);
    keys.manager = await store('workspace-user', WORKSPACE_SCOPES, manager.id);
    keys.member = await store('workspace-user', WORKSPACE_SCOPES, member.id);
    const collection = await gw.admin('POST', '/v1/collections', { name: 'RBAC', workspace_id: 'default' });
    resources = [
      { list: '/v1/prompts', create: (n) => ({ name: `p${n}`, collection_id: collection.json.id, string: 'Hi {{x}}', parameters: {} }) },
      { list: '/v1/prompts/partials', create: (n) => ({ name: `part${n}`, string: 'Be brief.', workspace_id: 'default' }) },
      { list: '/v1/collections', create: (n) => ({ name: `c${n}`, workspace_id: 'default' }) },
      { list: '/v1/labels', create: (n) => ({ name: `l${n}`, workspace_id: 'default' }) },
    ];
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('defaults: members read but do not write; managers and organisation roles do both', async () => {
    for (const who of ['owner', 'admin', 'service', 'manager'] as const) expect(await statuses(who), who).toEqual(all(200, 200));
    expect(await statuses('member')).toEqual(all(200, 403));
    const denied = await gw.admin('POST', '/v1/labels', { name: 'nope' }, keys.member);
    expect(String(denied.json.message)).toContain('membersWritePrompts is off');
  });

  it('membersWritePrompts on lets members write; a workspace override turns it off again', async () => {
    await settings('/v1/organisation', { membersWritePrompts: true });
    expect(await statuses('member')).toEqual(all(200, 200));
    await settings('/v1/workspaces/default', { membersWritePrompts: false });
    expect(await statuses('member')).toEqual(all(200, 403));
    await settings('/v1/workspaces/default', null);
    await settings('/v1/organisation', { membersWritePrompts: null });
  });

  it('view settings off hide every prompt resource from members and managers, never from owners and admins', async () => {
    await settings('/v1/organisation', { membersViewPrompts: false, managersViewPrompts: false });
    expect(await statuses('member')).toEqual(all(403, 403));
    expect(await statuses('manager')).toEqual(all(403, 200));
    for (const who of ['owner', 'admin'] as const) expect(await statuses(who), who).toEqual(all(200, 200));
    const hidden = await gw.admin('GET', '/v1/prompts', undefined, keys.manager);
    expect(String(hidden.json.message)).toContain('managersViewPrompts is off');
    // The workspace opens them again for its own people.
    await settings('/v1/workspaces/default', { membersViewPrompts: true, managersViewPrompts: true });
    expect(await statuses('member')).toEqual(all(200, 403));
    expect(await statuses('manager')).toEqual(all(200, 200));
    await settings('/v1/workspaces/default', null);
    await settings('/v1/organisation', { membersViewPrompts: null, managersViewPrompts: null });
  });

  it('managersWritePrompts off: managers and workspace service keys read only; admins still write', async () => {
    await settings('/v1/organisation', { managersWritePrompts: false });
    expect(await statuses('manager')).toEqual(all(200, 403));
    expect(await statuses('service')).toEqual(all(200, 403));
    expect(await statuses('admin')).toEqual(all(200, 200));
    await settings('/v1/workspaces/default', { managersWritePrompts: true });
    expect(await statuses('manager')).toEqual(all(200, 200));
    await settings('/v1/workspaces/default', null);
    await settings('/v1/organisation', { managersWritePrompts: null });
    expect(await statuses('manager')).toEqual(all(200, 200));
  });
});
