/** Time buckets of the rollups: UTC minutes, hours and days. */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export type Granularity = 'm' | 'h' | 'd';

export const GRANULARITY_MS: Readonly<Record<Granularity, number>> = { m: MINUTE_MS, h: HOUR_MS, d: DAY_MS };

/** Minute rollups are kept this long; older ranges are read from hour rollups. */
export const MINUTE_ROLLUP_DAYS = 7;

export const floorTo = (ms: number, unit: number): number => Math.floor(ms / unit) * unit;
export const ceilTo = (ms: number, unit: number): number => Math.ceil(ms / unit) * unit;

/** `2026-01-01T10:05`: sorts like the time it names, the same length for every granularity. */
export const bucketKey = (ms: number): string => new Date(ms).toISOString().slice(0, 16);

/** `2026-01-01`: the UTC day of a time. */
export const dayKey = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export const iso = (ms: number): string => new Date(ms).toISOString();

export interface Segment {
  gran: Granularity;
  /** First bucket start (inclusive) and end (exclusive), aligned to the granularity. */
  start: number;
  end: number;
}

/**
 * Covers [start, end) (minute-aligned) with as few aligned buckets as possible, never coarser than
 * `maxGran`: whole days inside, hours at the day edges, minutes at the hour edges. Before
 * `minuteFloor` there are no minute rollups, so that part widens to whole hours.
 */
export function decompose(start: number, end: number, maxGran: Granularity, minuteFloor: number): Segment[] {
  const out: Segment[] = [];
  const order: Granularity[] = maxGran === 'd' ? ['d', 'h', 'm'] : maxGran === 'h' ? ['h', 'm'] : ['m'];
  const boundary = ceilTo(minuteFloor, HOUR_MS);
  if (start < boundary) {
    const coarse = order.filter((g) => g !== 'm');
    cover(floorTo(start, HOUR_MS), end <= boundary ? ceilTo(end, HOUR_MS) : boundary, coarse.length ? coarse : ['h'], 0, out);
  }
  if (end > boundary) cover(Math.max(start, boundary), end, order, 0, out);
  return out;
}

function cover(a: number, b: number, order: readonly Granularity[], level: number, out: Segment[]): void {
  if (a >= b) return;
  const gran = order[level] as Granularity;
  const unit = GRANULARITY_MS[gran];
  if (level === order.length - 1) {
    out.push({ gran, start: floorTo(a, unit), end: ceilTo(b, unit) });
    return;
  }
  const innerStart = ceilTo(a, unit);
  const innerEnd = floorTo(b, unit);
  if (innerStart >= innerEnd) {
    cover(a, b, order, level + 1, out);
    return;
  }
  cover(a, innerStart, order, level + 1, out);
  out.push({ gran, start: innerStart, end: innerEnd });
  cover(innerEnd, b, order, level + 1, out);
}
