/**
 * The role-by-route matrix, generated from ADMIN_ROUTES at run time (so routes added by anyone are
 * in it): every admin route is called over HTTP by the owner key, an organisation admin key, a
 * workspace service key, the user keys of a workspace manager and of a workspace member, a JWT of
 * each role, and a key holding every scope but the route's own. An allowed call may still answer
 * 400 or 404 (the body is empty, the ids do not exist): allowed means "not 401/403"; denied means
 * 403 AB03. The expectation is the roles table (docs/design/spec.md#roles-and-keys), written out here independently of
 * policy/rbac.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES, PUBLIC_ADMIN_ROUTES } from '../../layers/core/src/admin/routes.ts';
import type { AdminRoute } from '../../layers/core/src/admin/route.ts';
import { newKeyRecord } from '../../layers/core/src/admin/api-keys/service.ts';
import { ORGANISATION_ONLY_SCOPES, SCOPES, WORKSPACE_ONLY_SCOPES, WORKSPACE_SCOPES, type Scope } from '../../layers/core/src/policy/scopes.ts';
import type { Role } from '../../layers/core/src/kernel/principal.ts';
import type { ApiKeyType } from '../../layers/core/src/store/entities.ts';
import { addUser } from '../support/identity.ts';
import { jwtEnv, startJwks } from '../support/jwks.ts';
import { ADMIN_KEY, startGantry } from '../support/gantry.ts';
import { timeoutFor } from '../support/until.ts';

type Credential = { header: 'x-gw-api-key' | 'authorization'; value: string };

interface Caller {
  name: string;
  role: Role;
  credential: Credential;
}

const READ = new Set(['read', 'list', 'view']);
const PROMPTS = /^(prompts|prompt_partials|prompt_collections|collections|labels)$/;

/**
 * The roles table: owners and admins manage the organisation and every workspace but send no
 * feedback and call no gateway (admin keys cannot); managers (and workspace service keys) manage
 * their workspace; members read it (not its API keys), call the gateway, send feedback, and write
 * prompts only when membersWritePrompts is on (default off).
 */
function expectedAllowed(role: Role, route: AdminRoute): boolean {
  const scope = route.scope;
  const resource = scope.slice(0, scope.lastIndexOf('.'));
  const action = scope.slice(scope.lastIndexOf('.') + 1);
  const orgRole = role === 'owner' || role === 'admin';
  if (route.roles && !route.roles.includes(role)) return false;
  if (ORGANISATION_ONLY_SCOPES.has(scope)) return orgRole;
  if (WORKSPACE_ONLY_SCOPES.has(scope)) return !orgRole;
  if (role !== 'member') return true;
  // docs/design/spec.md#admin-resources: every user may revoke their own MCP server connection.
  if (resource === 'mcp_connections') return true;
  if (resource === 'api_keys') return false;
  if (PROMPTS.test(resource)) return READ.has(action);
  return READ.has(action);
}

/** The route's path with every parameter filled in (ids that do not exist). */
function concrete(route: AdminRoute): string {
  return route.path.replace(/:([A-Za-z]+)(\{[^}]*\})?/g, (_m, name: string) =>
    name === 'workspaceId' ? 'no-such-workspace' : `no-such-${name.toLowerCase()}`,
  );
}

async function call(url: string, route: AdminRoute, credential: Credential): Promise<{ status: number; body: { errorCode?: string; message?: string } }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  headers[credential.header] = credential.header === 'authorization' ? `Bearer ${credential.value}` : credential.value;
  const res = await fetch(url + concrete(route), { method: route.method, headers, ...(route.method === 'GET' ? {} : { body: '{}' }) });
  const text = await res.text();
  let body: { errorCode?: string; message?: string } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // a non-JSON answer is judged by its status
  }
  return { status: res.status, body };
}

