/** Cost rules: micro-dollars from usage and a price. */
import { describe, expect, it } from 'vitest';
import { costMicrosOf, formatUsd } from '../../../../layers/core/src/pricing/cost.ts';

const usage = (prompt: number, completion: number, extra: { cached?: number; reasoning?: number; total?: number } = {}) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: extra.total ?? prompt + completion,
  ...(extra.cached !== undefined ? { cached_tokens: extra.cached } : {}),
  ...(extra.reasoning !== undefined ? { reasoning_tokens: extra.reasoning } : {}),
});

describe('costMicrosOf', () => {
  it('is tokens times USD per million, in integer micro-dollars', () => {
    expect(costMicrosOf({ input: 2.5, output: 10 }, usage(1000, 500))).toBe(7500);
    expect(costMicrosOf({ input: 0.15, output: 0.6 }, usage(9, 3))).toBe(3); // 3.15 rounds to 3
  });

  it('prices cached prompt tokens at the cached price, else at the input price', () => {
    expect(costMicrosOf({ input: 2.5, output: 10, cachedInput: 1.25 }, usage(1000, 0, { cached: 400 }))).toBe(600 * 2.5 + 400 * 1.25);
    expect(costMicrosOf({ input: 2, output: 8 }, usage(1000, 0, { cached: 400 }))).toBe(2000);
  });

  it('bills reasoning tokens as output, once', () => {
    // OpenAI: reasoning is inside completion_tokens (total = prompt + completion).
    expect(costMicrosOf({ input: 1, output: 4 }, usage(100, 50, { reasoning: 30 }))).toBe(100 + 200);
    // A provider that counts them apart: total shows it.
    expect(costMicrosOf({ input: 1, output: 4 }, usage(100, 50, { reasoning: 30, total: 180 }))).toBe(100 + 80 * 4);
  });

  it('is undefined without any price; a missing side counts as free', () => {
    expect(costMicrosOf({}, usage(10, 10))).toBeUndefined();
    expect(costMicrosOf({ input: 0.02 }, usage(1000, 0))).toBe(20);
  });
});

describe('formatUsd', () => {
  it('writes micro-dollars as USD with six decimals', () => {
    expect(formatUsd(123)).toBe('0.000123');
    expect(formatUsd(0)).toBe('0.000000');
    expect(formatUsd(12_345_678)).toBe('12.345678');
  });
});
