/** Rotation and usage reset dates. */
import { describe, expect, it } from 'vitest';
import { addPeriod, nextBoundary, nextUsageReset } from '../../../../../layers/core/src/admin/api-keys/periods.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('periods', () => {
  it('addPeriod: a week is seven days; a month keeps the day, clamped to the month end', () => {
    expect(iso(addPeriod(at('2026-01-05T09:00:00Z'), 'weekly'))).toBe('2026-01-12T09:00:00.000Z');
    expect(iso(addPeriod(at('2026-01-15T09:00:00Z'), 'monthly'))).toBe('2026-02-15T09:00:00.000Z');
    expect(iso(addPeriod(at('2026-01-31T09:00:00Z'), 'monthly'))).toBe('2026-02-28T09:00:00.000Z');
    expect(iso(addPeriod(at('2026-12-31T00:00:00Z'), 'monthly'))).toBe('2027-01-31T00:00:00.000Z');
  });

  it('nextBoundary: next Monday 00:00 UTC, or the first of next month', () => {
    expect(iso(nextBoundary(at('2026-01-07T12:00:00Z'), 'weekly'))).toBe('2026-01-12T00:00:00.000Z');
    expect(iso(nextBoundary(at('2026-01-12T00:00:00Z'), 'weekly'))).toBe('2026-01-19T00:00:00.000Z');
    expect(iso(nextBoundary(at('2026-12-20T00:00:00Z'), 'monthly'))).toBe('2027-01-01T00:00:00.000Z');
  });

  it('nextUsageReset: from periodic_reset, periodic_reset_days, or never', () => {
    const now = at('2026-03-10T08:00:00Z');
    expect(iso(nextUsageReset(now, { periodic_reset: 'monthly' }))).toBe('2026-04-01T00:00:00.000Z');
    expect(iso(nextUsageReset(now, { periodic_reset_days: 3 }))).toBe('2026-03-13T08:00:00.000Z');
    expect(nextUsageReset(now, {})).toBeNull();
    expect(nextUsageReset(now, null)).toBeNull();
  });
});
