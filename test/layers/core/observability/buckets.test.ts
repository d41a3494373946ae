/** Time buckets, the latency histogram and the unique-user sketch: the arithmetic analytics rest on. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketBounds, bucketOf, LAST_BUCKET, quantile } from '../../../../layers/core/src/observability/histogram.ts';
import { estimateUsers, userBucket } from '../../../../layers/core/src/observability/sketch.ts';
import { DAY_MS, decompose, GRANULARITY_MS, HOUR_MS, MINUTE_MS, type Segment } from '../../../../layers/core/src/observability/time.ts';

const T0 = Date.UTC(2026, 0, 10);

/** Every minute of [start, end) covered exactly once. */
function coveredMinutes(segments: Segment[]): number[] {
  const out: number[] = [];
  for (const s of segments) for (let t = s.start; t < s.end; t += MINUTE_MS) out.push(t);
  return out;
}

describe('decompose', () => {
  it('covers a range with days inside, hours and minutes at the edges, each minute once', () => {
    const start = T0 + 10 * HOUR_MS + 30 * MINUTE_MS;
    const end = T0 + 3 * DAY_MS + 14 * HOUR_MS + 15 * MINUTE_MS;
    const segs = decompose(start, end, 'd', 0);
    expect(segs.map((s) => s.gran)).toEqual(['m', 'h', 'd', 'h', 'm']);
    expect(segs[2]).toEqual({ gran: 'd', start: T0 + DAY_MS, end: T0 + 3 * DAY_MS });
    const minutes = coveredMinutes(segs);
    expect(minutes.length).toBe((end - start) / MINUTE_MS);
    expect(new Set(minutes).size).toBe(minutes.length);
    expect(minutes[0]).toBe(start);
  });

  it('never uses buckets coarser than asked for', () => {
    const segs = decompose(T0 + 5 * MINUTE_MS, T0 + 2 * DAY_MS, 'h', 0);
    expect(segs.every((s) => s.gran !== 'd')).toBe(true);
  });

  it('widens to whole hours where minute rollups are gone', () => {
    const floor = T0 + DAY_MS;
    const segs = decompose(T0 + 10 * MINUTE_MS, T0 + DAY_MS + 2 * HOUR_MS + 5 * MINUTE_MS, 'h', floor);
    expect(segs[0]).toEqual({ gran: 'h', start: T0, end: T0 + DAY_MS });
    expect(segs.filter((s) => s.gran === 'm').every((s) => s.start >= floor)).toBe(true);
  });

  it('tiles any minute-aligned range exactly (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5 * 1440 }),
        fc.integer({ min: 1, max: 5 * 1440 }),
        fc.constantFrom<'m' | 'h' | 'd'>('m', 'h', 'd'),
        (a, len, g) => {
          const start = T0 + a * MINUTE_MS;
          const end = start + len * MINUTE_MS;
          const segs = decompose(start, end, g, 0);
          const minutes = coveredMinutes(segs);
          expect(minutes).toEqual(Array.from({ length: len }, (_, i) => start + i * MINUTE_MS));
          for (const s of segs) {
            expect(s.start % GRANULARITY_MS[s.gran]).toBe(0);
            expect(s.end % GRANULARITY_MS[s.gran]).toBe(0);
          }
        },
      ),
    );
  });
});

describe('latency histogram', () => {
  it('puts every value in the bucket whose bounds hold it', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 2_000_000, noNaN: true }), (v) => {
        const [lo, hi] = bucketBounds(bucketOf(v));
        expect(v).toBeGreaterThanOrEqual(lo);
        expect(v).toBeLessThan(hi);
      }),
    );
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(1)).toBe(1);
    expect(bucketOf(15 * 60_000)).toBeLessThan(LAST_BUCKET);
  });

  it('reads quantiles within one bucket of the exact nearest-rank value', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 120_000 }), { minLength: 1, maxLength: 300 }), fc.constantFrom(0.5, 0.9, 0.95, 0.99), (values, p) => {
        const hist = new Map<number, number>();
        for (const v of values) hist.set(bucketOf(v), (hist.get(bucketOf(v)) ?? 0) + 1);
        const sorted = [...values].sort((a, b) => a - b);
        const exact = sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1] as number;
        const [lo, hi] = bucketBounds(bucketOf(exact));
        const est = quantile(hist, p) as number;
        expect(est).toBeGreaterThanOrEqual(lo);
        expect(est).toBeLessThanOrEqual(hi);
        expect(Math.abs(est - exact)).toBeLessThanOrEqual(hi - lo);
      }),
    );
    expect(quantile(new Map(), 0.5)).toBeUndefined();
  });
});

describe('unique-user sketch', () => {
  it('counts a few users exactly and many within a few percent', () => {
    const users = (n: number) => new Set(Array.from({ length: n }, (_, i) => userBucket(`user-${i}`)));
    expect(estimateUsers(users(0))).toBe(0);
    expect(estimateUsers(users(1))).toBe(1);
    for (const [n, tolerance] of [
      [20, 0.06],
      [200, 0.06],
      [1000, 0.07],
      [3000, 0.1],
    ] as const) {
      const est = estimateUsers(users(n));
      expect(Math.abs(est - n) / n).toBeLessThan(tolerance);
    }
    // The same user many times is one.
    expect(estimateUsers(new Set([userBucket('a'), userBucket('a')]))).toBe(1);
  });
});
