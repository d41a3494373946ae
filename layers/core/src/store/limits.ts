/**
 * Rate limits and usage limits policies, and their counters, in the single table.
 *
 * - Policies live under their organisation (ORG#, RLPOLICY#id / ULPOLICY#id) and are listed per
 *   workspace through gsi1 (WS#<ws>#POLICIES, RL#/UL#<created>#<id>), one Query for both kinds;
 *   organisation-wide rate limits policies (no workspace) under ORG#<org>#POLICIES.
 * - Usage limits policies that reset periodically also have an entry in the ULRESETS partition,
 *   written in the same transaction, which the reset schedule reads.
 * - Rate counters: one item per policy, group and window (RLC#...), deleted by TTL after the window.
 * - Budget counters: one item per policy, period and group (ULC#<policy>#<period>, E#<entity>),
 *   listed as the policy's entities.
 */
import { GetCommand, UpdateCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { NotFoundError } from '../http/errors.ts';
import { Entity, type Item } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';
import { queryAll } from './paginate.ts';

/** The units of rate limits policies (docs/design/spec.md#admin-resources). */
export const RATE_UNITS = ['rpm', 'rph', 'rpd', 'rpw'] as const;
export type RateUnit = (typeof RATE_UNITS)[number];
/** API keys' own rate limits may also count per second. */
export type WindowUnit = RateUnit | 'rps';
export type PeriodicReset = 'weekly' | 'monthly';

/** A policy applies when its conditions match the request (`key` is a condition key, `value` its value). */
export interface PolicyCondition {
  key: string;
  value: string;
}

/** A policy counts separately per value of each of these keys. */
export interface PolicyGroupBy {
  key: string;
}

export type PolicyStatus = 'active' | 'archived';
export type RateLimitType = 'requests' | 'tokens';
/** `exact`: one counter update per request; `approximate`: per-instance leases (policy/limits/leases.ts). */
export type RateLimitMode = 'exact' | 'approximate';
export type UsageLimitType = 'cost' | 'tokens';

/** What both kinds of policy have, apart from their workspace. */
export interface PolicyBase {
  id: string;
  name: string | null;
  organisation_id: string;
  conditions: PolicyCondition[];
  group_by: PolicyGroupBy[];
  status: PolicyStatus;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export interface RateLimitPolicyRecord extends PolicyBase {
  /** Null: the policy applies to every workspace of the organisation. */
  workspace_id: string | null;
  type: RateLimitType;
  unit: RateUnit;
  value: number;
  /** Absent on policies saved before the mode existed: exact. */
  mode?: RateLimitMode;
  /** Approximate mode only: the units a lease takes; null for the default. */
  lease_size?: number | null;
}

export interface UsageLimitPolicyRecord extends PolicyBase {
  workspace_id: string;
  type: UsageLimitType;
  /** Dollars for `cost`, tokens for `tokens`. */
  credit_limit: number;
  alert_threshold: number | null;
  periodic_reset: PeriodicReset | null;
  periodic_reset_days: number | null;
  /** When the current period ends (maintained by the reset schedule); null without resets. */
  next_usage_reset_at: string | null;
  last_reset_at: string | null;
  /** The origin of the period lattice; set when the reset rule is set, never moved by a reset. */
  reset_anchor: string | null;
  /** Extra alert recipients, beside the organisation's and workspace's admins. */
  alert_emails: string[];
}

/** The gsi1 partition listing a workspace's policies, or the organisation-wide ones. */
const policiesPartition = (orgId: string, workspaceId: string | null): string =>
  workspaceId === null ? `ORG#${orgId}#POLICIES` : `WS#${workspaceId}#POLICIES`;

export const RateLimitPolicy = new Entity<RateLimitPolicyRecord>({
  name: 'RateLimitPolicy',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `RLPOLICY#${r.id}` }),
  gsi1: (r) => ({ pk: policiesPartition(r.organisation_id, r.workspace_id), sk: `RL#${r.created_at}#${r.id}` }),
});

export const UsageLimitPolicy = new Entity<UsageLimitPolicyRecord>({
  name: 'UsageLimitPolicy',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `ULPOLICY#${r.id}` }),
  gsi1: (r) => ({ pk: policiesPartition(r.organisation_id, r.workspace_id), sk: `UL#${r.created_at}#${r.id}` }),
});

/** A usage limits policy that resets periodically, as the reset schedule finds it. */
export interface UsageResetEntryRecord {
  policy_id: string;
  organisation_id: string;
  next_usage_reset_at: string;
}

export const UsageResetEntry = new Entity<UsageResetEntryRecord>({
  name: 'UsageResetEntry',
  key: (r) => ({ pk: 'ULRESETS', sk: r.policy_id }),
});

