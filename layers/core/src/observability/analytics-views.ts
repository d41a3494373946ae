/**
 * Analytics answers in the reference API's shapes: group rows (`{object: 'list', total, data}`),
 * graphs (`{object: 'analytics-graph', summary, data_points}`) and summaries. Costs are US cents,
 * latencies milliseconds, rates percentages.
 */
import { NONE, emptyAggregate, mergeInto, type Aggregate } from './aggregate.ts';
import type { Collected, GroupBy } from './analytics.ts';
import { quantile } from './histogram.ts';
import { OTHER } from './rollups.ts';
import { estimateUsers } from './sketch.ts';
import { GRANULARITY_MS, floorTo, iso, type Granularity } from './time.ts';

export const GROUP_COLUMNS = [
  'cost',
  'total_tokens',
  'avg_tokens',
  'avg_input_tokens',
  'avg_output_tokens',
  'avg_latency',
  'p95_latency',
  'p99_latency',
  'success_rate',
  'error_count',
  'cache_hit_rate',
  'last_seen',
  'first_seen',
] as const;
export type GroupColumn = (typeof GROUP_COLUMNS)[number];

/**
 * The rollup attributes the columns are computed from (beside the request count), so a groups
 * read skips the rest of each item; undefined when a column needs the latency histogram, whose
 * attributes are not known by name.
 */
export function columnFigures(columns: readonly GroupColumn[]): string[] | undefined {
  const of: Record<GroupColumn, readonly string[] | undefined> = {
    cost: ['cost'],
    total_tokens: ['ttot'],
    avg_tokens: ['ttot'],
    avg_input_tokens: ['tin'],
    avg_output_tokens: ['tout'],
    avg_latency: ['lat'],
    p95_latency: undefined,
    p99_latency: undefined,
    success_rate: ['err'],
    error_count: ['err'],
    cache_hit_rate: ['ch'],
    last_seen: ['t'],
    first_seen: ['t'],
  };
  const out = new Set<string>();
  for (const c of columns) {
    const figures = of[c];
    if (!figures) return undefined;
    for (const f of figures) out.add(f);
  }
  return [...out];
}

export const GRAPHS = [
  'requests',
  'cost',
  'latency',
  'tokens',
  'users',
  'users/requests',
  'errors',
  'errors/rate',
  'errors/stacks',
  'errors/status-codes',
  'requests/rescued',
  'cache/hit-rate',
  'cache/latency',
] as const;
export type Graph = (typeof GRAPHS)[number];

const round = (v: number, digits = 2) => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};
const per = (a: number, b: number, digits = 2) => (b > 0 ? round(a / b, digits) : 0);
const pct = (a: number, b: number) => (b > 0 ? round((100 * a) / b) : 0);
/** Micro-dollars to US cents (exact to four decimals). */
export const cents = (micros: number) => round(micros / 10_000, 4);
const q = (a: Aggregate, p: number) => round(quantile(a.counters.h, p) ?? 0, 1);

export interface Figures {
  requests: number;
  errors: number;
  cost: number;
  totalTokens: number;
}

function column(a: Aggregate, c: GroupColumn): number | string | null {
  const s = a.sums;
  switch (c) {
    case 'cost':
      return cents(s.cost);
    case 'total_tokens':
      return s.ttot;
    case 'avg_tokens':
      return per(s.ttot, s.n);
    case 'avg_input_tokens':
      return per(s.tin, s.n);
    case 'avg_output_tokens':
      return per(s.tout, s.n);
    case 'avg_latency':
      return per(s.lat, s.n);
    case 'p95_latency':
      return q(a, 0.95);
    case 'p99_latency':
      return q(a, 0.99);
    case 'success_rate':
      return pct(s.n - s.err, s.n);
    case 'error_count':
      return s.err;
    case 'cache_hit_rate':
      return pct(s.ch, s.n);
    case 'last_seen':
      return a.last === undefined ? null : iso(a.last);
    case 'first_seen':
      return a.first === undefined ? null : iso(a.first);
  }
}

/** What the row of a dimension's remainder (the values past each bucket's admitted ones) shows as its value. */
export const OTHER_LABEL = 'other';

