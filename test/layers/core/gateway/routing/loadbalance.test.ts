import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pickWeighted } from '../../../../../layers/core/src/gateway/routing/loadbalance.ts';

/** A small seeded PRNG (mulberry32) so that the picks, not only the weights, are reproducible. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Weight vectors with at least one positive weight and some zeros. */
const weights = fc
  .array(fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.double({ min: 0.01, max: 100, noNaN: true }) }), {
    minLength: 1,
    maxLength: 10,
  })
  .filter((ws) => ws.some((w) => w > 0));

describe('pickWeighted', () => {
  it('maps the random number onto the cumulative weights', () => {
    expect(pickWeighted([1, 1], () => 0)).toBe(0);
    expect(pickWeighted([1, 1], () => 0.49)).toBe(0);
    expect(pickWeighted([1, 1], () => 0.5)).toBe(1);
    expect(pickWeighted([3, 1], () => 0.74)).toBe(0);
    expect(pickWeighted([3, 1], () => 0.75)).toBe(1);
    expect(pickWeighted([7], () => 0.99)).toBe(0);
  });

  it('skips zero weights at either end and in the middle', () => {
    expect(pickWeighted([0, 1, 0], () => 0)).toBe(1);
    expect(pickWeighted([0, 1, 0], () => 0.999999)).toBe(1);
    expect(pickWeighted([1, 0, 1], () => 0.5)).toBe(2);
    expect(pickWeighted([0, 0, 2, 0], () => 0.3)).toBe(2);
  });

  it('stays in range when random() returns 1 or rounding overshoots', () => {
    expect(pickWeighted([1, 2, 0], () => 1)).toBe(1);
    expect(pickWeighted([0.1, 0.2, 0.3, 0], () => 0.9999999999999999)).toBe(2);
  });

  it('throws when no weight is positive', () => {
    expect(() => pickWeighted([0, 0])).toThrow(RangeError);
    expect(() => pickWeighted([])).toThrow(RangeError);
  });

  it('uses Math.random by default', () => {
    const i = pickWeighted([1, 0, 1]);
    expect([0, 2]).toContain(i);
  });

  it('never picks a zero weight', () => {
    fc.assert(
      fc.property(weights, fc.integer(), (ws, seed) => {
        const random = seeded(seed);
        for (let n = 0; n < 2_000; n++) {
          const i = pickWeighted(ws, random);
          expect(ws[i]).toBeGreaterThan(0);
        }
      }),
      { seed: 42, numRuns: 50 },
    );
  });

  it('follows the weights within 2 percentage points over 20 000 picks', () => {
    const picks = 20_000;
    fc.assert(
      fc.property(weights, fc.integer(), (ws, seed) => {
        const random = seeded(seed);
        const counts = new Array<number>(ws.length).fill(0);
        for (let n = 0; n < picks; n++) {
          const i = pickWeighted(ws, random);
          counts[i] = (counts[i] as number) + 1;
        }
        const total = ws.reduce((a, b) => a + b, 0);
        ws.forEach((w, i) => {
          expect(Math.abs((counts[i] as number) / picks - w / total)).toBeLessThanOrEqual(0.02);
        });
      }),
      { seed: 42, numRuns: 50 },
    );
  });
});
