/**
 * The key lifecycle, run on a schedule (EventBridge Scheduler in AWS, an interval timer locally;
 * both call `runKeyLifecycle` with the deps' clock): expired keys become `expired`, due rotation
 * policies rotate their key (the new key is e-mailed), transitions that ended drop the previous
 * key, periodic usage resets start the key's usage afresh, and e-mails warn of upcoming rotations
 * and expiries. Each change is a conditional write on the key's `last_updated_at`, so an admin edit
 * in between wins and the key is looked at again on the next run.
 *
 * A run reads the due keys only: the index of store/api-key-index.ts orders keys by when this file
 * has something to do for them next (`keyDueAt`, which must say what `lifecycleOfKey` does). Keys
 * written before that index are given their entries by the organisation's backfill, which each run
 * continues for a while; the keys it reads are looked at as every key was before.
 */
import { runEvery } from '../../ports/local/schedule.ts';
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { generateApiKey, hashApiKey, maskApiKey } from '../../policy/api-key-secret.ts';
import { EXPIRY_WARNING_MS, rotationNoticeMs } from '../../store/api-key-index.ts';
import type { ApiKeyRecord } from '../../store/entities.ts';
import type { AuditRecord } from '../../store/audit.ts';
import { runWithAudit } from '../../store/audit-context.ts';
import { expiredMail, expiryWarningMail, rotatedMail, rotationUpcomingMail, sendKeyMail } from './alerts.ts';
import { addPeriod, iso, nextUsageReset } from './periods.ts';

/** Used when neither the rotate call nor the key's policy names a transition. */
export const DEFAULT_TRANSITION_MS = 3_600_000;
/** How long a run spends on an organisation's index backfill before leaving the rest to the next run. */
export const BACKFILL_BUDGET_MS = 120_000;
export { EXPIRY_WARNING_MS, rotationNoticeMs };

/** Who the lifecycle's changes are recorded as (`last_updated_by`, audit entries). */
export const LIFECYCLE_ACTOR = 'system:key-lifecycle';

export interface Rotation {
  record: ApiKeyRecord;
  key: string;
  transitionEnds: string;
}

/**
 * The key after a rotation: a new secret, the old hash accepted until the transition ends, the
 * schedule moved on (a periodic policy one period later, a one-off planned rotation done).
 */
export function rotatedRecord(current: ApiKeyRecord, nowMs: number, transitionMs: number, by: string | null, scheduledFor?: number): Rotation {
  const key = generateApiKey();
  const transitionEnds = iso(nowMs + transitionMs);
  const policy = current.rotation_policy;
  let nextRotation: string | null = null;
  if (policy?.rotation_period) {
    let next = addPeriod(scheduledFor ?? nowMs, policy.rotation_period);
    if (next <= nowMs) next = addPeriod(nowMs, policy.rotation_period);
    nextRotation = iso(next);
  }
  return {
    key,
    transitionEnds,
    record: {
      ...current,
      key_hash: hashApiKey(key),
      key_mask: maskApiKey(key),
      previous_key_hash: current.key_hash,
      previous_key_expires_at: transitionEnds,
      last_rotated_at: iso(nowMs),
      last_updated_at: iso(nowMs),
      last_updated_by: by,
      rotation_notice_for: null,
      ...(policy ? { rotation_policy: { ...policy, next_rotation_at: nextRotation } } : {}),
    },
  };
}

export interface LifecycleResult {
  expired: string[];
  rotated: string[];
  usageReset: string[];
  transitionsEnded: string[];
  rotationNotices: string[];
  expiryWarnings: string[];
  /** Keys skipped because they changed meanwhile or failed; they are looked at again next run. */
  skipped: string[];
}

function systemEntry(deps: CoreDeps, r: ApiKeyRecord, action: string, nowMs: number): AuditRecord {
  return {
    id: randomUUID(),
    organisation_id: r.organisation_id,
    timestamp: iso(nowMs),
    method: 'SYSTEM',
    uri: `key-lifecycle/${action}`,
    query_params: null,
    request_id: randomUUID(),
    request_body: null,
    user_id: null,
    user_type: 'system',
    api_key_id: null,
    email: null,
    role: null,
    workspace_id: r.workspace_id,
    resource_type: 'api_keys',
    resource_id: r.id,
    action,
    response_status_code: 200,
    outcome: 'success',
    client_ip: null,
    forwarded_for: null,
    user_agent: LIFECYCLE_ACTOR,
  };
}

/** Runs one change with its audit entry in the same transaction (when audit logs are on). */
function audited<T>(deps: CoreDeps, r: ApiKeyRecord, action: string, nowMs: number, fn: () => Promise<T>): Promise<T> {
  if (!deps.config.features.auditLogs) return fn();
  return runWithAudit({ record: systemEntry(deps, r, action, nowMs), committed: false }, fn);
}

async function organisationsOf(deps: CoreDeps): Promise<string[]> {
  const boot = await deps.repos.bootstrap.get();
  return boot ? [boot.organisation_id] : [];
}

