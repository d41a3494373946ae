/**
 * Analytics answers: groups (docs/design/spec.md#admin-resources), graphs and summaries of the reference API, all from
 * rollups unless the filters need the logs. Ranges are clipped to METRICS_RETENTION_DISPLAY days
 * (LOG_RETENTION_DISPLAY for the logs groups): an older start is moved up, not refused.
 */
import { ValidationError } from '../../http/errors.ts';
import { GROUP_BY, type GroupBy } from '../../observability/analytics.ts';
import {
  cacheSummaryBody,
  columnFigures,
  graphBody,
  GROUP_COLUMNS,
  groupRows,
  summaryBody,
  type Graph,
  type GroupColumn,
} from '../../observability/analytics-views.ts';
import { parseFilters, type LogFilters } from '../../observability/filters.ts';
import { observability } from '../../observability/install.ts';
import { DAY_MS, HOUR_MS, MINUTE_ROLLUP_DAYS, type Granularity } from '../../observability/time.ts';
import { page, parsePaging } from '../pagination.ts';
import { feedbackGraph } from '../feedback/reads.ts';
import type { AdminContext } from '../route.ts';
import { ownDataOnly, readScope, requestedWorkspace } from '../logs/scope.ts';

/** Without `time_of_generation_min`, analytics cover the last seven days. */
export const DEFAULT_SPAN_MS = 7 * DAY_MS;

const isGroupBy = (v: string): v is GroupBy => (GROUP_BY as readonly string[]).includes(v);
const isColumn = (v: string): v is GroupColumn => (GROUP_COLUMNS as readonly string[]).includes(v);

export function parseGroupBy(v: string | undefined): GroupBy {
  if (v && isGroupBy(v)) return v;
  throw ValidationError.field('groupBy', `unknown groupBy "${v ?? ''}"; one of ${GROUP_BY.join(', ')}`);
}

export function parseColumns(raw: string | null): GroupColumn[] {
  if (raw === null || raw.trim() === '') return [];
  const names = raw
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  const unknown = names.filter((c) => !isColumn(c));
  if (unknown.length)
    throw ValidationError.field(
      'columns',
      `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((c) => `"${c}"`).join(', ')}; one of ${GROUP_COLUMNS.join(', ')}`,
    );
  return [...new Set(names)] as GroupColumn[];
}

async function filtersOf(ctx: AdminContext, retentionDays: number): Promise<LogFilters> {
  const f = parseFilters(Object.fromEntries(ctx.query), { now: ctx.deps.clock.now(), retentionDays, defaultSpanMs: DEFAULT_SPAN_MS });
  return ownDataOnly(ctx, f);
}

/** `GET /v1/{analytics,logs}/groups/{groupBy}`. */
export async function groupsAnswer(ctx: AdminContext, opts: { retentionDays: number }) {
  const groupBy = parseGroupBy(ctx.params.groupBy);
  const columns = parseColumns(ctx.query.get('columns'));
  const paging = parsePaging(ctx.query);
  const filters = await filtersOf(ctx, opts.retentionDays);
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  const collected = await observability(ctx.deps).analytics.collect(scope, filters, { groupBy, figures: columnFigures(columns) });
  return page(groupRows(collected, groupBy, columns), paging);
}

/** The data point size: asked for, or from the range (minutes up to 2 hours, hours up to 7 days, else days). */
export function pointGranularity(raw: string | null, from: number, to: number, now: number): Granularity {
  const span = to - from;
  const minutesKept = from >= now - MINUTE_ROLLUP_DAYS * DAY_MS;
  if (raw === null || raw === '') return span <= 2 * HOUR_MS && minutesKept ? 'm' : span <= 7 * DAY_MS ? 'h' : 'd';
  const g = ({ minute: 'm', hour: 'h', day: 'd' } as const)[raw as 'minute' | 'hour' | 'day'];
  if (!g) throw ValidationError.field('granularity', 'must be one of minute, hour, day');
  if (g === 'm' && (span > DAY_MS || !minutesKept))
    throw ValidationError.field('granularity', `minute needs a range of at most a day within the last ${MINUTE_ROLLUP_DAYS} days`);
  if (g === 'h' && span > 31 * DAY_MS) throw ValidationError.field('granularity', 'hour needs a range of at most 31 days');
  return g;
}

export async function graphAnswer(ctx: AdminContext, graph: Graph) {
  const filters = await filtersOf(ctx, ctx.deps.config.metricsRetentionDays);
  const gran = pointGranularity(ctx.query.get('granularity'), filters.from, filters.to, ctx.deps.clock.now());
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  const collected = await observability(ctx.deps).analytics.collect(scope, filters, { point: gran });
  return graphBody(graph, collected, gran);
}

/** The feedback graph, from feedback items rather than request rollups (admin/feedback/reads.ts). */
export async function feedbackGraphAnswer(ctx: AdminContext) {
  const filters = await filtersOf(ctx, ctx.deps.config.metricsRetentionDays);
  const gran = pointGranularity(ctx.query.get('granularity'), filters.from, filters.to, ctx.deps.clock.now());
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  return feedbackGraph(ctx.deps, scope, filters, gran);
}

export async function summaryAnswer(ctx: AdminContext, kind: 'all' | 'cache') {
  const filters = await filtersOf(ctx, ctx.deps.config.metricsRetentionDays);
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  const collected = await observability(ctx.deps).analytics.collect(scope, filters);
  return kind === 'cache' ? cacheSummaryBody(collected) : summaryBody(collected);
}
