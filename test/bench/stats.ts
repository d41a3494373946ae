/** Latency figures the benches report: nearest-rank quantiles of millisecond samples, to the microsecond. */

export const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};

export const round3 = (v: number): number => Math.round(v * 1000) / 1000;

/** `{p50, p99}` of the samples, rounded. */
export const medianAndTail = (xs: readonly number[]): { p50: number; p99: number } => ({ p50: round3(quantile(xs, 0.5)), p99: round3(quantile(xs, 0.99)) });
