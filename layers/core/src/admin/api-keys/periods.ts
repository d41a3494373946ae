/** Calendar arithmetic for rotations and usage resets, in UTC. */

export type Period = 'weekly' | 'monthly';

const DAY = 86_400_000;

/** One period after `fromMs`: seven days, or the same day of the next month (clamped to its end). */
export function addPeriod(fromMs: number, period: Period): number {
  if (period === 'weekly') return fromMs + 7 * DAY;
  const d = new Date(fromMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + 1;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return Date.UTC(y, m, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/** The shortest length of a period, which a transition must stay below. */
export const minPeriodMs = (period: Period): number => (period === 'weekly' ? 7 * DAY : 28 * DAY);

/** The next calendar boundary after `nowMs`: Monday 00:00 UTC, or the 1st of next month 00:00 UTC. */
export function nextBoundary(nowMs: number, period: Period): number {
  const d = new Date(nowMs);
  if (period === 'monthly') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const daysToMonday = (8 - d.getUTCDay()) % 7 || 7;
  return midnight + daysToMonday * DAY;
}

/** When a key's usage is reset next, from its usage limit (null when it never resets by itself). */
export function nextUsageReset(
  nowMs: number,
  limits: { periodic_reset?: Period | null; periodic_reset_days?: number | null } | null | undefined,
): number | null {
  if (!limits) return null;
  if (limits.periodic_reset) return nextBoundary(nowMs, limits.periodic_reset);
  if (limits.periodic_reset_days) return nowMs + limits.periodic_reset_days * DAY;
  return null;
}

export const iso = (ms: number): string => new Date(ms).toISOString();