async function setUp(mode: 'direct' | 'lambda') {
  const jwks = await startJwks();
  const gw = await startGantry(mode, jwtEnv(jwks));
  const org = gw.boot.organisationId;
  const ws = gw.boot.workspaceId;
  const store = async (type: ApiKeyType, scopes: readonly string[], extra: { user_id?: string } = {}) => {
    const made = newKeyRecord(
      {
        organisation_id: org,
        workspace_id: type === 'organisation-service' ? null : ws,
        user_id: extra.user_id ?? null,
        type,
        name: `matrix ${type}`,
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
  const manager = await addUser(gw.deps, org, { workspaces: [{ id: ws, role: 'manager' }] });
  const member = await addUser(gw.deps, org, { workspaces: [{ id: ws, role: 'member' }] });
  const key = (value: string): Credential => ({ header: 'x-gw-api-key', value });
  const bearer = (value: string): Credential => ({ header: 'authorization', value });
  const jwt = (role: Role) =>
    jwks.sign({
      sub: `jwt-${role}`,
      email: `${role}@example.com`,
      role,
      scope: SCOPES.join(' '),
      ...(role === 'manager' || role === 'member' ? { workspace_id: 'default' } : {}),
    });
  const callers: Caller[] = [
    { name: 'owner key', role: 'owner', credential: key(ADMIN_KEY) },
    { name: 'organisation admin key', role: 'admin', credential: key(await store('organisation-service', SCOPES)) },
    { name: 'workspace service key', role: 'manager', credential: key(await store('workspace-service', WORKSPACE_SCOPES)) },
    { name: "manager's user key", role: 'manager', credential: key(await store('workspace-user', WORKSPACE_SCOPES, { user_id: manager.id })) },
    { name: "member's user key", role: 'member', credential: key(await store('workspace-user', WORKSPACE_SCOPES, { user_id: member.id })) },
    { name: 'owner JWT', role: 'owner', credential: bearer(await jwt('owner')) },
    { name: 'admin JWT', role: 'admin', credential: bearer(await jwt('admin')) },
    // A JWT in x-gw-api-key is recognised by its shape.
    { name: 'manager JWT', role: 'manager', credential: key(await jwt('manager')) },
    { name: 'member JWT', role: 'member', credential: bearer(await jwt('member')) },
  ];
  /** A key of the most powerful kind for the route, holding every scope but the route's (one per scope: routes share them). */
  const lacking = new Map<Scope, Promise<Credential>>();
  const withoutScope = (scope: Scope): Promise<Credential> => {
    const orgOnly = ORGANISATION_ONLY_SCOPES.has(scope);
    const type: ApiKeyType = orgOnly ? 'organisation-service' : 'workspace-service';
    let made = lacking.get(scope);
    if (!made)
      lacking.set(
        scope,
        (made = store(
          type,
          (orgOnly ? SCOPES : WORKSPACE_SCOPES).filter((s) => s !== scope),
        ).then(key)),
      );
    return made;
  };
  return { gw, jwks, callers, withoutScope };
}

interface Outcome {
  route: string;
  caller: string;
  expected: 'allow' | 'deny';
  status: number;
  errorCode: string | undefined;
  message: string | undefined;
}

/**
 * Limits from the work: every route called by every caller plus a key lacking its scope. On a busy
 * 2-core machine the full matrix ran past vitest's default 30 s; the work, not the machine, bounds it.
 */
const MATRIX_TIMEOUT_MS = timeoutFor(ADMIN_ROUTES.length * 11);
const ROUTES_TIMEOUT_MS = timeoutFor(ADMIN_ROUTES.length);

const judge = (o: Outcome): boolean => (o.expected === 'allow' ? o.status !== 401 && o.status !== 403 : o.status === 403 && o.errorCode === 'AB03');

describe('authorization matrix (direct mode, every route)', () => {
  let env: Awaited<ReturnType<typeof setUp>>;

  beforeAll(async () => {
    env = await setUp('direct');
  });
  afterAll(async () => {
    await env?.gw.close();
    await env?.jwks.close();
  });

  it('covers every admin route and every caller', () => {
    expect(ADMIN_ROUTES.length).toBeGreaterThan(50);
    expect(env.callers.map((c) => c.role).sort()).toEqual(['admin', 'admin', 'manager', 'manager', 'manager', 'member', 'member', 'owner', 'owner']);
  });

  it(
    'every role and key type gets exactly what the contract allows, on every route',
    async () => {
      const outcomes: Outcome[] = [];
      const byRoute = async (route: AdminRoute): Promise<Outcome[]> => {
        const label = `${route.method} ${route.path}`;
        const results = await Promise.all(
          env.callers.map(async (c) => {
            const reply = await call(env.gw.url, route, c.credential);
            return {
              route: label,
              caller: c.name,
              expected: expectedAllowed(c.role, route) ? 'allow' : 'deny',
              status: reply.status,
              errorCode: reply.body.errorCode,
              message: reply.body.message,
            } satisfies Outcome;
          }),
        );
        const missing = await call(env.gw.url, route, await env.withoutScope(route.scope));
        expect(missing.body.message, label).toContain(route.scope);
        return [
          ...results,
          {
            route: label,
            caller: `key without ${route.scope}`,
            expected: 'deny',
            status: missing.status,
            errorCode: missing.body.errorCode,
            message: missing.body.message,
          },
        ];
      };
      // A few routes at a time: fast, without flooding DynamoDB Local.
      for (let i = 0; i < ADMIN_ROUTES.length; i += 4) {
        for (const o of await Promise.all(ADMIN_ROUTES.slice(i, i + 4).map(byRoute))) outcomes.push(...o);
      }
      const wrong = outcomes.filter((o) => !judge(o));
      expect(wrong, JSON.stringify(wrong, null, 2)).toEqual([]);
      // The matrix really exercised both sides.
      expect(outcomes.filter((o) => o.expected === 'deny').length).toBeGreaterThan(ADMIN_ROUTES.length);
      expect(outcomes.filter((o) => o.expected === 'allow').length).toBeGreaterThan(ADMIN_ROUTES.length * 3);
    },
    MATRIX_TIMEOUT_MS,
  );

  it(
    'no credentials: 401 AB05 on every route',
    async () => {
      for (const route of ADMIN_ROUTES) {
        const res = await fetch(env.gw.url + concrete(route), {
          method: route.method,
          ...(route.method === 'GET' ? {} : { body: '{}', headers: { 'content-type': 'application/json' } }),
        });
        const body = (await res.json()) as { errorCode: string };
        expect([res.status, body.errorCode], `${route.method} ${route.path}`).toEqual([401, 'AB05']);
      }
    },
    ROUTES_TIMEOUT_MS,
  );

  it('the only admin route without an API key or JWT is the invite acceptance', () => {
    expect(PUBLIC_ADMIN_ROUTES.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/admin/users/invites/accept']);
  });
});

describe('authorization matrix (lambda mode, one route per resource)', () => {
  let env: Awaited<ReturnType<typeof setUp>>;

  beforeAll(async () => {
    env = await setUp('lambda');
  });
  afterAll(async () => {
    await env?.gw.close();
    await env?.jwks.close();
  });

  it(
    'the Lambda handlers enforce the same matrix',
    async () => {
      const seen = new Set<string>();
      const sample = ADMIN_ROUTES.filter((r) => {
        const k = `${r.scope.slice(0, r.scope.lastIndexOf('.'))}:${r.method === 'GET' ? 'read' : 'write'}`;
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      });
      const wrong: Outcome[] = [];
      for (const route of sample) {
        for (const c of env.callers) {
          const reply = await call(env.gw.url, route, c.credential);
          const o: Outcome = {
            route: `${route.method} ${route.path}`,
            caller: c.name,
            expected: expectedAllowed(c.role, route) ? 'allow' : 'deny',
            status: reply.status,
            errorCode: reply.body.errorCode,
            message: reply.body.message,
          };
          if (!judge(o)) wrong.push(o);
        }
      }
      expect(wrong, JSON.stringify(wrong, null, 2)).toEqual([]);
    },
    MATRIX_TIMEOUT_MS,
  );
});