/** A group's value as shown: status codes as numbers, "no value" as null. */
function groupValue(groupBy: GroupBy, v: string | undefined): string | number | null {
  if (v === undefined || v === NONE) return null;
  if (v === OTHER) return OTHER_LABEL;
  return groupBy === 'status_code' ? Number(v) : v;
}

export interface GroupRow {
  object: 'analytics-group';
  requests: number;
  /** The dimension's remainder: the values that had no item of their own in some bucket (rollup-admission.ts). */
  other?: true;
  [column: string]: string | number | boolean | null | undefined;
}

/** Rows per group, most requests first; only `requests` unless columns are asked for. */
export function groupRows(c: Collected, groupBy: GroupBy, columns: readonly GroupColumn[]): GroupRow[] {
  const rows = [...c.cells.values()]
    .filter((cell) => cell.agg.sums.n > 0)
    .map((cell) => {
      const row: GroupRow = { object: 'analytics-group', [groupBy]: groupValue(groupBy, cell.group), requests: cell.agg.sums.n };
      if (cell.group === OTHER) row.other = true;
      for (const col of columns) row[col] = column(cell.agg, col);
      return row;
    });
  // The remainder last, whatever its count: it is not one group.
  return rows.sort(
    (a, b) => Number(a.other === true) - Number(b.other === true) || b.requests - a.requests || String(a[groupBy]).localeCompare(String(b[groupBy])),
  );
}

/** Every data point of the range, empty ones included, oldest first. */
function points(c: Collected, gran: Granularity): { timestamp: string; agg: Aggregate }[] {
  const unit = GRANULARITY_MS[gran];
  const byPoint = new Map<number, Aggregate>();
  for (const cell of c.cells.values()) {
    if (cell.point === undefined) continue;
    const agg = byPoint.get(cell.point) ?? emptyAggregate();
    mergeInto(agg, cell.agg);
    byPoint.set(cell.point, agg);
  }
  const out: { timestamp: string; agg: Aggregate }[] = [];
  for (let t = floorTo(c.from, unit); t < c.to; t += unit) out.push({ timestamp: iso(t), agg: byPoint.get(t) ?? emptyAggregate() });
  return out;
}

const errorCodes = (a: Aggregate) => [...a.counters.sc].filter(([code, n]) => (code >= 400 || code < 100) && n > 0).sort((x, y) => x[0] - y[0]);
const rescuedRetries = (a: Aggregate) =>
  [...a.counters.rr]
    .filter(([, n]) => n > 0)
    .sort((x, y) => x[0] - y[0])
    .map(([k, n]) => ({ retry_success_count: k, count: n }));

export interface GraphBody {
  object: 'analytics-graph';
  summary: Record<string, unknown>;
  data_points: Record<string, unknown>[];
}

