/**
 * The key lifecycle sweep reads the keys it has something to do for, not the organisation's: an
 * organisation with hundreds of keys and three due ones is swept by reading about those three. Each
 * kind of due work happens at its time and not a millisecond before, so the index (keyDueAt) agrees
 * with what the lifecycle does. Keys written before the index are still found (after the backfill).
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { runKeyLifecycle } from '../../../../../layers/core/src/admin/api-keys/lifecycle.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { keyDueAt } from '../../../../../layers/core/src/store/api-key-index.ts';
import type { ApiKeyRecord } from '../../../../../layers/core/src/store/entities.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { keyRecord } from '../../../../support/records.ts';
import { countReads, seedKeys } from '../../../../support/table-reads.ts';

const DAY = 86_400_000;
const clock = new ManualClock(Date.UTC(2026, 5, 1));
const iso = (ms: number) => new Date(ms).toISOString();
let deps: CoreDeps;
let org: string;
let ws: string;

beforeAll(async () => {
  deps = await createTestDeps({}, { clock });
  ({ organisationId: org, workspaceId: ws } = await ensureBootstrap(deps));
});

const key = (fields: Partial<ApiKeyRecord> = {}, orgId = org): ApiKeyRecord => ({
  ...keyRecord({ organisation_id: orgId, workspace_id: ws }, clock.now()).record,
  alert_emails: ['keys@example.com'],
  ...fields,
});

/** Keys with work far ahead (expiry, rotation, reset in weeks) or none: a sweep today has nothing to do for them. */
function unrelated(n: number, orgId = org): ApiKeyRecord[] {
  const later = (d: number) => iso(clock.now() + d * DAY);
  return Array.from({ length: n }, (_, i) =>
    i % 3 === 0
      ? key({ expires_at: later(60 + (i % 30)) }, orgId)
      : i % 3 === 1
        ? key({ rotation_policy: { rotation_period: 'monthly', next_rotation_at: later(40), key_transition_period_ms: 3_600_000 } }, orgId)
        : key({}, orgId),
  );
}

describe('the key lifecycle sweep', () => {
  it('reads the due keys only, and does their work', async () => {
    await seedKeys(deps, unrelated(300));
    const now = clock.now();
    const expiring = key({ expires_at: iso(now + 1_000) });
    const rotating = key({ rotation_policy: { rotation_period: 'weekly', next_rotation_at: iso(now + 1_000), key_transition_period_ms: 1_800_000 } });
    const resetting = key({ usage_limits: { type: 'cost', credit_limit: 10, periodic_reset: 'weekly', next_usage_reset_at: iso(now + 1_000) } });
    for (const k of [expiring, rotating, resetting]) await deps.repos.apiKeys.create(k);
    // Everything due so far (the notices the new keys' creation made due) is done first.
    await runKeyLifecycle(deps);
    clock.advance(1_000);

    const { result, reads } = await countReads(deps.repos.table.doc, () => runKeyLifecycle(deps));
    expect(result.expired).toEqual([expiring.id]);
    expect(result.rotated).toEqual([rotating.id]);
    expect(result.usageReset).toEqual([resetting.id]);
    expect(result.skipped).toEqual([]);
    // The bootstrap marker, the due entries and the records of three keys; the old sweep read 304 keys.
    expect(reads.items).toBeLessThanOrEqual(2 * 3 + 4);
    expect((await deps.repos.apiKeys.getById(org, expiring.id))?.status).toBe('expired');

    // Nothing is due any more: a run reads next to nothing.
    const again = await countReads(deps.repos.table.doc, () => runKeyLifecycle(deps));
    expect(again.result.expired.length + again.result.rotated.length + again.result.usageReset.length).toBe(0);
    expect(again.reads.items).toBeLessThanOrEqual(2);
  });

  it('does each kind of due work at its time, not a millisecond before', async () => {
    type Result = Awaited<ReturnType<typeof runKeyLifecycle>>;
    const cases: [string, (now: number) => ApiKeyRecord, (r: Result) => string[]][] = [
      ['expiry warning', (now) => key({ expires_at: iso(now + 9 * DAY) }), (r) => r.expiryWarnings],
      ['expiry', (now) => key({ expires_at: iso(now + 9 * DAY), expiry_warning_for: iso(now + 9 * DAY) }), (r) => r.expired],
      [
        'rotation notice',
        (now) => key({ rotation_policy: { rotation_period: 'monthly', next_rotation_at: iso(now + 5 * DAY), key_transition_period_ms: 3_600_000 } }),
        (r) => r.rotationNotices,
      ],
      [
        'rotation',
        (now) =>
          key({
            rotation_policy: { rotation_period: 'weekly', next_rotation_at: iso(now + 5 * DAY), key_transition_period_ms: 3_600_000 },
            rotation_notice_for: iso(now + 5 * DAY),
          }),
        (r) => r.rotated,
      ],
      [
        'transition end',
        (now) => key({ previous_key_hash: randomUUID().replaceAll('-', ''), previous_key_expires_at: iso(now + 2 * DAY + 7) }),
        (r) => r.transitionsEnded,
      ],
      [
        'usage reset',
        (now) => key({ usage_limits: { type: 'tokens', credit_limit: 5, periodic_reset_days: 3, next_usage_reset_at: iso(now + DAY + 3) } }),
        (r) => r.usageReset,
      ],
    ];
    for (const [name, make, done] of cases) {
      const k = make(clock.now());
      await deps.repos.apiKeys.create(k);
      const due = keyDueAt(k) as number;
      expect(due, name).toBeGreaterThan(clock.now());
      clock.set(due - 1);
      expect(done(await runKeyLifecycle(deps)), name).not.toContain(k.id);
      clock.set(due);
      expect(done(await runKeyLifecycle(deps)), name).toContain(k.id);
    }
  });

  it('finds the keys of an organisation made before the index: all of them on the backfill run, the due ones after', async () => {
    const oldOrg = randomUUID();
    const now = clock.now();
    const overdue = key({ expires_at: iso(now - 1) }, oldOrg);
    const later = key({ expires_at: iso(now + 30 * DAY), expiry_warning_for: iso(now + 30 * DAY) }, oldOrg);
    await seedKeys(deps, [...unrelated(150, oldOrg), overdue, later], false);

    const first = await runKeyLifecycle(deps, [oldOrg], { backfillBudgetMs: 60_000 });
    expect(first.expired).toEqual([overdue.id]);
    expect(await deps.repos.apiKeys.indexReady(oldOrg)).toBe(true);

    clock.set(now + 30 * DAY);
    const { result, reads } = await countReads(deps.repos.table.doc, () => runKeyLifecycle(deps, [oldOrg]));
    expect(result.expired).toContain(later.id);
    // The 150 others expire in 60 days or more, or rotate in 40 (notice 3 days ahead): not due.
    expect(reads.items).toBeLessThanOrEqual(2 * 1 + 4);
  });
});
