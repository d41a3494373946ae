/**
 * Time for limits, as pure functions of a clock reading so that every instance agrees without
 * talking to the others: fixed rate-limit windows aligned to their unit (UTC; weeks start on
 * Monday), and budget periods on a lattice anchored at the policy's first reset. Counters are keyed
 * by window or period, so a new one starts at zero everywhere at the same instant.
 */

import type { PeriodicReset, WindowUnit } from '../../store/limits.ts';

export { RATE_UNITS, type PeriodicReset, type RateUnit, type WindowUnit } from '../../store/limits.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
export const DAY_MS = 24 * HOUR;
const WEEK = 7 * DAY_MS;

export const UNIT_MS: Readonly<Record<WindowUnit, number>> = { rps: 1000, rpm: MINUTE, rph: HOUR, rpd: DAY_MS, rpw: WEEK };
export const UNIT_NAMES: Readonly<Record<WindowUnit, string>> = { rps: 'second', rpm: 'minute', rph: 'hour', rpd: 'day', rpw: 'week' };

/** 1970-01-05T00:00Z, the first Monday of the epoch (the epoch itself was a Thursday). */
const FIRST_MONDAY = 4 * DAY_MS;

export interface Span {
  /** Inclusive, epoch ms. */
  start: number;
  /** Exclusive, epoch ms. */
  end: number;
}

/** The fixed window of `unit` holding `nowMs`. */
export function rateWindow(unit: WindowUnit, nowMs: number): Span {
  const size = UNIT_MS[unit];
  const origin = unit === 'rpw' ? FIRST_MONDAY : 0;
  const start = Math.floor((nowMs - origin) / size) * size + origin;
  return { start, end: start + size };
}

/** How a budget resets: at most one of the two is set; neither means it never resets. */
export interface ResetRule {
  periodic_reset: PeriodicReset | null;
  periodic_reset_days: number | null;
}

export const resets = (r: ResetRule): boolean => r.periodic_reset !== null || r.periodic_reset_days !== null;

/** The start of the next UTC Monday, or of the next month, or `days` from now. */
export function defaultAnchor(rule: ResetRule, nowMs: number): number | null {
  if (rule.periodic_reset === 'weekly') return rateWindow('rpw', nowMs).end;
  if (rule.periodic_reset === 'monthly') {
    const d = new Date(nowMs);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  if (rule.periodic_reset_days !== null) return nowMs + rule.periodic_reset_days * DAY_MS;
  return null;
}

/** The anchor of budgets that reset on calendar boundaries: UTC Mondays, 1sts of the month, N-day blocks from the epoch. */
export function calendarAnchor(rule: ResetRule): number | null {
  if (rule.periodic_reset === 'weekly') return FIRST_MONDAY;
  return resets(rule) ? 0 : null;
}

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/** `anchor` moved by `months`, its day clamped to the target month (Jan 31 + 1 month = Feb 28). */
export function addMonths(anchorMs: number, months: number): number {
  const a = new Date(anchorMs);
  const total = a.getUTCFullYear() * 12 + a.getUTCMonth() + months;
  const year = Math.floor(total / 12);
  const month = total - year * 12;
  const day = Math.min(a.getUTCDate(), daysInMonth(year, month));
  return Date.UTC(year, month, day, a.getUTCHours(), a.getUTCMinutes(), a.getUTCSeconds(), a.getUTCMilliseconds());
}

export interface Period {
  /** Names the period in counter keys: `ALL` when the budget never resets. */
  key: string;
  /** Epoch ms; null for the period before the first reset, which began when the rule was set. */
  start: number | null;
  /** Epoch ms of the next reset; null when the budget never resets. */
  end: number | null;
}

/**
 * The budget period holding `nowMs`. The first period runs until the anchor (the first reset,
 * `next_usage_reset_at` when the rule was set); from there periods step by 7 days (weekly), one
 * calendar month (monthly, the day clamped to short months) or N days.
 */
export function budgetPeriod(rule: ResetRule, anchorMs: number | null, nowMs: number): Period {
  if (!resets(rule) || anchorMs === null) return { key: 'ALL', start: null, end: null };
  if (nowMs < anchorMs) return { key: `I${anchorMs}`, start: null, end: anchorMs };
  if (rule.periodic_reset === 'monthly') {
    const a = new Date(anchorMs);
    const t = new Date(nowMs);
    let k = (t.getUTCFullYear() - a.getUTCFullYear()) * 12 + (t.getUTCMonth() - a.getUTCMonth());
    if (addMonths(anchorMs, k) > nowMs) k--;
    const start = addMonths(anchorMs, k);
    return { key: String(start), start, end: addMonths(anchorMs, k + 1) };
  }
  const size = rule.periodic_reset === 'weekly' ? WEEK : (rule.periodic_reset_days ?? 1) * DAY_MS;
  const start = anchorMs + Math.floor((nowMs - anchorMs) / size) * size;
  return { key: String(start), start, end: start + size };
}

/** OpenAI's duration form for `x-ratelimit-reset-*`: `59s`, `6m0s`, `1h2m3s`, `250ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const total = Math.ceil(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
