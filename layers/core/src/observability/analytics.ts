/**
 * Answers analytics from rollups: a time range is covered by whole days, hours at the day edges and
 * minutes at the hour edges (decompose), each one Query per workspace and dimension, and the items
 * are summed into cells per data point and group. Filters finer than one dimension are answered
 * from the logs themselves (bounded), with the same figures, so the two paths agree.
 */
import type { Clock } from '../ports/clock.ts';
import { addEvent, dimensionValue, emptyAggregate, mergeInto, type Aggregate, type Dimension } from './aggregate.ts';
import { rollupPlan, type LogFilters } from './filters.ts';
import type { LogStore } from './log-store.ts';
import type { ReadBudget, RollupStore } from './rollups.ts';
import { ceilTo, DAY_MS, decompose, floorTo, GRANULARITY_MS, MINUTE_MS, MINUTE_ROLLUP_DAYS, type Granularity } from './time.ts';

const QUERY_CONCURRENCY = 16;

export const GROUP_BY = ['ai_service', 'model', 'status_code', 'api_key', 'config', 'workspace', 'provider', 'prompt'] as const;
export type GroupBy = (typeof GROUP_BY)[number];

/** The rollup dimension of a grouping; workspaces are the scope itself. */
export const groupDimension = (g: GroupBy | undefined): Dimension | undefined => (g === undefined || g === 'workspace' ? undefined : g);

export interface AnalyticsScope {
  organisationId: string;
  /** Workspace ids to include (`-`: requests refused before their key was known). */
  workspaces: readonly string[];
}

export interface CollectOptions {
  groupBy?: GroupBy | undefined;
  /** Data points of this granularity; none: one cell per group. */
  point?: Granularity | undefined;
  /** Rollup items read at most; past it `collect` rejects with ReadBudgetSpent. */
  maxRollupItems?: number | undefined;
  /** Only these rollup figures beside the request count are wanted (the others are zero; `[]`: the count only); undefined: all. */
  figures?: readonly string[] | undefined;
}

export interface Cell {
  point: number | undefined;
  group: string | undefined;
  agg: Aggregate;
}

export interface Collected {
  source: 'rollups' | 'logs';
  /** The range read, rounded to whole minutes (hours where minute rollups are gone): [from, to). */
  from: number;
  to: number;
  cells: Map<string, Cell>;
  total: Aggregate;
}

export interface AnalyticsOptions {
  rollups: RollupStore;
  logs: LogStore;
  clock: Clock;
  logRetentionDays: number;
  /** Logs read at most when the filters need the logs (default 20000). */
  maxRawLogs?: number;
}

/**
 * Where to stop reading a range [.., to): a range that reaches the current minute ends at `now`, and
 * nothing is logged later, so it is read to the end of the bucket that holds `now` at the coarsest
 * granularity the answer allows (one item: today's day, or this hour for hourly points) instead of
 * that bucket's hours and minutes up to now. The answer still names `to`.
 */
function openEnd(to: number, now: number, coarsest: Granularity): number {
  if (to <= now || coarsest === 'm') return to;
  return ceilTo(to, GRANULARITY_MS[coarsest]);
}

export class Analytics {
  readonly #o: AnalyticsOptions;
  constructor(opts: AnalyticsOptions) {
    this.#o = opts;
  }

  async collect(scope: AnalyticsScope, f: LogFilters, opts: CollectOptions = {}): Promise<Collected> {
    const from = floorTo(f.from, MINUTE_MS);
    const to = floorTo(f.to, MINUTE_MS) + MINUTE_MS;
    const plan = rollupPlan(f, groupDimension(opts.groupBy));
    const cells = new Map<string, Cell>();
    const total = emptyAggregate();
    const cellFor = (point: number | undefined, group: string | undefined): Aggregate => {
      const id = `${point ?? ''}|${group ?? ''}`;
      let c = cells.get(id);
      if (!c) {
        c = { point, group, agg: emptyAggregate() };
        cells.set(id, c);
      }
      return c.agg;
    };
    const pointOf = (ms: number) => (opts.point ? floorTo(ms, GRANULARITY_MS[opts.point]) : undefined);

    if (plan) {
      const now = this.#o.clock.now();
      const readTo = openEnd(to, now, opts.point ?? 'd');
      const segments = decompose(from, readTo, opts.point ?? 'd', now - MINUTE_ROLLUP_DAYS * DAY_MS);
      const reads = scope.workspaces.flatMap((ws) => segments.map((s) => ({ ws, s })));
      const budget: ReadBudget | undefined = opts.maxRollupItems === undefined ? undefined : { left: opts.maxRollupItems };
      // A bounded number of Queries at once, however many workspaces an organisation has.
      const results: Awaited<ReturnType<RollupStore['query']>>[] = [];
      for (let i = 0; i < reads.length; i += QUERY_CONCURRENCY) {
        results.push(
          ...(await Promise.all(
            reads
              .slice(i, i + QUERY_CONCURRENCY)
              .map(({ ws, s }) => this.#o.rollups.query(ws, plan.dim, s, { budget, figures: opts.figures, only: plan.values })),
          )),
        );
      }
      for (const rows of results) {
        for (const r of rows) {
          if (plan.values && !plan.values.has(r.value)) continue;
          const group = opts.groupBy === 'workspace' ? r.ws : opts.groupBy ? r.value : undefined;
          mergeInto(cellFor(pointOf(r.bucket), group), r.agg);
          mergeInto(total, r.agg);
        }
      }
      const last = segments.length ? segments[segments.length - 1]!.end : to;
      const widened = { from: segments.length ? Math.min(from, segments[0]!.start) : from, to: readTo > to ? to : Math.max(to, last) };
      return { source: 'rollups', ...widened, cells, total };
    }

    const logFloor = this.#o.clock.now() - this.#o.logRetentionDays * DAY_MS;
    const raw: LogFilters = { ...f, from: Math.max(from, logFloor), to: to - 1 };
    const dim = groupDimension(opts.groupBy);
    let left = this.#o.maxRawLogs ?? 20_000;
    for (const ws of scope.workspaces) {
      for await (const e of this.#o.logs.all(ws, raw, { maxExamined: left })) {
        left--;
        const group = opts.groupBy === 'workspace' ? ws : dim ? dimensionValue(e, dim) : undefined;
        addEvent(cellFor(pointOf(e.started_ms), group), e);
        addEvent(total, e);
      }
      if (left <= 0) break;
    }
    return { source: 'logs', from, to, cells, total };
  }
}
