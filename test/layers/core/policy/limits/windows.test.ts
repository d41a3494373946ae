/** Rate windows and budget periods: pure functions of the clock, so every instance agrees. */
import { describe, expect, it } from 'vitest';
import { addMonths, budgetPeriod, calendarAnchor, defaultAnchor, formatDuration, rateWindow } from '../../../../../layers/core/src/policy/limits/windows.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe('rate windows', () => {
  it.each([
    ['rps', '2026-03-04T05:06:07.890Z', '2026-03-04T05:06:07.000Z', '2026-03-04T05:06:08.000Z'],
    ['rpm', '2026-03-04T05:06:07.890Z', '2026-03-04T05:06:00.000Z', '2026-03-04T05:07:00.000Z'],
    ['rph', '2026-03-04T05:06:07.890Z', '2026-03-04T05:00:00.000Z', '2026-03-04T06:00:00.000Z'],
    ['rpd', '2026-03-04T05:06:07.890Z', '2026-03-04T00:00:00.000Z', '2026-03-05T00:00:00.000Z'],
    // 2026-03-04 is a Wednesday: the week began on Monday the 2nd.
    ['rpw', '2026-03-04T05:06:07.890Z', '2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z'],
    ['rpw', '2026-03-02T00:00:00.000Z', '2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z'],
    ['rpw', '2026-03-01T23:59:59.999Z', '2026-02-23T00:00:00.000Z', '2026-03-02T00:00:00.000Z'],
  ] as const)('%s at %s runs from %s to %s', (unit, now, start, end) => {
    const w = rateWindow(unit, at(now));
    expect([iso(w.start), iso(w.end)]).toEqual([start, end]);
  });
});

describe('budget periods', () => {
  it('never resets without a rule', () => {
    expect(budgetPeriod({ periodic_reset: null, periodic_reset_days: null }, null, at('2026-01-01T00:00:00Z'))).toEqual({ key: 'ALL', start: null, end: null });
  });

  it('runs the first period up to the anchor, then steps weekly', () => {
    const rule = { periodic_reset: 'weekly', periodic_reset_days: null } as const;
    const anchor = at('2026-01-05T00:00:00Z');
    expect(budgetPeriod(rule, anchor, at('2026-01-01T10:00:00Z'))).toEqual({ key: `I${anchor}`, start: null, end: anchor });
    const p = budgetPeriod(rule, anchor, at('2026-01-20T10:00:00Z'));
    expect([iso(p.start), iso(p.end)]).toEqual(['2026-01-19T00:00:00.000Z', '2026-01-26T00:00:00.000Z']);
    expect(p.key).toBe(String(at('2026-01-19T00:00:00Z')));
  });

  it('steps by calendar months, clamping the day to short months', () => {
    const rule = { periodic_reset: 'monthly', periodic_reset_days: null } as const;
    const anchor = at('2026-01-31T12:00:00Z');
    const feb = budgetPeriod(rule, anchor, at('2026-03-01T00:00:00Z'));
    expect([iso(feb.start), iso(feb.end)]).toEqual(['2026-02-28T12:00:00.000Z', '2026-03-31T12:00:00.000Z']);
    const mar = budgetPeriod(rule, anchor, at('2026-03-31T12:00:00Z'));
    expect(iso(mar.start)).toBe('2026-03-31T12:00:00.000Z');
    // Leap year.
    expect(iso(budgetPeriod(rule, anchor, at('2028-02-29T13:00:00Z')).start)).toBe('2028-02-29T12:00:00.000Z');
    expect(iso(addMonths(at('2026-12-15T00:00:00Z'), 1))).toBe('2027-01-15T00:00:00.000Z');
    expect(iso(addMonths(at('2026-01-15T00:00:00Z'), -1))).toBe('2025-12-15T00:00:00.000Z');
  });

  it('steps by N days', () => {
    const rule = { periodic_reset: null, periodic_reset_days: 10 };
    const anchor = at('2026-01-01T00:00:00Z');
    const p = budgetPeriod(rule, anchor, at('2026-01-25T00:00:00Z'));
    expect([iso(p.start), iso(p.end)]).toEqual(['2026-01-21T00:00:00.000Z', '2026-01-31T00:00:00.000Z']);
  });

  it('anchors new rules at the next Monday, the next 1st, or N days on', () => {
    const now = at('2026-01-07T15:00:00Z');
    expect(iso(defaultAnchor({ periodic_reset: 'weekly', periodic_reset_days: null }, now))).toBe('2026-01-12T00:00:00.000Z');
    expect(iso(defaultAnchor({ periodic_reset: 'monthly', periodic_reset_days: null }, now))).toBe('2026-02-01T00:00:00.000Z');
    expect(iso(defaultAnchor({ periodic_reset: null, periodic_reset_days: 3 }, now))).toBe('2026-01-10T15:00:00.000Z');
    expect(defaultAnchor({ periodic_reset: null, periodic_reset_days: null }, now)).toBeNull();
  });

  it('anchors workspace budgets on calendar boundaries', () => {
    const weekly = { periodic_reset: 'weekly', periodic_reset_days: null } as const;
    const p = budgetPeriod(weekly, calendarAnchor(weekly), at('2026-03-04T05:00:00Z'));
    expect(iso(p.start)).toBe('2026-03-02T00:00:00.000Z');
    const monthly = { periodic_reset: 'monthly', periodic_reset_days: null } as const;
    expect(iso(budgetPeriod(monthly, calendarAnchor(monthly), at('2026-03-04T05:00:00Z')).start)).toBe('2026-03-01T00:00:00.000Z');
  });
});

describe('formatDuration', () => {
  it.each([
    [250, '250ms'],
    [999.2, '1000ms'],
    [1000, '1s'],
    [55_000, '55s'],
    [360_000, '6m0s'],
    [3_723_000, '1h2m3s'],
    [-5, '0ms'],
  ])('%d ms is %s', (ms, text) => expect(formatDuration(ms)).toBe(text));
});
