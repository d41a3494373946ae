/** Policy rules that the HTTP tests cannot reach without a JWT: who must name the workspace and organisation. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { PolicyService } from '../../../../layers/core/src/admin/policies/service.ts';
import { ensureBootstrap } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import { createTestDeps } from '../../../support/deps.ts';

const body = { conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }], type: 'requests' as const, unit: 'rpm' as const, value: 5 };

describe('policies created with a JWT', () => {
  let deps: CoreDeps;
  let jwt: Principal;

  beforeAll(async () => {
    deps = await createTestDeps();
    const boot = await ensureBootstrap(deps, 'gw_policies-jwt-owner-key-0123456789abcdef');
    jwt = {
      kind: 'jwt',
      keyId: 'jwt:alice',
      organisationId: boot.organisationId,
      workspaceId: null,
      userId: 'alice',
      email: 'alice@example.com',
      keyType: 'organisation-service',
      role: 'admin',
      owner: false,
      scopes: new Set(['policies.create']),
      defaults: null,
      limits: null,
    };
  });

  it('requires workspace_id and organisation_id', async () => {
    const err = await new PolicyService(deps).createRate(jwt, body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).problems.map((p) => p.path)).toEqual(['workspace_id', 'organisation_id']);
    const usage = await new PolicyService(deps).createUsage(jwt, { ...body, type: 'cost', credit_limit: 1, workspace_id: 'default' }).catch((e: unknown) => e);
    expect((usage as ValidationError).problems.map((p) => p.path)).toEqual(['organisation_id']);
  });

  it('accepts both, and refuses another organisation', async () => {
    const ok = await new PolicyService(deps).createRate(jwt, { ...body, workspace_id: 'default', organisation_id: jwt.organisationId });
    expect(ok.object).toBe('policy_rate_limits');
    const other = await new PolicyService(deps).createRate(jwt, { ...body, workspace_id: 'default', organisation_id: randomUUID() }).catch((e: unknown) => e);
    expect((other as { status: number }).status).toBe(403);
  });
});
