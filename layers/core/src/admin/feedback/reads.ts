/**
 * Reading feedback: `GET /v1/feedback` (filters and the list convention), the feedback shown on
 * the log it refers to, and the feedback graph of analytics. Feedback is sparse next to requests,
 * so these read a workspace's feedback items rather than rollups.
 */
import * as z from 'zod';
import type { LogFilters } from '../../observability/filters.ts';
import { GRANULARITY_MS, iso, type Granularity } from '../../observability/time.ts';
import type { AnalyticsScope } from '../../observability/analytics.ts';
import { FeedbackRepository, type FeedbackRecord } from '../../store/feedback.ts';
import type { CoreDeps } from '../../deps.ts';
import { page, parsePaging } from '../pagination.ts';
import { readScope, requestedWorkspace, UNATTRIBUTED } from '../logs/scope.ts';
import { parseWith, type AdminContext } from '../route.ts';

export const feedbackView = (r: FeedbackRecord) => ({ object: 'feedback' as const, ...r });

const isoDateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' });
const score = z.coerce.number({ error: 'must be a number' }).min(-10, 'must be >= -10').max(10, 'must be <= 10');

const listQuerySchema = z.object({
  trace_id: z.string().min(1).optional(),
  value_min: score.optional(),
  value_max: score.optional(),
  start_time: isoDateTime.optional(),
  end_time: isoDateTime.optional(),
});

/** Every feedback item of the scope's workspaces. */
async function inScope(deps: CoreDeps, scope: AnalyticsScope): Promise<FeedbackRecord[]> {
  const repo = new FeedbackRepository(deps.repos.table);
  const all = await Promise.all(scope.workspaces.filter((w) => w !== UNATTRIBUTED).map((w) => repo.listByWorkspace(w)));
  return all.flat();
}

const newestFirst = (a: FeedbackRecord, b: FeedbackRecord) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1);

/** `GET /v1/feedback`: the caller's workspace, or for organisation keys the named one or all. */
export async function listFeedback(ctx: AdminContext) {
  const paging = parsePaging(ctx.query);
  const q = parseWith(listQuerySchema, {
    trace_id: ctx.query.get('trace_id') ?? undefined,
    value_min: ctx.query.get('value_min') ?? undefined,
    value_max: ctx.query.get('value_max') ?? undefined,
    start_time: ctx.query.get('start_time') ?? undefined,
    end_time: ctx.query.get('end_time') ?? undefined,
  });
  const scope = await readScope(ctx, requestedWorkspace(ctx), { organisationWide: true });
  const from = q.start_time ? Date.parse(q.start_time) : -Infinity;
  const to = q.end_time ? Date.parse(q.end_time) : Infinity;
  const items = (await inScope(ctx.deps, scope)).filter((r) => {
    const at = Date.parse(r.created_at);
    return (
      (q.trace_id === undefined || r.trace_id === q.trace_id) &&
      (q.value_min === undefined || r.value >= q.value_min) &&
      (q.value_max === undefined || r.value <= q.value_max) &&
      at >= from &&
      at < to
    );
  });
  return page(items.sort(newestFirst).map(feedbackView), paging);
}

/** The feedback on one request's trace, oldest first, for its log. */
export async function feedbackOnTrace(deps: CoreDeps, workspaceId: string | null, traceId: string) {
  if (!workspaceId) return [];
  return (await new FeedbackRepository(deps.repos.table).byTrace(workspaceId, traceId)).map(feedbackView);
}

const round = (n: number) => Math.round(n * 1000) / 1000;

function stats(items: readonly FeedbackRecord[]) {
  const weight = items.reduce((s, r) => s + r.weight, 0);
  return {
    total: items.length,
    avg: items.length ? round(items.reduce((s, r) => s + r.value, 0) / items.length) : 0,
    weighted_avg: weight ? round(items.reduce((s, r) => s + r.value * r.weight, 0) / weight) : 0,
  };
}

/** `GET /v1/analytics/graphs/feedback`: count and average score per point of the range. */
export async function feedbackGraph(deps: CoreDeps, scope: AnalyticsScope, f: LogFilters, gran: Granularity) {
  const items = (await inScope(deps, scope)).filter((r) => {
    const at = Date.parse(r.created_at);
    return at >= f.from && at < f.to;
  });
  const unit = GRANULARITY_MS[gran];
  const byPoint = new Map<number, FeedbackRecord[]>();
  for (const r of items) {
    const t = Math.floor(Date.parse(r.created_at) / unit) * unit;
    byPoint.set(t, [...(byPoint.get(t) ?? []), r]);
  }
  const data_points = [];
  for (let t = Math.floor(f.from / unit) * unit; t < f.to; t += unit) data_points.push({ timestamp: iso(t), ...stats(byPoint.get(t) ?? []) });
  return { object: 'analytics-graph' as const, summary: stats(items), data_points };
}