export function graphBody(graph: Graph, c: Collected, gran: Granularity): GraphBody {
  const t = c.total;
  const s = t.sums;
  const pts = points(c, gran);
  const body = (summary: Record<string, unknown>, map: (a: Aggregate) => Record<string, unknown>): GraphBody => ({
    object: 'analytics-graph',
    summary,
    data_points: pts.map((p) => ({ timestamp: p.timestamp, ...map(p.agg) })),
  });
  switch (graph) {
    case 'requests':
      return body({ total: s.n }, (a) => ({ total: a.sums.n }));
    case 'cost':
      return body({ total: cents(s.cost), avg: cents(per(s.cost, s.n, 4)) }, (a) => ({ total: cents(a.sums.cost), avg: cents(per(a.sums.cost, a.sums.n, 4)) }));
    case 'latency': {
      const lat = (a: Aggregate) => ({ avg: per(a.sums.lat, a.sums.n), p50: q(a, 0.5), p90: q(a, 0.9), p95: q(a, 0.95), p99: q(a, 0.99) });
      return body(lat(t), lat);
    }
    case 'tokens':
      return body({ total: s.ttot, avg: per(s.ttot, s.n) }, (a) => ({ total: a.sums.ttot, avg: per(a.sums.ttot, a.sums.n) }));
    case 'users':
      return body({ total: estimateUsers(t.users) }, (a) => ({ total: estimateUsers(a.users) }));
    case 'users/requests': {
      const unique = estimateUsers(t.users);
      return body({ total: s.n, unique, avg: per(s.n, unique) }, (a) => ({ avg: per(a.sums.n, estimateUsers(a.users)) }));
    }
    case 'errors':
      return body({ total: s.err }, (a) => ({ total: a.sums.err }));
    case 'errors/rate':
      return body({ rate: pct(s.err, s.n) }, (a) => ({ rate: pct(a.sums.err, a.sums.n) }));
    case 'errors/stacks':
      return body({ total: s.err }, (a) => ({ stats: errorCodes(a).map(([code, n]) => ({ response_status_code: code, count: n })) }));
    case 'errors/status-codes': {
      const codes = errorCodes(t);
      return {
        object: 'analytics-graph',
        summary: { total_errors: s.err, unique_error_codes: codes.length },
        data_points: codes.map(([code, n]) => ({ status_code: code, count: n })),
      };
    }
    case 'requests/rescued': {
      const retried = [...t.counters.rr.values()].reduce((x, y) => x + y, 0);
      return body({ retry: retried, fallback: s.fb }, (a) => ({ retry: rescuedRetries(a), fallback: a.sums.fb }));
    }
    case 'cache/hit-rate': {
      let simple = 0;
      let semantic = 0;
      return body({ total: s.ch, rate: pct(s.ch, s.n) }, (a) => {
        simple += a.sums.savs;
        semantic += a.sums.savm;
        return {
          simple_hits: a.sums.chs,
          semantic_hits: a.sums.chm,
          rate: pct(a.sums.ch, a.sums.n),
          cumulative_simple_cache_savings: cents(simple),
          cumulative_semantic_cache_savings: cents(semantic),
        };
      });
    }
    case 'cache/latency':
      return body({ avg: per(s.clat, s.ch), hits: s.ch }, (a) => ({ avg: per(a.sums.clat, a.sums.ch) }));
  }
}

/** The whole range in one object. */
export function summaryBody(c: Collected) {
  const t = c.total;
  const s = t.sums;
  return {
    object: 'analytics-summary' as const,
    summary: {
      requests: s.n,
      errors: s.err,
      error_rate: pct(s.err, s.n),
      success_rate: pct(s.n - s.err, s.n),
      cost: cents(s.cost),
      avg_cost: cents(per(s.cost, s.n, 4)),
      cost_currency: 'USD',
      total_tokens: s.ttot,
      input_tokens: s.tin,
      output_tokens: s.tout,
      avg_tokens: per(s.ttot, s.n),
      avg_latency: per(s.lat, s.n),
      p50_latency: q(t, 0.5),
      p95_latency: q(t, 0.95),
      p99_latency: q(t, 0.99),
      cache_hits: s.ch,
      cache_hit_rate: pct(s.ch, s.n),
      rescued_requests: s.rsc,
      retry_rescued: [...t.counters.rr.values()].reduce((x, y) => x + y, 0),
      fallback_rescued: s.fb,
      unique_users: estimateUsers(t.users),
      first_seen: t.first === undefined ? null : iso(t.first),
      last_seen: t.last === undefined ? null : iso(t.last),
    },
    time_of_generation_min: iso(c.from),
    time_of_generation_max: iso(c.to - 1),
    source: c.source,
  };
}

/** The reference API's cache summary: hits, their average latency, and how much faster they were. */
export function cacheSummaryBody(c: Collected) {
  const s = c.total.sums;
  const hitAvg = per(s.clat, s.ch);
  const missAvg = per(s.lat - s.clat, s.n - s.ch);
  return {
    object: 'analytics-summary' as const,
    summary: {
      hits: s.ch,
      avg_latency: hitAvg,
      total_requests: s.n,
      // How much faster a hit answered than a miss, in percent.
      cache_speedup: s.ch > 0 && missAvg > 0 ? round(100 * (1 - hitAvg / missAvg)) : 0,
    },
  };
}