/** One pass over the due keys of the deployment's organisations (each key looked at once). */
export async function runKeyLifecycle(deps: CoreDeps, organisationIds?: readonly string[], opts: { backfillBudgetMs?: number } = {}): Promise<LifecycleResult> {
  const result: LifecycleResult = { expired: [], rotated: [], usageReset: [], transitionsEnded: [], rotationNotices: [], expiryWarnings: [], skipped: [] };
  for (const orgId of organisationIds ?? (await organisationsOf(deps))) {
    const seen = new Set<string>();
    const look = async (keys: readonly ApiKeyRecord[]) => {
      for (const key of keys) {
        if (seen.has(key.id)) continue;
        seen.add(key.id);
        await lookAt(deps, key, result);
      }
    };
    for await (const keys of deps.repos.apiKeys.dueKeys(orgId, deps.clock.now())) await look(keys);
    if (!(await deps.repos.apiKeys.indexReady(orgId))) {
      await deps.repos.apiKeys.backfillIndex(orgId, {
        budgetMs: opts.backfillBudgetMs ?? BACKFILL_BUDGET_MS,
        nowIso: () => iso(deps.clock.now()),
        onKeys: look,
      });
    }
  }
  return result;
}

async function lookAt(deps: CoreDeps, key: ApiKeyRecord, result: LifecycleResult): Promise<void> {
  try {
    await lifecycleOfKey(deps, key, result);
  } catch (err) {
    result.skipped.push(key.id);
    deps.logger.warn('key lifecycle skipped a key', { keyId: key.id, error: err });
  }
}

async function lifecycleOfKey(deps: CoreDeps, key: ApiKeyRecord, result: LifecycleResult): Promise<void> {
  const now = deps.clock.now();
  const policy = key.rotation_policy;
  const due = policy?.next_rotation_at ? Date.parse(policy.next_rotation_at) : null;
  const expiresAt = key.expires_at ? Date.parse(key.expires_at) : null;

  // A due rotation is its own transaction; the other changes are looked at on the next run.
  if (key.status === 'active' && due !== null && due <= now && (expiresAt === null || expiresAt > now) && policy) {
    const rotation = rotatedRecord(key, now, policy.key_transition_period_ms, LIFECYCLE_ACTOR, due);
    await audited(deps, key, 'rotate', now, () => deps.repos.apiKeys.rotate(key, rotation.record));
    deps.keyAuth.invalidateKey(key.id);
    result.rotated.push(key.id);
    await sendKeyMail(deps, rotation.record, rotatedMail(rotation.record, rotation.transitionEnds, rotation.key));
    return;
  }

  let next: ApiKeyRecord = key;
  const actions: string[] = [];
  const after: Array<() => Promise<unknown>> = [];
  const done: Array<() => void> = [];
  let dropHash: string | undefined;

  if (key.status !== 'expired' && expiresAt !== null && expiresAt <= now) {
    next = { ...next, status: 'expired' };
    actions.push('expire');
    done.push(() => result.expired.push(key.id));
    after.push(() => sendKeyMail(deps, next, expiredMail(next)));
  } else if (key.status !== 'expired' && expiresAt !== null && expiresAt - now <= EXPIRY_WARNING_MS && key.expiry_warning_for !== key.expires_at) {
    // Sent before the write: a failed write sends it again next run rather than never.
    if (await sendKeyMail(deps, key, expiryWarningMail(key))) result.expiryWarnings.push(key.id);
    next = { ...next, expiry_warning_for: key.expires_at };
  }

  if (key.previous_key_hash && key.previous_key_expires_at && Date.parse(key.previous_key_expires_at) <= now) {
    dropHash = key.previous_key_hash;
    next = { ...next, previous_key_hash: null, previous_key_expires_at: null };
    done.push(() => result.transitionsEnded.push(key.id));
  }

  if (key.status === 'active' && due !== null && due - now <= rotationNoticeMs(key) && key.rotation_notice_for !== policy?.next_rotation_at) {
    if (await sendKeyMail(deps, key, rotationUpcomingMail(key, policy?.next_rotation_at ?? ''))) result.rotationNotices.push(key.id);
    next = { ...next, rotation_notice_for: policy?.next_rotation_at ?? null };
  }

  const resetAt = key.usage_limits?.next_usage_reset_at ? Date.parse(key.usage_limits.next_usage_reset_at) : null;
  if (resetAt !== null && resetAt <= now) {
    const following = nextUsageReset(now, key.usage_limits);
    next = {
      ...next,
      reset_usage: (key.reset_usage ?? 0) + 1,
      last_reset_at: iso(now),
      status: next.status === 'exhausted' ? 'active' : next.status,
      usage_limits: { ...key.usage_limits, next_usage_reset_at: following === null ? null : iso(following) },
    };
    actions.push('reset_usage');
    done.push(() => result.usageReset.push(key.id));
  }

  if (next === key) return;
  next = { ...next, last_updated_at: iso(now), last_updated_by: LIFECYCLE_ACTOR };
  const write = () => deps.repos.apiKeys.update(next, { previous: key, ifUnchangedSince: key.last_updated_at, ...(dropHash ? { dropHash } : {}) });
  if (actions.length > 0) await audited(deps, key, actions.join('+'), now, write);
  else await write();
  deps.keyAuth.invalidateKey(key.id);
  for (const d of done) d();
  for (const send of after) await send();
}

/** Local runtime: runs the lifecycle every `everyMs` (unref'd, so it never keeps the process up). */
export function startKeyLifecycleSchedule(deps: CoreDeps, everyMs: number): () => void {
  return runEvery(
    everyMs,
    () => runKeyLifecycle(deps),
    (err) => deps.logger.error('key lifecycle run failed', { error: err }),
  );
}