/** One group's usage of a budget in one period. `used` is in micro-dollars (cost) or tokens. */
export interface UsageCounterRecord {
  policy_id: string;
  period: string;
  entity_id: string;
  value_key: string;
  used: number;
  threshold_alert_sent?: boolean;
  exhausted_alert_sent?: boolean;
  last_reset_at?: string;
}

export const UsageCounter = new Entity<UsageCounterRecord>({
  name: 'UsageCounter',
  key: (r) => ({ pk: usageCounterPk(r.policy_id, r.period), sk: `E#${r.entity_id}` }),
});

export const usageCounterPk = (policyId: string, period: string): string => `ULC#${policyId}#${period}`;

export function rateCounterPk(policy: { id: string; type: RateLimitType; unit: WindowUnit }, entityId: string, windowStart: number): string {
  // Type and unit are part of the key: changing either starts counting afresh.
  return `RLC#${policy.id}#${policy.type}#${policy.unit}#${entityId}#${windowStart}`;
}

export type AlertFlag = 'threshold_alert_sent' | 'exhausted_alert_sent';

export interface CounterKey {
  pk: string;
  sk: string;
}

export type ReserveResult = { ok: true; used: number; item: Item } | { ok: false; used: number; item: Item | undefined };

const isConditionFailure = (err: unknown): err is Error & { Item?: Record<string, unknown> } =>
  err instanceof Error && err.name === 'ConditionalCheckFailedException';

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

/** The item DynamoDB returns with a failed condition: still in wire form (lib-dynamodb leaves errors alone). */
function fromWire(raw: Record<string, unknown> | undefined): Item | undefined {
  if (!raw) return undefined;
  const out: Item = {};
  for (const [k, v] of Object.entries(raw)) {
    if (v === null || typeof v !== 'object') {
      out[k] = v;
      continue;
    }
    const w = v as { N?: string; S?: string; BOOL?: boolean };
    if (w.N !== undefined) out[k] = Number(w.N);
    else if (w.S !== undefined) out[k] = w.S;
    else if (w.BOOL !== undefined) out[k] = w.BOOL;
  }
  return out;
}

const usedOf = (item: Item | undefined): number => (typeof item?.used === 'number' ? item.used : 0);

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const byAge = <R extends { created_at: string; id: string }>(list: R[]): R[] =>
  list.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));

