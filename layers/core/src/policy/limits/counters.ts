/**
 * Where the limits count: the counter keys of budgets by source, and the conversions between a
 * budget's declared figures (dollars, tokens) and its counter units (micro-dollars, tokens).
 */
import { usageCounterPk, type CounterKey, type UsageLimitPolicyRecord, type UsageLimitType } from '../../store/limits.ts';
import { budgetPeriod, type Period } from './windows.ts';

const MICROS_PER_DOLLAR = 1_000_000;
/** Counters outlive their window or period by this much, then DynamoDB's TTL drops them. */
export const RATE_COUNTER_GRACE_MS = 60 * 60_000;

/** The units a lease takes when a policy in approximate mode does not say (see leases.ts). */
export const DEFAULT_LEASE_SIZE = 10;
export const BUDGET_COUNTER_GRACE_MS = 7 * 24 * 60 * 60_000;

/** A budget's limit and threshold in counter units: micro-dollars for cost, tokens for tokens. */
export const toUnits = (p: { type: UsageLimitType }, v: number): number => (p.type === 'cost' ? Math.round(v * MICROS_PER_DOLLAR) : Math.floor(v));
export const fromUnits = (p: { type: UsageLimitType }, v: number): number => (p.type === 'cost' ? v / MICROS_PER_DOLLAR : v);

/** The anchor of a policy's period lattice (epoch ms), or null when it never resets. */
export const anchorOf = (p: Pick<UsageLimitPolicyRecord, 'reset_anchor'>): number | null => (p.reset_anchor === null ? null : Date.parse(p.reset_anchor));

export const currentPeriod = (p: UsageLimitPolicyRecord, nowMs: number): Period => budgetPeriod(p, anchorOf(p), nowMs);

/** The counter of an API key's own budget: a key's usage resets by moving to the next `reset_usage`. */
export const keyBudgetCounter = (keyId: string, resetUsage: number): CounterKey => ({ pk: usageCounterPk(`key:${keyId}`, `R${resetUsage}`), sk: 'E#key' });

/** The counter of a workspace's own budget (the `index`th of its usage limits) in a period. */
export const workspaceBudgetCounter = (workspaceId: string, index: number, period: string): CounterKey => ({
  pk: usageCounterPk(`ws:${workspaceId}:${index}`, period),
  sk: 'E#workspace',
});

/** The counter of a managed provider's budget in a period. */
export const providerBudgetCounter = (providerId: string, period: string): CounterKey => ({
  pk: usageCounterPk(`provider:${providerId}`, period),
  sk: 'E#provider',
});
