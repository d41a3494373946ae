/**
 * The latency histogram of the rollups: fixed log-scale buckets, four per doubling (each about 19%
 * wide), from 1 ms to past 15 minutes. Bucket 0 holds [0, 1) ms; bucket i >= 1 holds
 * [2^((i-1)/4), 2^(i/4)) ms; the last bucket is open-ended. Percentiles read from it fall in the
 * same bucket as the exact value, so they are within one bucket's width of it.
 */

export const BUCKETS_PER_DOUBLING = 4;
/** 2^(80/4) ms = 1048576 ms, past the 15-minute limit of a streamed request. */
export const LAST_BUCKET = 81;

export function bucketOf(ms: number): number {
  if (!(ms >= 1)) return 0;
  return Math.min(LAST_BUCKET, Math.floor(Math.log2(ms) * BUCKETS_PER_DOUBLING) + 1);
}

/** The bounds [lower, upper) of a bucket; the last one's upper bound is Infinity. */
export function bucketBounds(i: number): [number, number] {
  if (i <= 0) return [0, 1];
  const lower = 2 ** ((i - 1) / BUCKETS_PER_DOUBLING);
  return [lower, i >= LAST_BUCKET ? Infinity : 2 ** (i / BUCKETS_PER_DOUBLING)];
}

/**
 * The p-quantile (0 < p <= 1) by nearest rank: the bucket holding the rank-th smallest value, then
 * linear interpolation by rank inside it. Undefined when the histogram is empty.
 */
export function quantile(hist: ReadonlyMap<number, number>, p: number): number | undefined {
  let total = 0;
  for (const c of hist.values()) total += c;
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const i of [...hist.keys()].sort((a, b) => a - b)) {
    const count = hist.get(i) ?? 0;
    if (count <= 0) continue;
    if (seen + count >= rank) {
      const [lower, upper] = bucketBounds(i);
      if (!Number.isFinite(upper)) return lower;
      // Within the bucket, as if its values were spread evenly across it.
      return lower + ((upper - lower) * (rank - seen - 0.5)) / count;
    }
    seen += count;
  }
  return undefined;
}
