/**
 * Load balancing: one weighted random pick per request. Weights are relative; a weight of 0 (or
 * anything not positive) is never chosen. Runs on every loadbalanced request, so it makes two
 * passes over the weights and allocates nothing.
 */

/**
 * Index of the chosen weight. `random` must return a number in [0, 1) like Math.random; tests pass
 * a seeded one. Throws when no weight is positive, which a validated config never allows.
 */
export function pickWeighted(weights: readonly number[], random: () => number = Math.random): number {
  let total = 0;
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i] as number;
    if (w > 0) total += w;
  }
  if (!(total > 0)) throw new RangeError('pickWeighted: no weight is greater than 0');

  let point = random() * total;
  let last = -1;
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i] as number;
    if (!(w > 0)) continue;
    if (point < w) return i;
    point -= w;
    last = i;
  }
  // Rounding in the subtractions (or a random() that returns 1) can step past the end.
  return last;
}