export class LimitsRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  // ---- policies -------------------------------------------------------------------------------

  async createRate(rec: RateLimitPolicyRecord): Promise<void> {
    await this.#t.transact([this.#t.putIfAbsent(RateLimitPolicy.toItem(rec))]);
  }

  getRate(orgId: string, id: string): Promise<RateLimitPolicyRecord | undefined> {
    return this.#t.get(RateLimitPolicy, { pk: `ORG#${orgId}`, sk: `RLPOLICY#${id}` }, true);
  }

  async putRate(rec: RateLimitPolicyRecord): Promise<void> {
    try {
      await this.#t.transact([this.#putExisting(RateLimitPolicy.toItem(rec))]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`Rate limits policy ${rec.id} not found`);
      throw err;
    }
  }

  async createUsage(rec: UsageLimitPolicyRecord): Promise<void> {
    const items: TransactItem[] = [this.#t.putIfAbsent(UsageLimitPolicy.toItem(rec))];
    const entry = this.#resetEntry(rec);
    if (entry) items.push({ Put: { TableName: this.#t.tableName, Item: UsageResetEntry.toItem(entry) } });
    await this.#t.transact(items);
  }

  getUsage(orgId: string, id: string): Promise<UsageLimitPolicyRecord | undefined> {
    return this.#t.get(UsageLimitPolicy, { pk: `ORG#${orgId}`, sk: `ULPOLICY#${id}` }, true);
  }

  /** Saves a changed policy and its reset entry together, only if the policy still exists. */
  async putUsage(rec: UsageLimitPolicyRecord): Promise<void> {
    const items: TransactItem[] = [this.#putExisting(UsageLimitPolicy.toItem(rec))];
    const entry = this.#resetEntry(rec);
    if (entry) items.push({ Put: { TableName: this.#t.tableName, Item: UsageResetEntry.toItem(entry) } });
    else items.push({ Delete: { TableName: this.#t.tableName, Key: { pk: 'ULRESETS', sk: rec.id } } });
    try {
      await this.#t.transact(items);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`Usage limits policy ${rec.id} not found`);
      throw err;
    }
  }

  /**
   * Both kinds of one workspace, oldest first: the gateway's one read per workspace and TTL. Given
   * the organisation, its organisation-wide policies come first (read in parallel).
   */
  async listWorkspace(workspaceId: string, organisationId?: string): Promise<{ rate: RateLimitPolicyRecord[]; usage: UsageLimitPolicyRecord[] }> {
    const reads = [this.#policiesIn(`WS#${workspaceId}#POLICIES`)];
    if (organisationId !== undefined) reads.unshift(this.#policiesIn(policiesPartition(organisationId, null)));
    const lists = await Promise.all(reads);
    return { rate: lists.flatMap((l) => l.rate), usage: lists.flatMap((l) => l.usage) };
  }

  async #policiesIn(partition: string): Promise<{ rate: RateLimitPolicyRecord[]; usage: UsageLimitPolicyRecord[] }> {
    const rate: RateLimitPolicyRecord[] = [];
    const usage: UsageLimitPolicyRecord[] = [];
    const items = await queryAll(this.#t.doc, {
      TableName: this.#t.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': partition },
    });
    for (const item of items) {
      if (item._type === 'RateLimitPolicy') rate.push(RateLimitPolicy.fromItem(item));
      else if (item._type === 'UsageLimitPolicy') usage.push(UsageLimitPolicy.fromItem(item));
    }
    return { rate, usage };
  }

  /** Every rate limits policy of the organisation, oldest first. */
  async listRateByOrganisation(orgId: string): Promise<RateLimitPolicyRecord[]> {
    return byAge(await this.#t.queryAll(RateLimitPolicy, this.#orgQuery(orgId, 'RLPOLICY#')));
  }

  /** Every usage limits policy of the organisation, oldest first. */
  async listUsageByOrganisation(orgId: string): Promise<UsageLimitPolicyRecord[]> {
    return byAge(await this.#t.queryAll(UsageLimitPolicy, this.#orgQuery(orgId, 'ULPOLICY#')));
  }

  #orgQuery(orgId: string, prefix: string) {
    return {
      ...prefixRange(`ORG#${orgId}`, prefix),
      ConsistentRead: true,
    };
  }

  /** Every periodically resetting usage policy, for the reset schedule. */
  resetEntries(): Promise<UsageResetEntryRecord[]> {
    return this.#t.queryAll(UsageResetEntry, {
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': 'ULRESETS' },
      ConsistentRead: true,
    });
  }

  /**
   * Records a periodic reset: moves `next_usage_reset_at` from `due` to `next`, only if it is still
   * `due`. Keyed by the period, so a second run for the same period changes nothing (false).
   */
  async advanceReset(rec: UsageLimitPolicyRecord, due: string, next: string, at: string): Promise<boolean> {
    try {
      await this.#t.transact([
        {
          Update: {
            TableName: this.#t.tableName,
            Key: UsageLimitPolicy.key(rec),
            UpdateExpression: 'SET next_usage_reset_at = :next, last_reset_at = :at',
            ConditionExpression: 'attribute_exists(pk) AND next_usage_reset_at = :due AND #s = :active',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':next': next, ':at': at, ':due': due, ':active': 'active' },
          },
        },
        {
          Put: {
            TableName: this.#t.tableName,
            Item: UsageResetEntry.toItem({ policy_id: rec.id, organisation_id: rec.organisation_id, next_usage_reset_at: next }),
          },
        },
      ]);
      return true;
    } catch (err) {
      if (isCancelled(err)) return false;
      throw err;
    }
  }

  #resetEntry(rec: UsageLimitPolicyRecord): UsageResetEntryRecord | undefined {
    if (rec.status !== 'active' || rec.next_usage_reset_at === null) return undefined;
    return { policy_id: rec.id, organisation_id: rec.organisation_id, next_usage_reset_at: rec.next_usage_reset_at };
  }

  #putExisting(item: Item): TransactItem {
    return { Put: { TableName: this.#t.tableName, Item: item, ConditionExpression: 'attribute_exists(pk)' } };
  }

  // ---- counters -------------------------------------------------------------------------------

  /**
   * Adds `amount` to a counter if the result stays within `limit`: one conditional UpdateItem, so
   * concurrent reservations from any number of processes never pass the limit together. `set`
   * fields are written when the counter is created.
   */
  async reserve(key: CounterKey, amount: number, limit: number, set: Record<string, unknown> = {}): Promise<ReserveResult> {
    const names: Record<string, string> = { '#u': 'used' };
    const values: Record<string, unknown> = { ':n': amount, ':max': limit - amount, ':zero': 0 };
    const sets: string[] = [];
    for (const [i, [k, v]] of Object.entries(set).entries()) {
      names[`#f${i}`] = k;
      values[`:f${i}`] = v;
      sets.push(`#f${i} = if_not_exists(#f${i}, :f${i})`);
    }
    try {
      const out = await this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: key,
          UpdateExpression: `ADD #u :n${sets.length ? ` SET ${sets.join(', ')}` : ''}`,
          ConditionExpression: '(attribute_not_exists(#u) AND :zero <= :max) OR #u <= :max',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const item = (out.Attributes ?? {}) as Item;
      return { ok: true, used: usedOf(item), item };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const item = fromWire(err.Item);
      return { ok: false, used: usedOf(item), item };
    }
  }

  /**
   * Moves a counter by `delta`, never below zero, and only if it still exists (a reset or TTL may
   * have removed it). Answers the item after the change, or undefined when nothing was changed.
   */
  async adjust(key: CounterKey, delta: number): Promise<Item | undefined> {
    if (delta === 0) return undefined;
    const send = (expr: string, cond: string, values: Record<string, unknown>) =>
      this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: key,
          UpdateExpression: expr,
          ConditionExpression: cond,
          ExpressionAttributeNames: { '#u': 'used' },
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
    // A release races only with other releases and resets: a few tries settle it.
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        if (delta > 0) return (await send('ADD #u :d', 'attribute_exists(#u)', { ':d': delta })).Attributes as Item;
        return (await send('ADD #u :d', '#u >= :abs', { ':d': delta, ':abs': -delta })).Attributes as Item;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        if (delta > 0) return undefined;
      }
      // Less is left than we would take back: clamp to zero instead.
      try {
        return (await send('SET #u = :zero', '#u < :abs', { ':zero': 0, ':abs': -delta })).Attributes as Item;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        // It grew meanwhile (or is gone): try subtracting again.
      }
    }
    return undefined;
  }

  /** Sets an alert flag unless it is set: true only for the one caller that set it. */
  async markAlert(key: CounterKey, flag: AlertFlag): Promise<boolean> {
    try {
      await this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: key,
          UpdateExpression: 'SET #f = :t',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#f) OR #f = :f)',
          ExpressionAttributeNames: { '#f': flag },
          ExpressionAttributeValues: { ':t': true, ':f': false },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Clears an alert flag that was set but whose alert could not be queued. */
  async unmarkAlert(key: CounterKey, flag: AlertFlag): Promise<void> {
    await this.#t.doc.send(
      new UpdateCommand({
        TableName: this.#t.tableName,
        Key: key,
        UpdateExpression: 'SET #f = :f',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#f': flag },
        ExpressionAttributeValues: { ':f': false },
      }),
    );
  }

  /** The budget counters of one period, i.e. the policy's entities. */
  usageCounters(policyId: string, period: string): Promise<UsageCounterRecord[]> {
    return this.#t.queryAll(UsageCounter, {
      KeyConditionExpression: 'pk = :p',
      ExpressionAttributeValues: { ':p': usageCounterPk(policyId, period) },
      ConsistentRead: true,
    });
  }

  getUsageCounter(policyId: string, period: string, entityId: string): Promise<UsageCounterRecord | undefined> {
    return this.#t.get(UsageCounter, { pk: usageCounterPk(policyId, period), sk: `E#${entityId}` }, true);
  }

  /** Zeroes a counter and both its alerts (a manual reset); false when there is no such counter. */
  async resetCounter(policyId: string, period: string, entityId: string, at: string): Promise<boolean> {
    try {
      await this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: { pk: usageCounterPk(policyId, period), sk: `E#${entityId}` },
          UpdateExpression: 'SET #u = :zero, threshold_alert_sent = :f, exhausted_alert_sent = :f, last_reset_at = :at',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#u': 'used' },
          ExpressionAttributeValues: { ':zero': 0, ':f': false, ':at': at },
        }),
      );
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** Clears alert flags on every counter of a period (a raised limit or threshold). */
  async clearAlerts(policyId: string, period: string, flags: readonly AlertFlag[]): Promise<void> {
    if (flags.length === 0) return;
    const counters = await this.usageCounters(policyId, period);
    for (let i = 0; i < counters.length; i += 16) {
      await Promise.all(counters.slice(i, i + 16).map((c) => this.clearCounterAlerts(UsageCounter.key(c), flags)));
    }
  }

  /**
   * Clears alert flags on one counter: for an API key's or a workspace's budget whose limit or
   * threshold was raised (see `keyBudgetCounter` and `workspaceBudgetCounter` in policy/limits/hook.ts).
   */
  async clearCounterAlerts(key: CounterKey, flags: readonly AlertFlag[]): Promise<void> {
    if (flags.length === 0) return;
    try {
      await this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: key,
          UpdateExpression: `SET ${flags.map((_, i) => `#f${i} = :f`).join(', ')}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: Object.fromEntries(flags.map((f, i) => [`#f${i}`, f])),
          ExpressionAttributeValues: { ':f': false },
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }

  /** A counter's value: micro-dollars or tokens for a budget, requests or tokens for a window; 0 when it has none. */
  async counterUsed(key: CounterKey): Promise<number> {
    const out = await this.#t.doc.send(new GetCommand({ TableName: this.#t.tableName, Key: key, ConsistentRead: true }));
    return usedOf(out.Item);
  }
}
