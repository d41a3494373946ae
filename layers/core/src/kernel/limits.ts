/**
 * Limits attached to an API key or a workspace (`usage_limits`, `rate_limits`), normalized for the
 * limits hook. The admin routes that store them validate them; here anything malformed is skipped,
 * so a bad stored value can never break the gateway.
 */
import type { PeriodicReset, WindowUnit } from '../store/limits.ts';

export interface AttachedUsageLimit {
  type: 'cost' | 'tokens';
  /** Dollars for cost, tokens for tokens. */
  credit_limit: number;
  alert_threshold: number | null;
  periodic_reset: PeriodicReset | null;
  periodic_reset_days: number | null;
}

export interface AttachedRateLimit {
  type: 'requests' | 'tokens';
  unit: WindowUnit;
  value: number;
}

export interface AttachedLimits {
  usage: readonly AttachedUsageLimit[];
  rate: readonly AttachedRateLimit[];
}

export const NO_ATTACHED: AttachedLimits = Object.freeze({ usage: Object.freeze([]), rate: Object.freeze([]) });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);
const UNITS: ReadonlySet<string> = new Set(['rps', 'rpm', 'rph', 'rpd', 'rpw']);

export function parseUsageLimit(v: unknown): AttachedUsageLimit | undefined {
  if (!isObject(v)) return undefined;
  const credit = num(v.credit_limit);
  if (credit === undefined) return undefined;
  const type = v.type === 'tokens' ? 'tokens' : v.type === undefined || v.type === null || v.type === 'cost' ? 'cost' : undefined;
  if (!type) return undefined;
  const days = num(v.periodic_reset_days);
  return {
    type,
    credit_limit: credit,
    alert_threshold: num(v.alert_threshold) ?? null,
    periodic_reset: v.periodic_reset === 'weekly' || v.periodic_reset === 'monthly' ? v.periodic_reset : null,
    periodic_reset_days: days !== undefined && Number.isInteger(days) && days >= 1 ? days : null,
  };
}

export function parseRateLimit(v: unknown): AttachedRateLimit | undefined {
  if (!isObject(v)) return undefined;
  const value = num(v.value);
  if (value === undefined || !Number.isInteger(value) || value < 1) return undefined;
  if (v.type !== 'requests' && v.type !== 'tokens') return undefined;
  if (typeof v.unit !== 'string' || !UNITS.has(v.unit)) return undefined;
  return { type: v.type, unit: v.unit as WindowUnit, value };
}

/** One usage limit object or a list of them; rate limits always come as a list. */
export function parseAttached(usage: unknown, rate: unknown): AttachedLimits {
  const usageList = (Array.isArray(usage) ? usage : usage == null ? [] : [usage]).map(parseUsageLimit).filter((u) => u !== undefined);
  const rateList = (Array.isArray(rate) ? rate : []).map(parseRateLimit).filter((r) => r !== undefined);
  if (usageList.length === 0 && rateList.length === 0) return NO_ATTACHED;
  return { usage: usageList, rate: rateList };
}
