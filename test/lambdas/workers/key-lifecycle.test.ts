/** The key lifecycle worker's Lambda entry: a scheduled invocation runs the lifecycle on the deps. */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import { createKeyLifecycleHandler } from '../../../lambdas/workers/key-lifecycle/handler.ts';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { ManualClock } from '../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../support/deps.ts';
import { ADMIN_KEY } from '../../support/gantry.ts';
import { keyRecord } from '../../support/records.ts';

const clock = new ManualClock(Date.UTC(2026, 5, 1));
let deps: CoreDeps;
let org: string;
let ws: string;

beforeAll(async () => {
  deps = await createTestDeps({}, { clock });
  ({ organisationId: org, workspaceId: ws } = await ensureBootstrap(deps, ADMIN_KEY));
});

describe('key lifecycle handler', () => {
  it('expires keys whose expiry passed, as an EventBridge Scheduler invocation', async () => {
    const made = keyRecord(
      { organisation_id: org, workspace_id: ws, type: 'workspace-service', expires_at: new Date(clock.now() + 1000).toISOString() },
      clock.now(),
    );
    await deps.repos.apiKeys.create(made.record);
    clock.advance(1000);
    const handler = createKeyLifecycleHandler(() => Promise.resolve(deps));
    const event = { 'detail-type': 'Scheduled Event', source: 'aws.scheduler', time: new Date(clock.now()).toISOString() };
    const result = await handler(event, {} as Context);
    expect(result.expired).toEqual([made.record.id]);
    expect((await deps.repos.apiKeys.getById(org, made.record.id))?.status).toBe('expired');
    // Running again changes nothing.
    expect((await handler(event, {} as Context)).expired).toEqual([]);
  });
});
